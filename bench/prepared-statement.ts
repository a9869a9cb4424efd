// node bench/prepared-statement.ts [calls]: the CPU one prepared statement costs on PostgreSQL, in
// this process (the store's client) and in its backend, run on one connection inside a
// transaction: a read of a 38-column row by its key, and an update that answers no rows
// (docs/performance.md, "What a call costs on PostgreSQL"). BENCH_DATABASE_URL as for
// `npm run bench`; a schema made for the run and dropped after it. Run it from two builds in
// turn to compare them; the machine's speed drifts too much for one run of each.
import { sql, type Kysely } from 'kysely';
import { openDb, transact, type Tx } from '../src/store/store.ts';
import { prepared } from '../src/store/prepared.ts';
import { cpuSecondsOf } from './process.ts';

const url = process.env.BENCH_DATABASE_URL ?? 'postgres://postgres@127.0.0.1:5432/test';
const calls = Number(process.argv[2] ?? 20_000);
const COLUMNS = 37;
const ROWS = 100;

const schema = `bench_prepared_${process.pid}`;
const admin = openDb({ engine: 'postgres', url, poolSize: 1 });
await sql.raw(`create schema ${schema}`).execute(admin);
const db = openDb({ engine: 'postgres', url, schema, poolSize: 1 });
// The table is not the service's, so its queries are built on an untyped view of the database.
const untyped = (d: unknown) => d as Kysely<any>;

try {
  const columns = Array.from({ length: COLUMNS }, (_, i) => `column_number_${i} text`).join(', ');
  await sql.raw(`create table wide (id text primary key, n bigint, ${columns})`).execute(db);
  const values = Array.from({ length: COLUMNS }, (_, i) => `'value ${i}'`).join(', ');
  await sql.raw(`insert into wide select 'w' || g, g, ${values} from generate_series(1, ${ROWS}) g`).execute(db);

  const readRow = prepared<{ id: string }, Record<string, unknown>>((d, arg) =>
    untyped(d).selectFrom('wide').selectAll().where('id', '=', arg('id')),
  );
  const countRow = prepared<{ id: string }>((d, arg) =>
    untyped(d).updateTable('wide').set({ n: sql`n + 1` }).where('id', '=', arg('id')),
  );
  const statements: Array<[string, (trx: Tx, i: number) => Promise<unknown>]> = [
    ['read', (trx, i) => readRow.first(trx, { id: `w${(i % ROWS) + 1}` })],
    ['update', (trx, i) => countRow.run(trx, { id: `w${(i % ROWS) + 1}` })],
  ];
  const figures: Record<string, number> = {};
  for (const [name, run] of statements) {
    await transact(db, async (trx) => {
      const { pid } = (await sql<{ pid: number }>`select pg_backend_pid() as pid`.execute(trx)).rows[0]!;
      for (let i = 0; i < 500; i++) await run(trx, i);
      const process0 = process.cpuUsage();
      const backend0 = cpuSecondsOf(pid);
      for (let i = 0; i < calls; i++) await run(trx, i);
      const used = process.cpuUsage(process0);
      figures[`${name}_client_us`] = round((used.user + used.system) / calls);
      figures[`${name}_backend_us`] = round(((cpuSecondsOf(pid) - backend0) * 1_000_000) / calls);
    });
  }
  console.log(JSON.stringify(figures));
} finally {
  await db.destroy();
  await sql.raw(`drop schema ${schema} cascade`).execute(admin);
  await admin.destroy();
}

function round(value: number): number {
  return Math.round(value * 10) / 10;
}
