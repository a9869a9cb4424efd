// Shared pieces of `npm run bench`. Each bench/<name>.bench.ts exports a default function that
// receives a BenchContext and returns one or more results; bench/run.ts measures the bare Fastify
// baseline in the same run and prints the table (or JSON with --json).
import fs from 'node:fs';
import http from 'node:http';
import os from 'node:os';
import path from 'node:path';
import autocannon from 'autocannon';
import pino from 'pino';
import { loadConfig } from '../src/config.ts';
import { createRuntime, type Runtime } from '../src/runtime.ts';
import { createMerchant } from '../src/modules/merchants/merchants.service.ts';
import { systemClock } from '../src/shared/time.ts';

export type BenchResult = { name: string; rps?: number; p99_ms?: number; ratio?: number; per_second?: number; note?: string };

export type BenchContext = {
  durationSec: number;
  connections: number;
  /** Requests per second of the baselines measured in this run (bench/servers/bare.ts). */
  baseline: { get_rps: number; post_rps: number; stack_limit_get_rps: number; bank_call_rps: number };
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
  const config = loadConfig({ PORT: '0', LOG_LEVEL: 'warn', DEMO_MERCHANT: 'false', DATA_DIR: dataDir, RATE_LIMIT_PER_SECOND: '1000000', ...env });
  const runtime = await createRuntime(config, { log: pino({ level: 'warn' }) });
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
  connections: number;
  durationSec: number;
};

export async function load(options: LoadOptions): Promise<{ rps: number; p50_ms: number; p99_ms: number; errors: number; non2xx: number }> {
  const result = await autocannon({
    url: options.url,
    method: options.method ?? 'GET',
    headers: options.headers,
    body: options.body,
    connections: options.connections,
    duration: options.durationSec,
    requests: options.bodyFor
      ? [{ setupRequest: (request: any) => ({ ...request, body: options.bodyFor!() }) }]
      : undefined,
  });
  return { rps: result.requests.average, p50_ms: result.latency.p50, p99_ms: result.latency.p99, errors: result.errors, non2xx: result.non2xx };
}

/**
 * Authorises a recurring consent on a running service (limits high enough for any bench) and
 * returns its token as a merchant gets it: in the recurring_payment.authorised webhook, received
 * here on a loopback port.
 */
export async function recurringToken(url: string, testKey: string, bankAccountId: string, email = 'bench-payer@example.com'): Promise<{ token: string; consentId: string }> {
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
    request.setEncoding('utf8').on('data', (chunk) => (body += chunk)).on('end', () => {
      const event = JSON.parse(body) as { type: string; data: { token?: string } };
      if (event.type === 'recurring_payment.authorised' && event.data.token) received(event.data.token);
      response.end();
    });
  });
  await new Promise<void>((resolve) => receiver.listen(0, '127.0.0.1', resolve));
  try {
    const hook = await post('/v1/webhooks', { url: `http://127.0.0.1:${(receiver.address() as { port: number }).port}/hooks`, events: ['recurring_payment.authorised'] });
    const created = await post('/v1/requests', {
      bank_account_id: bankAccountId, message: 'Bench recurring', recurring_options: { period: 'daily', max_per_period: '100000000.00 NZD' }, cust_info: { email },
    });
    const paid = await post(`/v1/test-helpers/requests/${created.request.id}/pay`, {});
    const token = await arrived;
    await fetch(`${url}/v1/webhooks/${hook.webhook.id}`, { method: 'DELETE', headers: { authorization: headers.authorization } });
    return { token, consentId: paid.recurring_consent.id };
  } finally {
    receiver.closeAllConnections();
    receiver.close();
  }
}
