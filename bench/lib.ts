// Shared pieces of `npm run bench`. Each bench/<name>.bench.ts exports a default function that
// receives a BenchContext and returns one or more results; bench/run.ts measures the bare Fastify
// baseline in the same run and prints the table (or JSON with --json).
import fs from 'node:fs';
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
  /** Requests per second of the bare Fastify routes measured in this run. */
  baseline: { get_rps: number; post_rps: number };
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

export async function load(options: LoadOptions): Promise<{ rps: number; p99_ms: number; errors: number; non2xx: number }> {
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
  return { rps: result.requests.average, p99_ms: result.latency.p99, errors: result.errors, non2xx: result.non2xx };
}
