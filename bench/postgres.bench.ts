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
  liveWebhookEndpoint,
  load,
  recurringToken,
  setUpDueSubscriptions,
  executionLoad,
  warmLoad,
  warmUp,
  warmLoadWithCpu,
  type BenchContext,
  type BenchResult,
  type LoadOptions,
  failedCalls,
} from './lib.ts';
import {
  cpuSecondsOf,
  sampleRss,
  serviceNodeFlags,
  spawnSandboxBank,
  postgresPids,
  spawnServer,
  withCpu,
  type SpawnedServer,
} from './process.ts';

const DATABASE_URL = process.env.BENCH_DATABASE_URL ?? 'postgres://postgres@127.0.0.1:5432/test';
/** Fewer than the SQLite scheduler bench's 100,000: every charge here costs PostgreSQL commits too. */
const SUBSCRIPTIONS = Number(process.env.BENCH_SUBSCRIPTIONS ?? 20_000);
const SECRET_KEY = randomBytes(32).toString('base64');
const NAMES = [
  'stack_limit_get_postgres',
  'stack_limit_create_postgres',
  'bank_call_baseline_postgres',
  'create_floor_postgres',
  'execute_floor_postgres',
  'create_floor_postgres (no endpoint)',
  'execute_floor_postgres (no endpoint)',
  'create_request_postgres',
  'create_request_postgres_x2',
  'get_request_postgres',
  'get_request_postgres_x2',
  'execute_payment_postgres',
  'execute_payment_postgres_x2',
  'subscription_charges_postgres_x2',
];

type Schema = { name: string; url: string; db: Db; drop(): Promise<void> };

/** A new schema, and a URL whose connections use it. */
export async function freshSchema(): Promise<Schema> {
  const name = `bench_${randomBytes(6).toString('hex')}`;
  const admin = new pg.Client({ connectionString: DATABASE_URL });
  await admin.connect();
  await admin.query(`create schema "${name}"`);
  const url = `${DATABASE_URL}${DATABASE_URL.includes('?') ? '&' : '?'}options=${encodeURIComponent(`-c search_path=${name}`)}`;
  const db = openDb({ engine: 'postgres', url, poolSize: 4 });
  return {
    name,
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
export async function analyze(db: Db): Promise<void> {
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
export async function startService(
  schema: Schema,
  processes: number,
  env: Record<string, string> = {},
): Promise<Service> {
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

export async function merchantOn(db: Db) {
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

/** Requests per second of the PostgreSQL baselines (bench/servers/bare-postgres.ts), measured in this run. */
type PgBaselines = { get: number; create: number; bankCall: number };

/**
 * The PostgreSQL baselines on a schema of their own, each warmed then measured as the service is:
 * two point reads and the reply; one committed insert and the reply; one bank call and one
 * committed insert (the bank stub in its own process, as the sandbox bank is for the service).
 */
async function pgBaselines(ctx: BenchContext): Promise<{ rps: PgBaselines; results: BenchResult[] }> {
  const bankStub = await spawnServer('bench/servers/bank-stub.ts', {}, undefined, serviceNodeFlags());
  const schema = await freshSchema();
  const bare = await spawnServer(
    'bench/servers/bare-postgres.ts',
    { DATABASE_URL: schema.url, BANK_URL: (bankStub.info as { url: string }).url },
    undefined,
    serviceNodeFlags(),
  );
  try {
    const info = bare.info as { url: string; stackLimitPath: string; stackLimitKey: string };
    let counter = 0;
    const get = await warmLoad({
      url: `${info.url}${info.stackLimitPath}`,
      headers: { authorization: `Bearer ${info.stackLimitKey}` },
      connections: ctx.connections,
      durationSec: ctx.durationSec,
    });
    const createOptions: LoadOptions = {
      url: `${info.url}/create`,
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: '{}',
      connections: 50,
      durationSec: ctx.durationSec,
    };
    const create = await warmLoadWithCpu([bare.pid, ...postgresPids()], createOptions);
    const createCpu = cpuShares(create.cpu_us_per_call, 1, 0);
    const bankCall = await warmLoad({
      url: `${info.url}/bank-call`,
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      bodyFor: () => JSON.stringify({ idempotency_key: `baseline-${counter++}`, amount_cents: 100 }),
      connections: ctx.connections,
      durationSec: ctx.durationSec,
    });
    const figure = (name: string, load: typeof get, note: string): BenchResult => ({
      name,
      rps: load.rps,
      p99_ms: load.p99_ms,
      ratio: 1,
      note: `baseline: ${note}, pg pool of 10; errors ${failedCalls(load)}`,
    });
    return {
      rps: { get: get.rps, create: create.rps, bankCall: bankCall.rps },
      results: [
        figure('stack_limit_get_postgres', get, 'two primary-key reads, the 1.4 kB reply'),
        figure(
          'stack_limit_create_postgres',
          create,
          `one committed insert, the same reply (no QR code); CPU a call: server ${createCpu.service} µs, PostgreSQL ${createCpu.postgres} µs`,
        ),
        figure('bank_call_baseline_postgres', bankCall, 'one keep-alive HTTP call, one committed insert'),
      ],
    };
  } finally {
    await bare.stop();
    await schema.drop();
    await bankStub.stop();
  }
}

/** Requests per second of the floors (bench/servers/floor-postgres.ts) with an endpoint, measured in this run. */
type PgFloors = { create: number; execute: number };

/**
 * The floors: a create and an execution doing only what the service cannot leave out, written as
 * the baselines are (bench/servers/floor-postgres.ts), each divided by the baseline the service's
 * figure is. Once with their events delivered to the same receiver, as the service's are, and once
 * for a merchant with no endpoint; the service's figures are also given as a share of the first.
 */
async function pgFloors(
  ctx: BenchContext,
  base: PgBaselines,
  receiverUrl: string,
): Promise<{ rps: PgFloors; results: BenchResult[] }> {
  const bankStub = await spawnServer('bench/servers/bank-stub.ts', {}, undefined, serviceNodeFlags());
  try {
    const delivering = await floorLoads(ctx, base, bankStub, receiverUrl);
    const withoutEndpoint = await floorLoads(ctx, base, bankStub, null);
    return {
      rps: delivering.rps,
      results: [...delivering.results, ...withoutEndpoint.results],
    };
  } finally {
    await bankStub.stop();
  }
}

/** The two floors on a schema of their own, delivering to `receiverUrl` or (null) to no endpoint. */
async function floorLoads(
  ctx: BenchContext,
  base: PgBaselines,
  bankStub: SpawnedServer,
  receiverUrl: string | null,
): Promise<{ rps: PgFloors; results: BenchResult[] }> {
  const schema = await freshSchema();
  const floor = await spawnServer(
    'bench/servers/floor-postgres.ts',
    {
      DATABASE_URL: schema.url,
      BANK_URL: (bankStub.info as { url: string }).url,
      FLOOR_CONSENTS: String(EXECUTE_CONSENTS),
      ...(receiverUrl ? { RECEIVER_URL: receiverUrl } : {}),
    },
    undefined,
    serviceNodeFlags(),
  ).catch(async (error) => {
    await schema.drop();
    throw error;
  });
  try {
    const info = floor.info as { url: string; key: string; tokens: string[] };
    const headers = { authorization: `Bearer ${info.key}`, 'content-type': 'application/json' };
    // PostgreSQL's backends are listed once the warm-up has opened the pool's connections.
    const measured = async (options: LoadOptions) => {
      await warmUp(options);
      const result = await withCpu([floor.pid, bankStub.pid, ...postgresPids()], () => load(options));
      return { ...result, pending: await undelivered(info.url) };
    };
    const create = await measured({
      url: `${info.url}/v1/requests`,
      method: 'POST',
      headers,
      body: JSON.stringify({ amount: '12.50 NZD', message: 'Bench coffee', reference: 'BENCH-1' }),
      connections: 50,
      durationSec: ctx.durationSec,
    });
    const execute = await measured(executionLoad(info.url, headers, info.tokens, ctx));
    const suffix = receiverUrl ? '' : ' (no endpoint)';
    const events = receiverUrl
      ? (pending: number) => `its events delivered (${pending} undelivered 10 s after)`
      : () => 'no endpoint, so no delivery';
    const figure = (name: string, load: typeof create, ratio: number, baseline: string, bank: boolean): BenchResult => {
      const cpu = cpuShares(load.cpu_us_per_call, 1, 1);
      return {
        name: `${name}${suffix}`,
        rps: load.rps,
        p99_ms: load.p99_ms,
        ratio,
        note: `× ${baseline}; only what the service cannot leave out, ${events(load.pending)}; CPU a call: server ${cpu.service} µs,${bank ? ` bank stub ${cpu.bank} µs,` : ''} PostgreSQL ${cpu.postgres} µs; errors ${failedCalls(load)}`,
      };
    };
    return {
      rps: { create: create.rps, execute: execute.rps },
      results: [
        figure('create_floor_postgres', create, create.rps / base.create, 'stack_limit_create_postgres', false),
        figure('execute_floor_postgres', execute, execute.rps / base.bankCall, 'bank_call_baseline_postgres', true),
      ],
    };
  } finally {
    await floor.stop();
    await schema.drop();
  }
}

/** The floor's deliveries not yet made, once they stop falling or 10 s have passed. */
async function undelivered(floorUrl: string): Promise<number> {
  const pending = async () => ((await (await fetch(`${floorUrl}/pending`)).json()) as { pending: number }).pending;
  const deadline = performance.now() + 10_000;
  let left = await pending();
  while (left > 0 && performance.now() < deadline) {
    await new Promise((resolve) => setTimeout(resolve, 100));
    left = await pending();
  }
  return left;
}

/** The service's rate as a share of its floor's, for its note. */
function ofFloor(rps: number, floorRps: number): string {
  return Number.isFinite(floorRps) ? `; ${(rps / floorRps).toFixed(2)} × its floor` : '';
}

/** create_request and get_request on `processes` processes. */
async function requests(
  ctx: BenchContext,
  processes: number,
  base: PgBaselines,
  floors: PgFloors,
  receiverUrl: string,
): Promise<BenchResult[]> {
  const suffix = processes > 1 ? `_x${processes}` : '';
  const schema = await freshSchema();
  const service = await startService(schema, processes).catch(async (error) => {
    await schema.drop();
    throw error;
  });
  try {
    const { testKey, bankAccountId } = await merchantOn(schema.db);
    await liveWebhookEndpoint(service.url, testKey, receiverUrl);
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
    const create = await warmLoadWithCpu([...pids, ...postgresPids()], createOptions);
    const peakMb = rss.stop();
    const createCpu = cpuShares(create.cpu_us_per_call, pids.length, 0);
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
        ratio: create.rps / base.create,
        budget: '≥ 0.5 × stack_limit_create_postgres',
        met: create.rps / base.create >= 0.5 && failedCalls(create) === 0,
        note: `× stack_limit_create_postgres${ofFloor(create.rps, floors.create)}; CPU a call: service ${createCpu.service} µs, PostgreSQL ${createCpu.postgres} µs; errors ${failedCalls(create)}; ${peakMb.toFixed(0)} MB peak resident${each}`,
      },
      {
        name: `get_request_postgres${suffix}`,
        rps: get.rps,
        p99_ms: get.p99_ms,
        ratio: get.rps / base.get,
        budget: '≥ 0.8 × stack_limit_get_postgres',
        met: get.rps / base.get >= 0.8 && failedCalls(get) === 0,
        note: `× stack_limit_get_postgres; errors ${failedCalls(get)}`,
      },
    ];
  } finally {
    await service.stop();
    await schema.drop();
  }
}

/** Consents the PostgreSQL executions spread over: a merchant's many payers, not one hot row. */
const EXECUTE_CONSENTS = Number(process.env.BENCH_CONSENTS ?? 20);

/**
 * What PostgreSQL's backends of this schema's database wait on while `during` runs, sampled from
 * pg_stat_activity every 20 ms: `wait_event_type:wait_event` (or `cpu` for an active backend
 * waiting on nothing) with how many backend-samples each took. Where the time of a call goes.
 */
export async function waitsDuring<T>(
  during: () => Promise<T>,
): Promise<{ result: T; waits: string; commits: number; flushes: number }> {
  const admin = new pg.Client({ connectionString: DATABASE_URL });
  await admin.connect();
  // Transactions, read-only ones (each read outside a transaction) included; and WAL flushes, which
  // commits that wait share.
  const counters = async () => {
    const { rows } = await admin.query(
      `select (select xact_commit from pg_stat_database where datname = current_database()) as commits,
              (select wal_sync from pg_stat_wal) as flushes`,
    );
    return { commits: Number(rows[0].commits), flushes: Number(rows[0].flushes) };
  };
  const before = await counters();
  const counts = new Map<string, number>();
  let sampling = true;
  const sampler = (async () => {
    while (sampling) {
      const { rows } = await admin.query(
        `select coalesce(wait_event_type || ':' || wait_event, 'cpu') as what from pg_stat_activity
         where state = 'active' and pid <> pg_backend_pid() and backend_type = 'client backend'`,
      );
      for (const { what } of rows) counts.set(what, (counts.get(what) ?? 0) + 1);
      await new Promise((resolve) => setTimeout(resolve, 20));
    }
  })();
  try {
    const result = await during();
    sampling = false;
    await sampler;
    const after = await counters();
    return {
      result,
      commits: after.commits - before.commits,
      flushes: after.flushes - before.flushes,
      waits: [...counts]
        .sort((a, b) => b[1] - a[1])
        .slice(0, 6)
        .map(([what, n]) => `${what} ${n}`)
        .join(', '),
    };
  } finally {
    sampling = false;
    await sampler;
    await admin.end();
  }
}

/** Microseconds a call for the service's processes, then `bank` processes, then the rest (PostgreSQL). */
export function cpuShares(perPid: number[], service: number, bank: number) {
  const sum = (values: number[]) => values.reduce((total, value) => total + value, 0);
  return {
    service: sum(perPid.slice(0, service)),
    bank: sum(perPid.slice(service, service + bank)),
    postgres: sum(perPid.slice(service + bank)),
  };
}

/** execute_payment on PostgreSQL: EXECUTE_CONSENTS consents in turn, the sandbox bank in its own process, on `processes` processes. */
async function executePayment(
  ctx: BenchContext,
  processes: number,
  base: PgBaselines,
  floors: PgFloors,
  receiverUrl: string,
): Promise<BenchResult> {
  const [servicePort, bankPort] = [await freePort(), await freePort()];
  const bank = await spawnSandboxBank(servicePort, bankPort);
  const schema = await freshSchema();
  let service: Service | null = null;
  try {
    service = await startService(schema, processes, bank.env);
    const { testKey, bankAccountId } = await merchantOn(schema.db);
    const tokens: string[] = [];
    for (let i = 0; i < EXECUTE_CONSENTS; i += 1)
      tokens.push((await recurringToken(service.url, testKey, bankAccountId, `bench-payer-${i}@example.com`)).token);
    await liveWebhookEndpoint(service.url, testKey, receiverUrl);
    await analyze(schema.db);
    const executeOptions = executionLoad(
      service.url,
      { authorization: `Bearer ${testKey}`, 'content-type': 'application/json' },
      tokens,
      ctx,
    );
    await warmUp(executeOptions);
    const pids = [...service.processes(), bank.pid, ...postgresPids()];
    const { result, waits, commits, flushes } = await waitsDuring(() => withCpu(pids, () => load(executeOptions)));
    const cpu = cpuShares(result.cpu_us_per_call, service.processes().length, 1);
    return {
      name: `execute_payment_postgres${processes > 1 ? `_x${processes}` : ''}`,
      rps: result.rps,
      p99_ms: result.p99_ms,
      ratio: result.rps / base.bankCall,
      budget: '≥ 0.3 × bank_call_baseline_postgres, p99 ≤ 100 ms',
      met: result.rps / base.bankCall >= 0.3 && result.p99_ms <= 100 && failedCalls(result) === 0,
      note: `× bank_call_baseline_postgres${ofFloor(result.rps, floors.execute)}; ${tokens.length} consents; PostgreSQL backends waiting (samples): ${waits}; ${(commits / result.requests).toFixed(1)} transactions and ${(flushes / result.requests).toFixed(2)} WAL flushes a call; CPU a call: service ${cpu.service} µs, bank ${cpu.bank} µs, PostgreSQL ${cpu.postgres} µs; errors ${failedCalls(result)}${result.otherStatuses ? ` (${result.otherStatuses})` : ''}`,
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
      budget: 'each charged exactly once',
      met: counted.exactlyOnce,
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
  let base: PgBaselines = { get: Number.NaN, create: Number.NaN, bankCall: Number.NaN };
  if (groups.includes('create') || groups.includes('execute'))
    await attempt(
      ['stack_limit_get_postgres', 'stack_limit_create_postgres', 'bank_call_baseline_postgres'],
      async () => {
        const measured = await pgBaselines(ctx);
        base = measured.rps;
        return measured.results;
      },
    );
  // Every figure but the baselines runs as merchants run the service: a webhook endpoint live at a
  // receiver in its own process, so every event is delivered while the load runs.
  const receiver = await spawnServer('bench/servers/receiver.ts');
  const receiverUrl = (receiver.info as { url: string }).url;
  let floors: PgFloors = { create: Number.NaN, execute: Number.NaN };
  try {
    if (groups.includes('create') || groups.includes('execute'))
      await attempt(
        NAMES.filter((name) => name.includes('_floor_')),
        async () => {
          const measured = await pgFloors(ctx, base, receiverUrl);
          floors = measured.rps;
          return measured.results;
        },
      );
    if (groups.includes('create')) {
      await attempt(['create_request_postgres', 'get_request_postgres'], () =>
        requests(ctx, 1, base, floors, receiverUrl),
      );
      await attempt(['create_request_postgres_x2', 'get_request_postgres_x2'], () =>
        requests(ctx, 2, base, floors, receiverUrl),
      );
    }
    if (groups.includes('execute')) {
      await attempt(['execute_payment_postgres'], async () => [
        await executePayment(ctx, 1, base, floors, receiverUrl),
      ]);
      await attempt(['execute_payment_postgres_x2'], async () => [
        await executePayment(ctx, 2, base, floors, receiverUrl),
      ]);
    }
  } finally {
    await receiver.stop();
  }
  if (groups.includes('subscriptions'))
    await attempt(['subscription_charges_postgres_x2'], async () => [await subscriptionCharges()]);
  return results;
}
