// `npm run bench -- --scale`: the figures on a database holding a year of a busy service's rows
// (bench/scale-fill.ts: a million requests, payments, events and webhook deliveries over 1,000
// merchants), each beside the same figure on an empty database in the same run, on SQLite (the
// service as `npm start` runs it on its DATA_DIR) and on PostgreSQL (a schema of its own, as
// bench/postgres.bench.ts). Both services run at once, each with its own sandbox bank; every figure
// is measured on the empty one and then on the full one, so the two share the hour's speed.
// BENCH_SCALE_FACTOR=0.01 fills a hundredth of every count; BENCH_SCALE_ENGINES=sqlite picks one.
import { randomBytes } from 'node:crypto';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { DatabaseSync } from 'node:sqlite';
import pg from 'pg';
import pino from 'pino';
import { loadConfig } from '../src/config.ts';
import { createRuntime } from '../src/runtime.ts';
import { createMerchant } from '../src/modules/merchants/merchants.service.ts';
import { systemClock } from '../src/shared/time.ts';
import { freePort } from '../test/process.ts';
import {
  executionLoad,
  type load,
  recurringToken,
  setUpDueSubscriptions,
  warmLoadWithCpu,
  type BenchContext,
  type BenchResult,
  type LoadOptions,
  failedCalls,
} from './lib.ts';
import { serviceNodeFlags, spawnSandboxBank, spawnServer, untilIdle, type SpawnedServer } from './process.ts';
import { fill, type FillEngine } from './scale-fill.ts';

const FACTOR = Number(process.env.BENCH_SCALE_FACTOR ?? 1);
const DATABASE_URL = process.env.BENCH_DATABASE_URL ?? 'postgres://postgres@127.0.0.1:5432/test';
/** Due at once in each database for the scheduler's figure. */
const SUBSCRIPTIONS = Number(process.env.BENCH_SCALE_SUBSCRIPTIONS ?? 10_000);
const CONSENTS = Number(process.env.BENCH_CONSENTS ?? 20);
const SECRET_KEY = randomBytes(32).toString('base64');
const BUDGET = 0.8;
/** Where the run is, on stderr: a full-size fill takes minutes. */
const progress = (what: string) => process.stderr.write(`scale: ${what}\n`);
const HOLD = 1e12;

type Engine = FillEngine;
type Database = {
  engine: Engine;
  label: 'empty' | 'scale';
  /** What the service's process needs to open it. */
  env: Record<string, string>;
  /** Runs a statement in it (the bench's own reads and writes). */
  query<T = Record<string, unknown>>(sql: string): Promise<T[]>;
  close(): Promise<void>;
};

async function sqliteDatabase(label: Database['label']): Promise<Database> {
  const dataDir = fs.mkdtempSync(path.join(os.tmpdir(), `tono-bench-scale-${label}-`));
  let database: DatabaseSync | null = null;
  const open = () => (database ??= new DatabaseSync(path.join(dataDir, 'tono.db'), { timeout: 5000 }));
  return {
    engine: 'sqlite',
    label,
    // DATABASE_URL empty: SQLite even where the bench's own environment names a PostgreSQL.
    env: { DATA_DIR: dataDir, DATABASE_URL: '' },
    async query<T>(sql: string) {
      return open().prepare(sql).all() as T[];
    },
    async close() {
      database?.close();
      fs.rmSync(dataDir, { recursive: true, force: true });
    },
  };
}

async function postgresDatabase(label: Database['label']): Promise<Database> {
  const name = `bench_scale_${label}_${randomBytes(4).toString('hex')}`;
  const admin = new pg.Client({ connectionString: DATABASE_URL });
  await admin.connect();
  await admin.query(`create schema "${name}"`);
  const url = `${DATABASE_URL}${DATABASE_URL.includes('?') ? '&' : '?'}options=${encodeURIComponent(`-c search_path=${name}`)}`;
  const client = new pg.Client({ connectionString: url });
  await client.connect();
  return {
    engine: 'postgres',
    label,
    env: { DATABASE_URL: url, SECRET_KEY },
    async query<T>(sql: string) {
      return (await client.query(sql)).rows as T[];
    },
    async close() {
      await client.end();
      await admin.query(`drop schema "${name}" cascade`);
      await admin.end();
    },
  };
}

type Prepared = {
  database: Database;
  bank: Awaited<ReturnType<typeof spawnSandboxBank>>;
  merchant: { userId: string; testKey: string; bankAccountId: string };
  /** The subscriptions set up due at once, by when their set-up began. */
  subscriptionsFrom: number;
  fillNote: string | null;
};

/**
 * Migrates the database, makes the measured merchant, fills the rest (scale only), and sets up
 * SUBSCRIPTIONS subscriptions due at once whose charge jobs are held back until their figure.
 */
async function prepare(database: Database, withFill: boolean): Promise<Prepared> {
  const [servicePort, bankPort] = [await freePort(), await freePort()];
  const bank = await spawnSandboxBank(servicePort, bankPort);
  const setupDir = fs.mkdtempSync(path.join(os.tmpdir(), 'tono-bench-scale-setup-'));
  const config = loadConfig({
    DATA_DIR: setupDir,
    ...database.env,
    ...bank.env,
    WORKERS: 'false',
    DEMO_MERCHANT: 'false',
    LOG_LEVEL: 'warn',
  });
  let runtime = await createRuntime(config, { log: pino({ level: 'warn' }) });
  const created = await createMerchant(runtime.deps.db, systemClock, {
    name: 'Bench Merchant',
    email: 'bench@example.com',
    password: 'bench-password',
    bankAccount: '12-3456-7890138-00',
  });
  const merchant = { userId: created.user_id, testKey: created.test_key, bankAccountId: created.bank_account_id! };
  let fillNote: string | null = null;
  if (withFill) {
    progress(`filling the ${database.engine} database`);
    const endpointSecret = runtime.deps.secrets.seal(randomBytes(32).toString('base64'));
    await runtime.close();
    fillNote = await fillIn(database, merchant, endpointSecret);
    runtime = await createRuntime(config, { log: pino({ level: 'warn' }) });
  }
  const subscriptionsFrom = Date.now();
  progress(`setting up ${SUBSCRIPTIONS} due subscriptions in the ${database.label} ${database.engine} database`);
  try {
    await setUpDueSubscriptions(runtime.deps, {
      count: SUBSCRIPTIONS,
      testKey: merchant.testKey,
      bankAccountId: merchant.bankAccountId,
      redirectUri: `http://127.0.0.1:${servicePort}/pay/return`,
    });
  } finally {
    await runtime.close();
    fs.rmSync(setupDir, { recursive: true, force: true });
  }
  await database.query(`update jobs set run_at = run_at + ${HOLD} where kind = 'subscription.charge'`);
  if (database.engine === 'postgres') await database.query('vacuum analyze');
  return { database, bank, merchant, subscriptionsFrom, fillNote };
}

/** Fills the database in one go (SQLite: one transaction on its file) and says how long it took. */
async function fillIn(
  database: Database,
  measured: { userId: string; bankAccountId: string },
  endpointSecret: string,
): Promise<string> {
  const started = performance.now();
  const steps: string[] = [];
  const onStep = (step: string, seconds: number) => steps.push(`${step} ${seconds.toFixed(1)} s`);
  let counts: Awaited<ReturnType<typeof fill>>;
  if (database.engine === 'sqlite') {
    const file = path.join(database.env.DATA_DIR, 'tono.db');
    const writer = new DatabaseSync(file);
    // A fill is one transaction nobody else sees until it commits: no fsync until the checkpoint.
    writer.exec('PRAGMA journal_mode = WAL');
    writer.exec('PRAGMA synchronous = OFF');
    writer.exec('PRAGMA cache_size = -1000000');
    writer.exec('PRAGMA temp_store = MEMORY');
    writer.exec('BEGIN');
    counts = await fill({
      engine: 'sqlite',
      factor: FACTOR,
      now: Date.now(),
      measured,
      endpointSecret,
      run: async (sql) => writer.exec(sql),
      onStep,
    });
    writer.exec('COMMIT');
    writer.exec('PRAGMA wal_checkpoint(TRUNCATE)');
    writer.close();
  } else {
    await database.query('set synchronous_commit = off');
    counts = await fill({
      engine: 'postgres',
      factor: FACTOR,
      now: Date.now(),
      measured,
      endpointSecret,
      run: async (sql) => {
        await database.query(sql);
      },
      onStep,
    });
    // What autovacuum does within minutes of such a load; done now so it does not run during a figure.
    const vacuum = performance.now();
    await database.query('vacuum analyze');
    steps.push(`vacuum analyze ${((performance.now() - vacuum) / 1000).toFixed(1)} s`);
    await database.query('set synchronous_commit = on');
  }
  const seconds = (performance.now() - started) / 1000;
  const what = Object.entries(counts)
    .map(([kind, n]) => `${n.toLocaleString('en')} ${kind.replaceAll('_', ' ')}`)
    .join(', ');
  return `filled in ${seconds.toFixed(0)} s (${steps.join('; ')}): ${what}, over 1,000 merchants, the measured one holding 1% of each`;
}

type Service = SpawnedServer & { url: string };

/** `node src/main.ts` with `npm start`'s flags on the prepared database, once it is idle after its start (the hourly prune runs first). */
async function startService(prepared: Prepared): Promise<Service> {
  progress(`starting the service on the ${prepared.database.label} ${prepared.database.engine} database`);
  const server = await spawnServer(
    'src/main.ts',
    {
      ...prepared.database.env,
      ...prepared.bank.env,
      HOST: '127.0.0.1',
      DEMO_MERCHANT: 'false',
      LOG_LEVEL: 'warn',
      RATE_LIMIT_PER_SECOND: '1000000',
    },
    (line) => (line.startsWith('Tono is running at') ? { line } : null),
    serviceNodeFlags(),
  );
  await untilIdle([server.pid], 120_000);
  return { ...server, url: `http://127.0.0.1:${prepared.bank.env.PORT}` };
}

type Measured = Awaited<ReturnType<typeof load>> & { cpu_us_per_call: number[] };

async function measure(service: Service, options: LoadOptions): Promise<Measured> {
  await untilIdle([service.pid]);
  return warmLoadWithCpu([service.pid], options);
}

function pair(name: string, engine: Engine, empty: Measured, scale: Measured): BenchResult[] {
  const ratio = scale.rps / empty.rps;
  return [
    {
      name: `${name}_${engine} (empty)`,
      rps: empty.rps,
      p99_ms: empty.p99_ms,
      note: `the measured merchant alone; the service's CPU ${empty.cpu_us_per_call[0]} µs a call; errors ${failedCalls(empty)}`,
    },
    {
      name: `${name}_${engine} (scale)`,
      rps: scale.rps,
      p99_ms: scale.p99_ms,
      ratio,
      budget: `≥ ${BUDGET} × the empty database`,
      met: ratio >= BUDGET,
      note: `× the empty database in this run; the service's CPU ${scale.cpu_us_per_call[0]} µs a call; errors ${failedCalls(scale)}`,
    },
  ];
}

/** Charges the held subscriptions at once and waits for each to be charged; charges a second, and whether each was charged once. */
async function charge(prepared: Prepared): Promise<{ perSecond: number; note: string }> {
  const { database, merchant, subscriptionsFrom } = prepared;
  const ours = `select id from subscriptions where user_id = '${merchant.userId}' and mode = 'test' and created_at >= ${subscriptionsFrom}`;
  const charged = async () =>
    Number(
      (
        await database.query<{ n: number }>(
          `select count(*) as n from subscription_charges where status = 'successful' and subscription_id in (${ours})`,
        )
      )[0].n,
    );
  const started = performance.now();
  await database.query(
    `update jobs set run_at = run_at - ${HOLD} where kind = 'subscription.charge' and run_at > ${HOLD}`,
  );
  let done = 0;
  while (done < SUBSCRIPTIONS && performance.now() - started < 15 * 60_000) {
    await new Promise((resolve) => setTimeout(resolve, 250));
    done = await charged();
  }
  const seconds = (performance.now() - started) / 1000;
  const [counts] = await database.query<{ charges: number; payments: number; subscriptions: number }>(
    `select (select count(*) from subscription_charges where subscription_id in (${ours})) as charges,
       (select count(*) from payments where subscription_id in (${ours})) as payments,
       (select count(*) from (${ours}) s) as subscriptions`,
  );
  const once =
    Number(counts.charges) === SUBSCRIPTIONS &&
    Number(counts.payments) === SUBSCRIPTIONS &&
    Number(counts.subscriptions) === SUBSCRIPTIONS &&
    done === SUBSCRIPTIONS;
  return {
    perSecond: done / seconds,
    note: once
      ? `${done} charged exactly once in ${seconds.toFixed(1)} s`
      : `NOT exactly once: ${done} charged, ${counts.charges} charge rows, ${counts.payments} payments for ${counts.subscriptions} subscriptions`,
  };
}

async function benchEngine(ctx: BenchContext, engine: Engine): Promise<BenchResult[]> {
  const make = engine === 'sqlite' ? sqliteDatabase : postgresDatabase;
  const prepared: Prepared[] = [];
  const services: Service[] = [];
  try {
    prepared.push(await prepare(await make('empty'), false));
    prepared.push(await prepare(await make('scale'), true));
    for (const each of prepared) services.push(await startService(each));
    const results: BenchResult[] = [{ name: `scale_fill_${engine}`, note: prepared[1].fillNote! }];

    const setUp = await Promise.all(
      prepared.map(async (each, i) => {
        const url = services[i].url;
        const headers = { authorization: `Bearer ${each.merchant.testKey}`, 'content-type': 'application/json' };
        const tokens: string[] = [];
        for (let c = 0; c < CONSENTS; c += 1)
          tokens.push(
            (
              await recurringToken(
                url,
                each.merchant.testKey,
                each.merchant.bankAccountId,
                `bench-payer-${c}@example.com`,
              )
            ).token,
          );
        const body = JSON.stringify({
          bank_account_id: each.merchant.bankAccountId,
          amount: '12.50 NZD',
          message: 'Bench coffee',
          reference: 'BENCH-1',
        });
        const created = await fetch(`${url}/v1/requests`, { method: 'POST', headers, body }).then(
          (r) => r.json() as Promise<any>,
        );
        const options: Record<'get' | 'create' | 'execute', LoadOptions> = {
          get: {
            url: `${url}/v1/requests/${created.request.id}`,
            headers,
            connections: ctx.connections,
            durationSec: ctx.durationSec,
          },
          create: {
            url: `${url}/v1/requests`,
            method: 'POST',
            headers,
            body,
            connections: 50,
            durationSec: ctx.durationSec,
          },
          execute: executionLoad(url, headers, tokens, ctx),
        };
        return options;
      }),
    );
    for (const [figure, name] of [
      ['get', 'get_request'],
      ['create', 'create_request'],
      ['execute', 'execute_payment'],
    ] as const) {
      progress(`${name} on ${engine}`);
      const [empty, scale] = [
        await measure(services[0], setUp[0][figure]),
        await measure(services[1], setUp[1][figure]),
      ];
      results.push(...pair(name, engine, empty, scale));
    }

    await Promise.all(services.map((service) => untilIdle([service.pid])));
    const empty = await charge(prepared[0]);
    await untilIdle([services[0].pid]);
    const scale = await charge(prepared[1]);
    const ratio = scale.perSecond / empty.perSecond;
    results.push(
      { name: `subscription_charges_${engine} (empty)`, per_second: empty.perSecond, note: empty.note },
      {
        name: `subscription_charges_${engine} (scale)`,
        per_second: scale.perSecond,
        ratio,
        budget: `≥ ${BUDGET} × the empty database`,
        met: ratio >= BUDGET,
        note: `${scale.note}; × the empty database in this run`,
      },
    );
    return results;
  } finally {
    for (const service of services) await service.stop();
    for (const each of prepared) {
      await each.bank.stop();
      await each.database.close();
    }
  }
}

async function unreachable(): Promise<string | null> {
  const client = new pg.Client({ connectionString: DATABASE_URL, connectionTimeoutMillis: 3000 });
  try {
    await client.connect();
    return null;
  } catch (error) {
    return (error as Error).message || String(error);
  } finally {
    await client.end().catch(() => {});
  }
}

export default async function benchScale(ctx: BenchContext): Promise<BenchResult[]> {
  const engines = (process.env.BENCH_SCALE_ENGINES ?? 'sqlite,postgres').split(',') as Engine[];
  const results: BenchResult[] = [];
  for (const engine of engines) {
    if (engine === 'postgres') {
      const problem = await unreachable();
      if (problem) {
        results.push({ name: 'scale_postgres', note: `skipped: no PostgreSQL at BENCH_DATABASE_URL: ${problem}` });
        continue;
      }
    }
    try {
      results.push(...(await benchEngine(ctx, engine)));
    } catch (error) {
      results.push({ name: `scale_${engine}`, note: `failed: ${(error as Error).stack ?? error}` });
    }
  }
  return results;
}
