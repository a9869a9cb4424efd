import { spawn } from 'node:child_process';
import { once } from 'node:events';
import { test, type TestContext } from 'node:test';
import assert from 'node:assert/strict';
import fc from 'fast-check';
import { sql } from 'kysely';
import { engine, freshDb, pgUrl } from '../../../test/helpers.ts';
import { postgresWritesDuring } from '../../../test/support/round-trips.ts';
import { jobRow } from '../../../test/support/jobs.ts';
import { migrateToLatest } from '../migrate.ts';
import { insertRow, prepared } from '../prepared.ts';
import { openDb, transact } from '../store.ts';
import { isPlainRead } from './shared-reads.ts';

// Reads outside a transaction on PostgreSQL go out together on connections kept for them
// (src/store/postgres/shared-reads.ts): each caller its own rows and its own error, in as few
// writes as there are such connections, never waiting on a transaction's row lock.

const skip = engine !== 'postgres' ? "the shared reads are PostgreSQL's" : false;

test('only a SELECT that locks nothing counts as a plain read', () => {
  for (const read of ['select 1', '  SELECT * from jobs where id = $1', 'select "for_update" from t'])
    assert.ok(isPlainRead(read), read);
  for (const other of [
    'select * from jobs for update',
    'select * from jobs where id = $1 FOR NO KEY UPDATE',
    'select * from jobs for share skip locked',
    'select * from jobs for key share',
    'with moved as (update jobs set run_at = 1 returning *) select * from moved',
    'update jobs set run_at = 1',
    'insert into jobs default values',
    'delete from jobs',
    'begin',
  ])
    assert.ok(!isPlainRead(other), other);
  fc.assert(
    fc.property(fc.constantFrom('insert', 'update', 'delete', 'with', 'lock', 'notify'), fc.string(), (word, rest) =>
      assert.ok(!isPlainRead(`${word} ${rest}`)),
    ),
  );
});

const jobById = prepared<{ id: string }, { id: string; run_at: number }>((db, arg) =>
  db.selectFrom('jobs').select(['id', 'run_at']).where('id', '=', arg('id')),
);
const jobsDueBefore = prepared<{ before: unknown }, { id: string }>((db, arg) =>
  db
    .selectFrom('jobs')
    .select('id')
    .where('run_at', '<', arg('before') as number),
);
const backend = prepared<Record<string, never>, { pid: number }>((db) =>
  db.selectNoFrom(sql<number>`pg_backend_pid()`.as('pid')),
);

async function storeWithJobs(t: TestContext, count: number) {
  const { schema, drop } = await freshDb();
  t.after(drop);
  const db = openDb({ engine: 'postgres', url: pgUrl, schema, poolSize: 2 });
  t.after(() => db.destroy());
  await migrateToLatest(db);
  for (let i = 0; i < count; i++) await insertRow(db, 'jobs', jobRow(`job_${i}`, { run_at: i }));
  return db;
}

test('reads made together go out in one write a connection, each answered with its own rows', { skip }, async (t) => {
  const db = await storeWithJobs(t, 40);
  // Both connections kept for reads are open before the count starts.
  await Promise.all([jobById.first(db, { id: 'job_0' }), jobById.first(db, { id: 'job_1' })]);

  let answers: Array<{ id: string; run_at: number } | undefined> = [];
  const writes = await postgresWritesDuring(async () => {
    answers = await Promise.all(Array.from({ length: 40 }, (_, i) => jobById.first(db, { id: `job_${i}` })));
  });
  assert.deepEqual(
    answers,
    Array.from({ length: 40 }, (_, i) => ({ id: `job_${i}`, run_at: i })),
  );
  assert.ok(writes <= 2, `${writes} writes for 40 reads`);
  assert.deepEqual(
    new Set((await Promise.all(Array.from({ length: 8 }, () => backend.first(db, {})))).map((row) => row!.pid)).size,
    2,
    'spread over the two connections',
  );
});

test('a read that fails fails alone; the reads sent with it are answered', { skip }, async (t) => {
  const db = await storeWithJobs(t, 3);
  const [before, wrong, after] = await Promise.allSettled([
    jobsDueBefore.all(db, { before: 2 }),
    jobsDueBefore.all(db, { before: 'not a number' }),
    jobById.first(db, { id: 'job_2' }),
  ]);
  assert.deepEqual(before.status === 'fulfilled' && before.value.map((row) => row.id).sort(), ['job_0', 'job_1']);
  assert.equal(wrong.status, 'rejected');
  assert.match(String((wrong as PromiseRejectedResult).reason), /invalid input syntax/);
  assert.deepEqual(after.status === 'fulfilled' && after.value, { id: 'job_2', run_at: 2 });
});

test('a read does not wait for a transaction holding the row, even one made inside it', { skip }, async (t) => {
  const db = await storeWithJobs(t, 1);
  const seen = await transact(db, async (trx) => {
    await sql`update jobs set run_at = 99 where id = 'job_0'`.execute(trx);
    return jobById.first(db, { id: 'job_0' });
  });
  assert.deepEqual(seen, { id: 'job_0', run_at: 0 }, 'the committed row, not the open change');
  assert.deepEqual(
    await jobById.first(db, { id: 'job_0' }),
    { id: 'job_0', run_at: 99 },
    'and the change once committed',
  );
});

test('a connection kept for reads that drops is replaced', { skip }, async (t) => {
  const db = await storeWithJobs(t, 1);
  const pids = new Set((await Promise.all([backend.first(db, {}), backend.first(db, {})])).map((row) => row!.pid));
  const admin = openDb({ engine: 'postgres', url: pgUrl, poolSize: 1 });
  t.after(() => admin.destroy());
  for (const pid of pids) await sql`select pg_terminate_backend(${pid})`.execute(admin);
  // The drop is noticed when PostgreSQL's goodbye arrives; reads after it go out on new connections.
  let answer: unknown;
  for (let tries = 0; tries < 50 && answer === undefined; tries++) {
    answer = await jobById.first(db, { id: 'job_0' }).catch(() => undefined);
    if (answer === undefined) await new Promise((resolve) => setTimeout(resolve, 20));
  }
  assert.deepEqual(answer, { id: 'job_0', run_at: 0 });
  const now = new Set((await Promise.all([backend.first(db, {}), backend.first(db, {})])).map((row) => row!.pid));
  for (const pid of now) assert.ok(!pids.has(pid), 'a new backend');
});

test('a process whose store was never closed still exits once its reads are answered', { skip }, async () => {
  // A CLI command that forgets to close its store: the read connections keep it alive only while a read waits.
  const root = new URL('../../../', import.meta.url);
  const script = `
    import { sql } from 'kysely';
    import { openDb } from ${JSON.stringify(new URL('src/store/store.ts', root).href)};
    import { prepared } from ${JSON.stringify(new URL('src/store/prepared.ts', root).href)};
    const one = prepared((db) => db.selectNoFrom(sql\`1\`.as('one')));
    process.stdout.write(JSON.stringify(await one.first(openDb({ engine: 'postgres', url: process.env.URL }), {})));`;
  const child = spawn(process.execPath, ['--input-type=module', '-e', script], {
    cwd: root,
    env: { ...process.env, URL: pgUrl },
    stdio: ['ignore', 'pipe', 'inherit'],
  });
  let out = '';
  child.stdout.on('data', (chunk) => (out += chunk));
  const killer = setTimeout(() => child.kill('SIGKILL'), 20_000);
  const [code, signal] = (await once(child, 'exit')) as [number | null, string | null];
  clearTimeout(killer);
  assert.equal(signal, null, 'it exited by itself');
  assert.equal(code, 0);
  assert.deepEqual(JSON.parse(out), { one: 1 });
});
