// Helpers for the consents tests: the whole service on a real port (so the mounted sandbox bank is
// reached over HTTP, as in production), a merchant, a recurring request authorised through the
// pay test helper, and the token read where a merchant reads it: the authorisation event.
import { Writable } from 'node:stream';
import type { TestContext } from 'node:test';
import pino from 'pino';
import {
  apiClient,
  createTestMerchant,
  freshDb,
  testConfig,
  type ApiClient,
  type TestDb,
  type TestMerchant,
} from '../helpers.ts';
import { loggerRedactPaths } from '../../src/app.ts';
import { createRuntime, type Runtime } from '../../src/runtime.ts';
import { SERVICE_BASIC } from './banks.ts';

export type ConsentHarness = {
  runtime: Runtime;
  baseUrl: string;
  merchant: TestMerchant;
  api: ApiClient;
  /** Every log line the service wrote, as text. */
  logs: string[];
  /** Its database, for processes to share (storeOfTestDb). */
  testDb: TestDb;
};

export async function consentHarness(t: TestContext): Promise<ConsentHarness> {
  const testDb = await freshDb({ migrated: true });
  const logs: string[] = [];
  const sink = new Writable({
    write(chunk, _encoding, done) {
      logs.push(String(chunk));
      done();
    },
  });
  const log = pino({ level: 'trace', redact: { paths: loggerRedactPaths, censor: '[redacted]' } }, sink);
  const runtime = await createRuntime(testConfig({ workers: false }), { db: testDb.db, log });
  t.after(async () => {
    await runtime.close();
    await testDb.drop();
  });
  const address = await runtime.app.listen({ port: 0, host: '127.0.0.1' });
  const baseUrl = address.replace('localhost', '127.0.0.1');
  runtime.deps.config.publicBaseUrl = baseUrl;
  const merchant = await createTestMerchant(runtime);
  return { runtime, baseUrl, merchant, api: apiClient(runtime, merchant.testKey), logs, testDb };
}

export type RecurringOptions = {
  period: 'daily' | 'weekly' | 'fortnightly' | 'monthly' | 'yearly';
  max_per_period: string;
  max_per_payment?: string;
  total_count?: number;
  total_amount?: string;
  end_date?: string;
};

export async function createRecurringRequest(
  h: ConsentHarness,
  options: RecurringOptions,
  extra: Record<string, unknown> = {},
) {
  const created = await h.api.post('/v1/requests', {
    bank_account_id: h.merchant.bankAccountId,
    message: 'Weekly veg box',
    recurring_options: options,
    cust_info: { email: 'Payer@Example.com', first_name: 'Aroha' },
    merchant_identifier: 'sub-42',
    ...extra,
  });
  if (created.status !== 201) throw new Error(`create request: ${created.status} ${created.text}`);
  return created.body.request as { id: string; status: string };
}

/** Authorises a recurring request at the sandbox bank; returns the consent and the token from the event. */
export async function authorise(h: ConsentHarness, options: RecurringOptions, extra: Record<string, unknown> = {}) {
  const request = await createRecurringRequest(h, options, extra);
  const paid = await h.api.post(`/v1/test-helpers/requests/${request.id}/pay`, {});
  if (paid.status !== 200 || !paid.body.recurring_consent) throw new Error(`pay: ${paid.status} ${paid.text}`);
  const consent = paid.body.recurring_consent;
  return { request, consent, token: await tokenOf(h, consent.id), payResponse: paid.text };
}

/** The consent's token, as the merchant's endpoint received it: the authorisation event's sealed secret, opened. */
export async function tokenOf(h: ConsentHarness, consentId: string): Promise<string> {
  const event = await h.runtime.deps.db
    .selectFrom('events')
    .select('secret_sealed')
    .where('type', '=', 'recurring_payment.authorised')
    .where('object_id', '=', consentId)
    .executeTakeFirstOrThrow();
  return h.runtime.deps.secrets.open(event.secret_sealed!);
}

export function execute(
  h: ConsentHarness,
  token: string,
  amount: string,
  key: string,
  extra: Record<string, unknown> = {},
) {
  return h.api.post('/v1/payments', { token, amount, idempotency_key: key, ...extra });
}

export async function advanceTo(h: ConsentHarness, to: string) {
  const moved = await h.api.post('/v1/test-helpers/clock/advance', { to });
  if (moved.status !== 200) throw new Error(`advance: ${moved.status} ${moved.text}`);
}

/** The sandbox payer's balance in cents. */
export async function sandboxBalance(h: ConsentHarness): Promise<number> {
  const reply = await fetch(`${h.baseUrl}/sandbox-bank/test/payers/sandbox`, {
    headers: { authorization: SERVICE_BASIC },
  }).then((r) => r.json() as Promise<any>);
  const [whole, fraction] = String(reply.Data.Balance.Amount).split('.');
  return Number(whole) * 100 + Number((fraction ?? '0').padEnd(2, '0'));
}
