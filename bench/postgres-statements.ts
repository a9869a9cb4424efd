// node bench/postgres-statements.ts create|execute [seconds] [--without-foreign-keys]: what one
// create or one execution costs PostgreSQL, statement by statement (docs/performance.md, "What a
// call costs on PostgreSQL"). The service runs as `--only postgres` runs it (one process, a schema
// of its own in BENCH_DATABASE_URL's database, a webhook endpoint live at a receiver, for
// executions the sandbox bank in its own process and 20 consents), under 50 connections; after the
// warm-up, pg_stat_statements is reset, and after the measured load each statement is printed with
// its calls, time inside PostgreSQL and WAL records, per call of the load, beside the CPU a call of
// the service, the bank and PostgreSQL. It needs pg_stat_statements loaded
// (`shared_preload_libraries = 'pg_stat_statements'` and a restart; it creates the extension in
// the database when missing) and nothing else running on the database, since the view counts
// every statement of the database. --without-foreign-keys
// drops the foreign keys of the tables a create and an execution write, to weigh their checks.
import { randomBytes } from 'node:crypto';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import pg from 'pg';
import { sql } from 'kysely';
import { createMerchant } from '../src/modules/merchants/merchants.service.ts';
import { systemClock } from '../src/shared/time.ts';
import { openDb } from '../src/store/store.ts';
import { freePort } from '../test/process.ts';
import {
  executionLoad,
  failedCalls,
  liveWebhookEndpoint,
  load,
  recurringToken,
  warmUp,
  type LoadOptions,
} from './lib.ts';
import {
  postgresPids,
  serviceNodeFlags,
  spawnSandboxBank,
  spawnServer,
  withCpu,
  type SpawnedServer,
} from './process.ts';

const [kind = 'execute', secondsArg] = process.argv.slice(2).filter((arg) => !arg.startsWith('--'));
if (kind !== 'create' && kind !== 'execute') {
  console.error('usage: node bench/postgres-statements.ts create|execute [seconds] [--without-foreign-keys]');
  process.exit(2);
}
const seconds = Number(secondsArg ?? 10);
const withoutForeignKeys = process.argv.includes('--without-foreign-keys');
const DATABASE_URL = process.env.BENCH_DATABASE_URL ?? 'postgres://postgres@127.0.0.1:5432/test';
const CONSENTS = 20;
/** The tables a create or an execution writes, whose foreign keys --without-foreign-keys drops. */
const WRITTEN = ['requests', 'payments', 'webhook_deliveries', 'webhook_attempts'];

const admin = new pg.Client({ connectionString: DATABASE_URL });
await admin.connect();
try {
  await admin.query('create extension if not exists pg_stat_statements');
  await admin.query('select 1 from pg_stat_statements limit 1');
} catch (error) {
  console.error(`pg_stat_statements is not loaded: ${(error as Error).message}`);
  console.error("set shared_preload_libraries = 'pg_stat_statements' and restart PostgreSQL");
  await admin.end();
  process.exit(1);
}

const schema = `bench_statements_${randomBytes(4).toString('hex')}`;
await admin.query(`create schema "${schema}"`);
const url = `${DATABASE_URL}${DATABASE_URL.includes('?') ? '&' : '?'}options=${encodeURIComponent(`-c search_path=${schema}`)}`;
const db = openDb({ engine: 'postgres', url, poolSize: 2 });
const dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'tono-bench-statements-'));
const started: Array<Pick<SpawnedServer, 'stop'>> = [];

try {
  const receiver = await spawnServer('bench/servers/receiver.ts');
  started.push(receiver);
  const [servicePort, bankPort] = [await freePort(), await freePort()];
  const bank = kind === 'execute' ? await spawnSandboxBank(servicePort, bankPort) : null;
  if (bank) started.push(bank);
  const service = await spawnServer(
    'src/main.ts',
    {
      DATABASE_URL: url,
      SECRET_KEY: randomBytes(32).toString('base64'),
      PORT: String(servicePort),
      HOST: '127.0.0.1',
      DATA_DIR: dataDir,
      DEMO_MERCHANT: 'false',
      LOG_LEVEL: 'warn',
      RATE_LIMIT_PER_SECOND: '1000000',
      ...bank?.env,
    },
    (line) => (line.startsWith('Tono is running at') ? { line } : null),
    serviceNodeFlags(),
  );
  started.unshift(service);
  const serviceUrl = `http://127.0.0.1:${servicePort}`;
  const merchant = await createMerchant(db, systemClock, {
    name: 'Bench Merchant',
    email: 'bench@example.com',
    password: 'bench-password',
    bankAccount: '12-3456-7890138-00',
  });
  const headers = { authorization: `Bearer ${merchant.test_key}`, 'content-type': 'application/json' };
  const ctx = { connections: 50, durationSec: seconds };
  let options: LoadOptions;
  if (kind === 'execute') {
    const tokens: string[] = [];
    for (let i = 0; i < CONSENTS; i += 1)
      tokens.push(
        (await recurringToken(serviceUrl, merchant.test_key, merchant.bank_account_id!, `payer-${i}@example.com`))
          .token,
      );
    options = executionLoad(serviceUrl, headers, tokens, ctx);
  } else {
    const body = JSON.stringify({
      bank_account_id: merchant.bank_account_id,
      amount: '12.50 NZD',
      message: 'Bench coffee',
      reference: 'BENCH-1',
    });
    options = { url: `${serviceUrl}/v1/requests`, method: 'POST', headers, body, ...ctx };
  }
  await liveWebhookEndpoint(serviceUrl, merchant.test_key, (receiver.info as { url: string }).url);
  const { rows: tables } = await sql<{
    name: string;
  }>`select tablename as name from pg_tables where schemaname = current_schema()`.execute(db);
  for (const { name } of tables) await sql`analyze ${sql.id(name)}`.execute(db);
  if (withoutForeignKeys) {
    const { rows } = await admin.query(
      `select conrelid::regclass::text as "table", conname as name from pg_constraint
       where contype = 'f' and connamespace = $1::regnamespace and conrelid::regclass::text = any($2)`,
      [schema, WRITTEN.map((table) => `${schema}.${table}`)],
    );
    for (const key of rows) await admin.query(`alter table ${key.table} drop constraint "${key.name}"`);
    console.log(`dropped ${rows.length} foreign keys of ${WRITTEN.join(', ')}`);
  }
  await warmUp(options);

  const counters = async () => {
    const { rows } = await admin.query(
      `select (select xact_commit from pg_stat_database where datname = current_database()) as commits,
              (select wal_sync from pg_stat_wal) as flushes`,
    );
    return { commits: Number(rows[0].commits), flushes: Number(rows[0].flushes) };
  };
  await admin.query('select pg_stat_statements_reset()');
  const before = await counters();
  const pids = [service.pid, ...(bank ? [bank.pid] : []), ...postgresPids()];
  const result = await withCpu(pids, () => load(options));
  const after = await counters();
  const { rows: statements } = await admin.query(
    `select calls, total_exec_time + total_plan_time as ms, wal_records,
            regexp_replace(query, '\\s+', ' ', 'g') as query
     from pg_stat_statements
     where dbid = (select oid from pg_database where datname = current_database())
       and query not like '%pg_stat%' and query not like '%xact_commit%'
     order by total_exec_time + total_plan_time desc`,
  );
  const calls = result.requests;
  const cpu = result.cpu_us_per_call;
  const postgresCpu = cpu.slice(bank ? 2 : 1).reduce((sum, us) => sum + us, 0);
  const sum = (field: 'calls' | 'ms' | 'wal_records') =>
    statements.reduce((total, row) => total + Number(row[field]), 0) / calls;
  console.log(
    `${kind}: ${calls} calls, ${Math.round(result.rps)} a second, p99 ${result.p99_ms} ms, errors ${failedCalls(result)}`,
  );
  console.log(
    `CPU a call: service ${cpu[0]} µs${bank ? `, bank ${cpu[1]} µs` : ''}, PostgreSQL ${postgresCpu} µs; ` +
      `a call: ${((after.commits - before.commits) / calls).toFixed(2)} transactions (read-only ones included), ` +
      `${((after.flushes - before.flushes) / calls).toFixed(2)} WAL flushes, ${sum('calls').toFixed(1)} statements, ` +
      `${(sum('ms') * 1000).toFixed(0)} µs in them, ${sum('wal_records').toFixed(1)} WAL records`,
  );
  console.log(
    'calls  µs     WAL    statement (each a call of the load; µs inside PostgreSQL, waits for a core included)',
  );
  for (const row of statements) {
    if (Number(row.calls) / calls < 0.005) continue;
    console.log(
      `${(Number(row.calls) / calls).toFixed(2).padStart(5)}  ${((Number(row.ms) * 1000) / calls).toFixed(0).padStart(5)}  ` +
        `${(Number(row.wal_records) / calls).toFixed(1).padStart(5)}  ${String(row.query).slice(0, 140)}`,
    );
  }
} finally {
  for (const server of started) await server.stop();
  await db.destroy();
  await admin.query(`drop schema "${schema}" cascade`);
  await admin.end();
  fs.rmSync(dataDir, { recursive: true, force: true });
}
