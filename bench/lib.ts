// Shared pieces of `npm run bench`. Each bench/<name>.bench.ts exports a default function that
// receives a BenchContext and returns one or more results; bench/run.ts measures the bare Fastify
// baseline in the same run and prints the table (or JSON with --json).
import { randomBytes } from 'node:crypto';
import fs from 'node:fs';
import http from 'node:http';
import os from 'node:os';
import path from 'node:path';
import pino from 'pino';
import { loadConfig } from '../src/config.ts';
import { createRuntime, loggerOptionsFor, type Runtime } from '../src/runtime.ts';
import { jsonLines } from '../src/logger.ts';
import { authenticateKey, createMerchant } from '../src/modules/merchants/merchants.service.ts';
import { systemClock } from '../src/shared/time.ts';
import type { BankConnector, BankRegistry } from '../src/modules/banks/bank-connector.ts';
import type { CreateRequestBody } from '../src/modules/requests/requests.schemas.ts';
import { createRequest, findRequestById } from '../src/modules/requests/requests.service.ts';
import { subscriptionOptionsOf } from '../src/modules/requests/requests.present.ts';
import { createSubscription } from '../src/modules/subscriptions/subscriptions.service.ts';
import { transact } from '../src/store/store.ts';
import type { Db } from '../src/store/db.ts';
import { NO_ORIGIN, type Ctx, type Deps } from '../src/modules/context.ts';
import { withCpu } from './process.ts';

export type BenchResult = {
  name: string;
  rps?: number;
  p99_ms?: number;
  ratio?: number;
  per_second?: number;
  /** The figure's budget (docs/performance.md, "Targets"), and whether this run met it. */
  budget?: string;
  met?: boolean;
  note?: string;
};

/** Calls of a load that failed: errors (no answer) and answers other than 2xx. A figure with any meets no budget. */
export function failedCalls(load: { errors: number; non2xx: number }): number {
  return load.errors + load.non2xx;
}

/**
 * A figure with the baseline's rate just before and just after it, and their mean; and the CPU
 * time the baseline's server spent a call in those two loads (mean), to set beside the service's.
 */
export type Bracketed<T> = { result: T; baselineRps: number; around: [number, number]; baselineCpuUs: number };

export type BenchContext = {
  durationSec: number;
  connections: number;
  /** Requests per second of the baselines measured at the start of this run (bench/servers/bare.ts). */
  baseline: { get_rps: number; post_rps: number; stack_limit_get_rps: number; bank_call_rps: number };
  /**
   * Runs each of `measures` in turn between fresh loads of a baseline, one just before and one just
   * after (shared by neighbours), and returns with each result the mean of its two: a ratio to a
   * baseline measured minutes earlier carried the shared machine's drift between the two
   * (docs/performance.md, Baselines).
   */
  bracketed<T>(
    baseline: 'stack_limit_get' | 'bank_call_baseline',
    measures: Array<() => Promise<T>>,
  ): Promise<Array<Bracketed<T>>>;
};

export type BenchService = {
  runtime: Runtime;
  url: string;
  testKey: string;
  liveKey: string;
  bankAccountId: string;
  close(): Promise<void>;
};

/** The whole service on a temporary SQLite database, listening on a free loopback port. */
export async function startService(env: Record<string, string> = {}): Promise<BenchService> {
  const dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'tono-bench-'));
  // The per-key rate limit stays on, set above what one key sends here, so its cost is measured.
  // BENCH_LOG_LEVEL=warn measures the service without its access lines.
  const config = loadConfig({
    PORT: '0',
    LOG_LEVEL: process.env.BENCH_LOG_LEVEL ?? 'info',
    DEMO_MERCHANT: 'false',
    DATA_DIR: dataDir,
    RATE_LIMIT_PER_SECOND: '1000000',
    ...env,
  });
  // Logged as `npm start` logs (its level, its redaction, its writes), to a file rather than
  // stdout, which carries the bench's own readings.
  const runtime = await createRuntime(config, {
    log: pino(loggerOptionsFor(config), jsonLines(path.join(dataDir, 'service.log'))),
  });
  const address = await runtime.app.listen({ port: config.port, host: '127.0.0.1' });
  const url = address.replace('localhost', '127.0.0.1');
  runtime.deps.config.publicBaseUrl = url;
  const merchant = await createMerchant(runtime.deps.db, systemClock, {
    name: 'Bench Merchant',
    email: 'bench@example.com',
    password: 'bench-password',
    bankAccount: '12-3456-7890138-00',
  });
  return {
    runtime,
    url,
    testKey: merchant.test_key,
    liveKey: merchant.live_key,
    bankAccountId: merchant.bank_account_id!,
    async close() {
      await runtime.close();
      fs.rmSync(dataDir, { recursive: true, force: true });
    },
  };
}

export type LoadOptions = {
  url: string;
  method?: 'GET' | 'POST';
  headers?: Record<string, string>;
  body?: string;
  /** A fresh body per request (distinct idempotency keys, say). */
  bodyFor?: () => string;
  /** Fresh headers per request (an Idempotency-Key, say); with bodyFor. */
  headersFor?: () => Record<string, string>;
  connections: number;
  durationSec: number;
};

export async function load(options: LoadOptions): Promise<{
  rps: number;
  p50_ms: number;
  p99_ms: number;
  errors: number;
  non2xx: number;
  requests: number;
  /** How many answers had each status other than 2xx, e.g. "409 ×3". */
  otherStatuses: string;
}> {
  // Imported here rather than at the top: the service's own process (bench/servers/service.ts)
  // imports this file for startService, and must not carry the load generator.
  const { default: autocannon } = await import('autocannon');
  const result = await autocannon({
    url: options.url,
    method: options.method ?? 'GET',
    headers: options.headers,
    body: options.body,
    connections: options.connections,
    duration: options.durationSec,
    requests: options.bodyFor
      ? [
          {
            setupRequest: (request: any) => ({
              ...request,
              body: options.bodyFor!(),
              ...(options.headersFor && { headers: { ...request.headers, ...options.headersFor() } }),
            }),
          },
        ]
      : undefined,
  });
  return {
    rps: result.requests.average,
    p50_ms: result.latency.p50,
    p99_ms: result.latency.p99,
    errors: result.errors,
    non2xx: result.non2xx,
    requests: result.requests.total,
    otherStatuses: Object.entries(result.statusCodeStats ?? {})
      .filter(([status]) => !status.startsWith('2'))
      .map(([status, stat]) => `${status} ×${(stat as { count: number }).count}`)
      .join(', '),
  };
}

/**
 * Seconds of a load run, and not measured, before the same load is measured: every figure is of a
 * server in its steady state, its code compiled and its heap grown (docs/performance.md, Warm
 * servers). The service's first seconds after a start are reported on their own (`create_request
 * (first 10 s after start)`).
 */
export const WARM_UP_SEC = 5;

/** Runs `options`' load for WARM_UP_SEC seconds and forgets it; call it outside `withCpu`. */
export async function warmUp(options: LoadOptions): Promise<void> {
  await load({ ...options, durationSec: WARM_UP_SEC });
}

/** The load measured after its warm-up (where no CPU time is read around it). */
export async function warmLoad(options: LoadOptions): ReturnType<typeof load> {
  await warmUp(options);
  return load(options);
}

/** The load measured after its warm-up, with the CPU time a call of the processes `pids` (withCpu). */
export async function warmLoadWithCpu(pids: number[], options: LoadOptions) {
  await warmUp(options);
  return withCpu(pids, () => load(options));
}

/**
 * Authorises a recurring consent on a running service (limits high enough for any bench) and
 * returns its token as a merchant gets it: in the recurring_payment.authorised webhook, received
 * here on a loopback port.
 */
export async function recurringToken(
  url: string,
  testKey: string,
  bankAccountId: string,
  email = 'bench-payer@example.com',
): Promise<{ token: string; consentId: string }> {
  const headers = { authorization: `Bearer ${testKey}`, 'content-type': 'application/json' };
  const post = async (pathname: string, body: unknown) => {
    const response = await fetch(`${url}${pathname}`, { method: 'POST', headers, body: JSON.stringify(body) });
    const json = (await response.json()) as any;
    if (!response.ok) throw new Error(`${pathname}: ${response.status} ${JSON.stringify(json)}`);
    return json;
  };
  let received: (token: string) => void;
  const arrived = new Promise<string>((resolve) => (received = resolve));
  const receiver = http.createServer((request, response) => {
    let body = '';
    request
      .setEncoding('utf8')
      .on('data', (chunk) => (body += chunk))
      .on('end', () => {
        const event = JSON.parse(body) as { type: string; data: { token?: string } };
        if (event.type === 'recurring_payment.authorised' && event.data.token) received(event.data.token);
        response.end();
      });
  });
  await new Promise<void>((resolve) => receiver.listen(0, '127.0.0.1', resolve));
  try {
    const hook = await post('/v1/webhooks', {
      url: `http://127.0.0.1:${(receiver.address() as { port: number }).port}/hooks`,
      events: ['recurring_payment.authorised'],
    });
    const created = await post('/v1/requests', {
      bank_account_id: bankAccountId,
      message: 'Bench recurring',
      recurring_options: { period: 'daily', max_per_period: '100000000.00 NZD' },
      cust_info: { email },
    });
    const paid = await post(`/v1/test-helpers/requests/${created.request.id}/pay`, {});
    const token = await arrived;
    await fetch(`${url}/v1/webhooks/${hook.webhook.id}`, {
      method: 'DELETE',
      headers: { authorization: headers.authorization },
    });
    return { token, consentId: paid.recurring_consent.id };
  } finally {
    receiver.closeAllConnections();
    receiver.close();
  }
}

/**
 * Subscribes a webhook endpoint at `receiverUrl` (bench/servers/receiver.ts, in its own process) to
 * every event of the key's merchant and mode: the service as merchants run it, each event fanned out
 * to a delivery that is sent while the load runs.
 */
export async function liveWebhookEndpoint(url: string, testKey: string, receiverUrl: string): Promise<void> {
  const response = await fetch(`${url}/v1/webhooks`, {
    method: 'POST',
    headers: { authorization: `Bearer ${testKey}`, 'content-type': 'application/json' },
    body: JSON.stringify({ url: `${receiverUrl}/hook` }),
  });
  if (!response.ok) throw new Error(`/v1/webhooks: ${response.status} ${await response.text()}`);
}

/** Subscriptions share consents in groups, so setting up the scheduler benches does not dominate them. */
const PER_CONSENT = Number(process.env.BENCH_PER_CONSENT ?? 100);
const CREATE_BATCH = 1000;

async function authorisedConsent(
  bank: BankConnector,
  bankUrl: string,
  credentials: { clientId: string; clientSecret: string },
  redirectUri: string,
  now: number,
) {
  const consent = await bank.createEnduringConsent({
    fromAt: now,
    toAt: null,
    maxPerPaymentCents: 1500,
    period: 'Monthly',
    maxPerPeriodCents: 1500 * PER_CONSENT * 2,
    maxCountPerPeriod: null,
    totalCount: null,
    totalAmountCents: null,
    creditor: { name: 'Bench', accountNumber: '38-9000-0000001-00' },
    remittance: { particulars: 'BENCH', code: 'TONO', reference: '' },
    idempotencyKey: randomBytes(12).toString('hex'),
    at: now,
  });
  if (!consent.ok) throw new Error(`consent: ${consent.message}`);
  const state = randomBytes(12).toString('hex');
  const reply = await fetch(`${bankUrl}/test/authorise`, {
    method: 'POST',
    // The sandbox bank's test hooks take the service's own client credentials.
    headers: {
      'content-type': 'application/json',
      authorization: `Basic ${Buffer.from(`${credentials.clientId}:${credentials.clientSecret}`).toString('base64')}`,
    },
    body: JSON.stringify({ consent_id: consent.consentId, redirect_uri: redirectUri, state }),
  }).then((r) => r.json() as Promise<any>);
  const code = new URL(reply.Data.RedirectUri).searchParams.get('code')!;
  const token = await bank.exchangeCode({ code, redirectUri });
  if (!token.ok) throw new Error(`token: ${token.message}`);
  return { consentId: token.consentId, accessToken: token.accessToken };
}

/**
 * `count` monthly test-mode subscriptions of the merchant whose test key is given, each with its
 * first charge due now, authorised at the sandbox bank the runtime's registry points at. Returns
 * the seconds spent creating the requests and subscriptions (after the consents).
 */
export async function setUpDueSubscriptions(
  deps: Deps,
  options: { count: number; testKey: string; bankAccountId: string; redirectUri: string },
): Promise<number> {
  const { count: total, redirectUri } = options;
  const banks = (deps as typeof deps & { banks: BankRegistry }).banks;
  const bankId = banks.list('test')[0].id;
  const bank = banks.connectorFor(bankId, 'test')!;
  const now = deps.clock.now();

  const consents: Array<{ consentId: string; accessToken: string }> = [];
  for (let i = 0; i < Math.ceil(total / PER_CONSENT); i += 50) {
    const count = Math.min(50, Math.ceil(total / PER_CONSENT) - i);
    consents.push(
      ...(await Promise.all(
        Array.from({ length: count }, () =>
          authorisedConsent(
            bank,
            (banks as BankRegistry & { sandboxUrl(): string }).sandboxUrl(),
            banks.sandboxCredentials,
            redirectUri,
            now,
          ),
        ),
      )),
    );
  }

  // One request per subscription (a subscription owns its request) and the subscription, both
  // straight through the domain functions the API and checkout use, without browser flows.
  const { merchant } = (await authenticateKey(deps.db, options.testKey))!;
  const ctx: Ctx = {
    deps,
    db: deps.db,
    merchant,
    mode: 'test',
    clock: deps.clock,
    log: deps.log,
    actor: { kind: 'operator', name: 'bench' },
    origin: NO_ORIGIN,
  };
  const body = {
    bank_account_id: options.bankAccountId,
    message: 'Bench plan',
    subscription_options: { amount: '15.00 NZD', period: 'monthly' },
    cust_info: { email: 'bench@example.com' },
  } as CreateRequestBody;
  const setupStarted = performance.now();
  let created = 0;
  while (created < total) {
    const batch = Math.min(CREATE_BATCH, total - created);
    const requests = await Promise.all(Array.from({ length: batch }, () => createRequest(ctx, body)));
    const rows = await Promise.all(requests.map((r) => findRequestById(deps.db, r.body.request.id)));
    await transact(deps.db, async (trx) => {
      for (const [i, request] of rows.entries()) {
        const consent = consents[Math.floor((created + i) / PER_CONSENT)];
        await createSubscription(trx, deps, {
          request: request!,
          options: subscriptionOptionsOf(request!)!,
          email: 'bench@example.com',
          customerId: null,
          payerDetails: { email: 'bench@example.com' },
          bankId,
          bankConsentId: consent.consentId,
          bankAccessToken: consent.accessToken,
          authorisedAt: deps.clock.now(),
        });
      }
    });
    created += batch;
  }
  return (performance.now() - setupStarted) / 1000;
}

export async function countSuccessfulCharges(db: Db): Promise<number> {
  return Number(
    (
      await db
        .selectFrom('subscription_charges')
        .select((eb) => eb.fn.countAll().as('n'))
        .where('status', '=', 'successful')
        .executeTakeFirstOrThrow()
    ).n,
  );
}

/** Receipts for charges: queued, and sent (written to DATA_DIR/mail without SMTP). */
export async function countReceipts(db: Db): Promise<{ total: number; sent: number }> {
  const rows = await db
    .selectFrom('mail_messages')
    .select(['status', (eb) => eb.fn.countAll().as('n')])
    .where('template', '=', 'charge_receipt')
    .groupBy('status')
    .execute();
  const of = (status: string) => Number(rows.find((row) => row.status === status)?.n ?? 0);
  return { total: of('queued') + of('sent') + of('failed'), sent: of('sent') };
}

/** Messages of any template not sent yet. */
export async function countQueuedMail(db: Db): Promise<number> {
  return Number(
    (
      await db
        .selectFrom('mail_messages')
        .select((eb) => eb.fn.countAll().as('n'))
        .where('status', '=', 'queued')
        .executeTakeFirstOrThrow()
    ).n,
  );
}

/** Whether each of `expected` subscriptions was charged exactly once: one charge row, one payment, all successful. */
export async function countCharges(db: Db, expected: number): Promise<{ exactlyOnce: boolean; summary: string }> {
  const charged = await countSuccessfulCharges(db);
  const charges = Number(
    (
      await db
        .selectFrom('subscription_charges')
        .select((eb) => eb.fn.countAll().as('n'))
        .executeTakeFirstOrThrow()
    ).n,
  );
  const paid = Number(
    (
      await db
        .selectFrom('payments')
        .select((eb) => eb.fn.count('subscription_id').distinct().as('n'))
        .where('status', '=', 'successful')
        .executeTakeFirstOrThrow()
    ).n,
  );
  const payments = Number(
    (
      await db
        .selectFrom('payments')
        .select((eb) => eb.fn.countAll().as('n'))
        .where('subscription_id', 'is not', null)
        .executeTakeFirstOrThrow()
    ).n,
  );
  return {
    exactlyOnce: charged === expected && charges === expected && paid === expected && payments === expected,
    summary: `${charged} charged, ${charges} charge rows, ${payments} payments, ${paid} subscriptions paid`,
  };
}

/**
 * Executions of 1.00 NZD at `url` (a service's base), one consent's token after another, each with
 * an idempotency key of its own.
 */
export function executionLoad(
  url: string,
  headers: Record<string, string>,
  tokens: readonly string[],
  ctx: Pick<BenchContext, 'connections' | 'durationSec'>,
): LoadOptions {
  let counter = 0;
  const run = `${process.pid}-${Date.now()}`;
  return {
    url: `${url}/v1/payments`,
    method: 'POST',
    headers,
    bodyFor: () =>
      JSON.stringify({
        token: tokens[counter % tokens.length],
        amount: '1.00 NZD',
        idempotency_key: `bench-${run}-${counter++}`,
      }),
    connections: ctx.connections,
    durationSec: ctx.durationSec,
  };
}
