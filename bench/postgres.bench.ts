// The service on PostgreSQL, started as `npm start` starts it (node src/main.ts with its heap
// settings), with one process and with two (WEB_CONCURRENCY=2, node:cluster). Each figure runs on a
// schema of its own, made for it in BENCH_DATABASE_URL's database and dropped afterwards; without a
// reachable PostgreSQL every figure is reported as skipped.
import { randomBytes } from 'node:crypto';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import pg from 'pg';
import { sql } from 'kysely';
import pino from 'pino';
import { loadConfig } from '../src/config.ts';
import { createRuntime } from '../src/runtime.ts';
import { createMerchant } from '../src/modules/merchants/merchants.service.ts';
import { systemClock } from '../src/shared/time.ts';
import type { Db } from '../src/store/db.ts';
import { openDb } from '../src/store/store.ts';
import { childrenOf, freePort } from '../test/process.ts';
import {
  countCharges,
  countQueuedMail,
  countSuccessfulCharges,
  recurringToken,
  setUpDueSubscriptions,
  warmLoad,
  type BenchContext,
  type BenchResult,
  type LoadOptions,
} from './lib.ts';
import {
  cpuSecondsOf,
  sampleRss,
  serviceNodeFlags,
  spawnSandboxBank,
  spawnServer,
  type SpawnedServer,
} from './process.ts';

const DATABASE_URL = process.env.BENCH_DATABASE_URL ?? 'postgres://postgres@127.0.0.1:5432/test';
/** Fewer than the SQLite scheduler bench's 100,000: every charge here costs PostgreSQL commits too. */
const SUBSCRIPTIONS = Number(process.env.BENCH_SUBSCRIPTIONS ?? 20_000);
const SECRET_KEY = randomBytes(32).toString('base64');
const NAMES = [
  'create_request_postgres',
  'create_request_postgres_x2',
  'get_request_postgres',
  'get_request_postgres_x2',
  'execute_payment_postgres',
  'execute_payment_postgres_x2',
  'subscription_charges_postgres_x2',
];

type Schema = { url: string; db: Db; drop(): Promise<void> };

/** A new schema, and a URL whose connections use it. */
async function freshSchema(): Promise<Schema> {
  const name = `bench_${randomBytes(6).toString('hex')}`;
  const admin = new pg.Client({ connectionString: DATABASE_URL });
  await admin.connect();
  await admin.query(`create schema "${name}"`);
  const url = `${DATABASE_URL}${DATABASE_URL.includes('?') ? '&' : '?'}options=${encodeURIComponent(`-c search_path=${name}`)}`;
  const db = openDb({ engine: 'postgres', url, poolSize: 4 });
  return {
    url,
    db,
    async drop() {
      await db.destroy();
      await admin.query(`drop schema "${name}" cascade`);
      await admin.end();
    },
  };
}

/**
 * Statistics for the planner, as autovacuum gathers them within a minute on a database in use: a
 * table filled moments before has none, and PostgreSQL may then read a request by the wrong index
 * (every request of the merchant, instead of the one).
 */
async function analyze(db: Db): Promise<void> {
  const { rows } = await sql<{
    name: string;
  }>`select tablename as name from pg_tables where schemaname = current_schema()`.execute(db);
  for (const { name } of rows) await sql`analyze ${sql.id(name)}`.execute(db);
}

function withoutPassword(url: string): string {
  try {
    const parsed = new URL(url);
    if (parsed.password) parsed.password = '***';
    return parsed.toString();
  } catch {
    return 'BENCH_DATABASE_URL';
  }
}

async function unreachable(): Promise<string | null> {
  const client = new pg.Client({ connectionString: DATABASE_URL, connectionTimeoutMillis: 3000 });
  try {
    await client.connect();
    await client.query('select 1');
    return null;
  } catch (error) {
    return (error as Error).message || String(error);
  } finally {
    await client.end().catch(() => {});
  }
}

type Service = SpawnedServer & { url: string; processes: () => number[] };

/** `node src/main.ts` with `npm start`'s heap settings, until it prints that it is running. */
async function startService(schema: Schema, processes: number, env: Record<string, string> = {}): Promise<Service> {
  const port = env.PORT ?? String(await freePort());
  // A data folder of its own (the mail the service writes goes there), not the checkout's ./data.
  const dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'tono-bench-pg-'));
  const server = await spawnServer(
    'src/main.ts',
    {
      DATABASE_URL: schema.url,
      SECRET_KEY,
      PORT: port,
      HOST: '127.0.0.1',
      WEB_CONCURRENCY: String(processes),
      DATA_DIR: dataDir,
      // The per-key rate limit stays on, set above what one key sends here, so its cost is measured.
      DEMO_MERCHANT: 'false',
      LOG_LEVEL: 'warn',
      RATE_LIMIT_PER_SECOND: '1000000',
      ...env,
    },
    (line) => (line.startsWith('Tono is running at') ? { line } : null),
    serviceNodeFlags(),
  );
  // With one process the primary is the service; with several it serves nothing.
  return {
    ...server,
    url: `http://127.0.0.1:${port}`,
    processes: () => (processes > 1 ? childrenOf(server.pid) : [server.pid]),
    async stop() {
      await server.stop();
      fs.rmSync(dataDir, { recursive: true, force: true });
    },
  };
}

async function merchantOn(db: Db) {
  const merchant = await createMerchant(db, systemClock, {
    name: 'Bench Merchant',
    email: 'bench@example.com',
    password: 'bench-password',
    bankAccount: '12-3456-7890138-00',
  });
  return { testKey: merchant.test_key, bankAccountId: merchant.bank_account_id! };
}

function peakRss(pids: number[]) {
  const samplers = pids.map((pid) => sampleRss(pid));
  return { stop: () => Math.max(...samplers.map((s) => s.stop())) };
}

/** create_request and get_request on `processes` processes. */
async function requests(ctx: BenchContext, processes: number): Promise<BenchResult[]> {
  const suffix = processes > 1 ? `_x${processes}` : '';
  const schema = await freshSchema();
  const service = await startService(schema, processes).catch(async (error) => {
    await schema.drop();
    throw error;
  });
  try {
    const { testKey, bankAccountId } = await merchantOn(schema.db);
    const headers = { authorization: `Bearer ${testKey}`, 'content-type': 'application/json' };
    const body = JSON.stringify({
      bank_account_id: bankAccountId,
      amount: '12.50 NZD',
      message: 'Bench coffee',
      reference: 'BENCH-1',
    });
    const pids = service.processes();
    const rss = peakRss(pids);
    const createOptions: LoadOptions = {
      url: `${service.url}/v1/requests`,
      method: 'POST',
      headers,
      body,
      connections: 50,
      durationSec: ctx.durationSec,
    };
    const create = await warmLoad(createOptions);
    const peakMb = rss.stop();
    const created = await fetch(`${service.url}/v1/requests`, { method: 'POST', headers, body }).then(
      (r) => r.json() as Promise<any>,
    );
    await analyze(schema.db);
    const getOptions: LoadOptions = {
      url: `${service.url}/v1/requests/${created.request.id}`,
      headers,
      connections: ctx.connections,
      durationSec: ctx.durationSec,
    };
    const get = await warmLoad(getOptions);
    const each = processes > 1 ? ' each' : '';
    return [
      {
        name: `create_request_postgres${suffix}`,
        rps: create.rps,
        p99_ms: create.p99_ms,
        ratio: create.rps / ctx.baseline.post_rps,
        note: `× echo POST; errors ${create.errors + create.non2xx}; ${peakMb.toFixed(0)} MB peak resident${each}`,
      },
      {
        name: `get_request_postgres${suffix}`,
        rps: get.rps,
        p99_ms: get.p99_ms,
        ratio: get.rps / ctx.baseline.stack_limit_get_rps,
        note: `× stack_limit_get (SQLite); errors ${get.errors + get.non2xx}`,
      },
    ];
  } finally {
    await service.stop();
    await schema.drop();
  }
}

/** execute_payment (as bench/execute-payment.bench.ts: one consent, the sandbox bank in its own process) on `processes` processes. */
async function executePayment(ctx: BenchContext, processes: number): Promise<BenchResult> {
  const [servicePort, bankPort] = [await freePort(), await freePort()];
  const bank = await spawnSandboxBank(servicePort, bankPort);
  const schema = await freshSchema();
  let service: Service | null = null;
  try {
    service = await startService(schema, processes, bank.env);
    const { testKey, bankAccountId } = await merchantOn(schema.db);
    const { token } = await recurringToken(service.url, testKey, bankAccountId);
    await analyze(schema.db);
    let counter = 0;
    const run = `${process.pid}-${Date.now()}`;
    const executeOptions: LoadOptions = {
      url: `${service.url}/v1/payments`,
      method: 'POST',
      headers: { authorization: `Bearer ${testKey}`, 'content-type': 'application/json' },
      bodyFor: () => JSON.stringify({ token, amount: '1.00 NZD', idempotency_key: `bench-${run}-${counter++}` }),
      connections: ctx.connections,
      durationSec: ctx.durationSec,
    };
    const result = await warmLoad(executeOptions);
    return {
      name: `execute_payment_postgres${processes > 1 ? `_x${processes}` : ''}`,
      rps: result.rps,
      p99_ms: result.p99_ms,
      ratio: result.rps / ctx.baseline.bank_call_rps,
      note: `× bank_call_baseline (SQLite); errors ${result.errors + result.non2xx}`,
    };
  } finally {
    await service?.stop();
    await schema.drop();
    await bank.stop();
  }
}

/**
 * The scheduler with two processes running workers (`npm start` with WEB_CONCURRENCY=2 and its
 * job worker as configured, 32 jobs at once per process): SUBSCRIPTIONS monthly subscriptions due
 * at once, the sandbox bank in its own process. The subscriptions are made in this process
 * through the domain functions (as bench/subscriptions.bench.ts does); their charge jobs are held
 * back while the service starts and sends the set-up notices, and let go at once after, so the
 * timing is the charging.
 */
async function subscriptionCharges(): Promise<BenchResult> {
  const [servicePort, bankPort] = [await freePort(), await freePort()];
  const dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'tono-bench-setup-'));
  const bank = await spawnSandboxBank(servicePort, bankPort);
  const schema = await freshSchema();
  const env = bank.env;
  let service: Service | null = null;
  try {
    const config = loadConfig({
      ...env,
      DATABASE_URL: schema.url,
      SECRET_KEY,
      DATA_DIR: dataDir,
      WORKERS: 'false',
      DEMO_MERCHANT: 'false',
      LOG_LEVEL: 'warn',
    });
    const setup = await createRuntime(config, { log: pino({ level: 'warn' }) });
    let setupSeconds: number;
    try {
      const { testKey, bankAccountId } = await merchantOn(setup.deps.db);
      setupSeconds = await setUpDueSubscriptions(setup.deps, {
        count: SUBSCRIPTIONS,
        testKey,
        bankAccountId,
        redirectUri: `http://127.0.0.1:${servicePort}/pay/return`,
      });
    } finally {
      await setup.close();
    }

    const HOLD = 1e12;
    const jobs = () => schema.db.updateTable('jobs').where('kind', '=', 'subscription.charge');
    await jobs()
      .set((eb) => ({ run_at: eb('run_at', '+', HOLD) }))
      .execute();
    await analyze(schema.db);
    service = await startService(schema, 2, env);
    // The subscriptions' set-up notices belong to the set-up (bench/subscriptions.bench.ts): the
    // service sends them before the clock starts.
    while ((await countQueuedMail(schema.db)) > 0) await new Promise((resolve) => setTimeout(resolve, 250));
    const pids = service.processes();
    const cpuBefore = pids.reduce((sum, pid) => sum + cpuSecondsOf(pid), 0);
    const started = performance.now();
    await jobs()
      .set((eb) => ({ run_at: eb('run_at', '-', HOLD) }))
      .execute();
    let charged = 0;
    while (charged < SUBSCRIPTIONS && performance.now() - started < 15 * 60_000) {
      await new Promise((resolve) => setTimeout(resolve, 250));
      charged = await countSuccessfulCharges(schema.db);
    }
    const seconds = (performance.now() - started) / 1000;
    const cpuSeconds = pids.reduce((sum, pid) => sum + cpuSecondsOf(pid), 0) - cpuBefore;
    const counted = await countCharges(schema.db, SUBSCRIPTIONS);
    return {
      name: 'subscription_charges_postgres_x2',
      per_second: charged / seconds,
      note: counted.exactlyOnce
        ? `${charged} charged exactly once in ${seconds.toFixed(1)} s, ${(charged / cpuSeconds).toFixed(0)} per CPU-second of the two service processes (set up in ${setupSeconds.toFixed(0)} s)`
        : `NOT exactly once: ${counted.summary}`,
    };
  } finally {
    await service?.stop();
    await schema.drop();
    await bank.stop();
    fs.rmSync(dataDir, { recursive: true, force: true });
  }
}

export default async function benchPostgres(ctx: BenchContext): Promise<BenchResult[]> {
  const problem = await unreachable();
  if (problem)
    return NAMES.map((name) => ({
      name,
      note: `skipped: no PostgreSQL at ${withoutPassword(DATABASE_URL)} (BENCH_DATABASE_URL): ${problem}`,
    }));
  // BENCH_POSTGRES=create,execute,subscriptions runs some of the three groups.
  const groups = (process.env.BENCH_POSTGRES ?? 'create,execute,subscriptions').split(',');
  const results: BenchResult[] = [];
  const attempt = async (names: string[], run: () => Promise<BenchResult[]>) => {
    try {
      results.push(...(await run()));
    } catch (error) {
      results.push(...names.map((name) => ({ name, note: `failed: ${(error as Error).message}` })));
    }
  };
  if (groups.includes('create')) {
    await attempt(['create_request_postgres', 'get_request_postgres'], () => requests(ctx, 1));
    await attempt(['create_request_postgres_x2', 'get_request_postgres_x2'], () => requests(ctx, 2));
  }
  if (groups.includes('execute')) {
    await attempt(['execute_payment_postgres'], async () => [await executePayment(ctx, 1)]);
    await attempt(['execute_payment_postgres_x2'], async () => [await executePayment(ctx, 2)]);
  }
  if (groups.includes('subscriptions'))
    await attempt(['subscription_charges_postgres_x2'], async () => [await subscriptionCharges()]);
  return results;
}
