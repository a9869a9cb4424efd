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
// every statement of the database. --without-foreign-keys drops the foreign keys of the tables a
// create and an execution write, to weigh their checks.
import pg from 'pg';
import {
  executionLoad,
  failedCalls,
  liveWebhookEndpoint,
  load,
  recurringToken,
  warmUp,
  type LoadOptions,
} from './lib.ts';
import { analyze, cpuShares, freshSchema, merchantOn, startService, waitsDuring } from './postgres.bench.ts';
import { postgresPids, spawnSandboxBank, spawnServer, withCpu, type SpawnedServer } from './process.ts';
import { freePort } from '../test/process.ts';

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

const schema = await freshSchema();
const started: Array<Pick<SpawnedServer, 'stop'>> = [];
try {
  const receiver = await spawnServer('bench/servers/receiver.ts');
  started.push(receiver);
  const [servicePort, bankPort] = [await freePort(), await freePort()];
  const bank = kind === 'execute' ? await spawnSandboxBank(servicePort, bankPort) : null;
  if (bank) started.push(bank);
  const service = await startService(schema, 1, { PORT: String(servicePort), ...bank?.env });
  started.unshift(service);
  const { testKey, bankAccountId } = await merchantOn(schema.db);
  const headers = { authorization: `Bearer ${testKey}`, 'content-type': 'application/json' };
  const ctx = { connections: 50, durationSec: seconds };
  let options: LoadOptions;
  if (kind === 'execute') {
    const tokens: string[] = [];
    for (let i = 0; i < CONSENTS; i += 1)
      tokens.push((await recurringToken(service.url, testKey, bankAccountId, `payer-${i}@example.com`)).token);
    options = executionLoad(service.url, headers, tokens, ctx);
  } else {
    const body = JSON.stringify({
      bank_account_id: bankAccountId,
      amount: '12.50 NZD',
      message: 'Bench coffee',
      reference: 'BENCH-1',
    });
    options = { url: `${service.url}/v1/requests`, method: 'POST', headers, body, ...ctx };
  }
  await liveWebhookEndpoint(service.url, testKey, (receiver.info as { url: string }).url);
  await analyze(schema.db);
  if (withoutForeignKeys) {
    const { rows } = await admin.query(
      `select conrelid::regclass::text as "table", conname as name from pg_constraint
       where contype = 'f' and conrelid = any(cast($1 as regclass[]))`,
      [WRITTEN.map((table) => `${schema.name}.${table}`)],
    );
    for (const key of rows) await admin.query(`alter table ${key.table} drop constraint "${key.name}"`);
    console.log(`dropped ${rows.length} foreign keys of ${WRITTEN.join(', ')}`);
  }
  await warmUp(options);

  await admin.query('select pg_stat_statements_reset()');
  const pids = [service.pid, ...(bank ? [bank.pid] : []), ...postgresPids()];
  const { result, waits, commits, flushes } = await waitsDuring(() => withCpu(pids, () => load(options)));
  const { rows: statements } = await admin.query(
    `select calls, total_exec_time + total_plan_time as ms, wal_records,
            regexp_replace(query, '\\s+', ' ', 'g') as query
     from pg_stat_statements
     where dbid = (select oid from pg_database where datname = current_database())
       and query not like '%pg_stat%'
     order by total_exec_time + total_plan_time desc`,
  );
  const calls = result.requests;
  const cpu = cpuShares(result.cpu_us_per_call, 1, bank ? 1 : 0);
  const sum = (field: 'calls' | 'ms' | 'wal_records') =>
    statements.reduce((total, row) => total + Number(row[field]), 0) / calls;
  console.log(
    `${kind}: ${calls} calls, ${Math.round(result.rps)} a second, p99 ${result.p99_ms} ms, errors ${failedCalls(result)}`,
  );
  console.log(
    `CPU a call: service ${cpu.service} µs${bank ? `, bank ${cpu.bank} µs` : ''}, PostgreSQL ${cpu.postgres} µs; ` +
      `a call: ${(commits / calls).toFixed(2)} transactions (read-only ones included), ` +
      `${(flushes / calls).toFixed(2)} WAL flushes, ${sum('calls').toFixed(1)} statements, ` +
      `${(sum('ms') * 1000).toFixed(0)} µs in them, ${sum('wal_records').toFixed(1)} WAL records; ` +
      `PostgreSQL backends waiting (samples): ${waits}`,
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
  await schema.drop();
  await admin.end();
}
