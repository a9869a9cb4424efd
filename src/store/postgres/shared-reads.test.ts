import net from 'node:net';
import { test, type TestContext } from 'node:test';
import assert from 'node:assert/strict';
import fc from 'fast-check';
import { sql } from 'kysely';
import { engine, freshDb, pgUrl } from '../../../test/helpers.ts';
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

const job = (id: string, runAt: number) => ({
  id,
  kind: 'k',
  run_at: runAt,
  clock_id: null,
  payload: '{}',
  dedupe_key: null,
  locked_by: null,
  locked_until: null,
  last_error: null,
  failed_at: null,
  created_at: 1,
});

async function storeWithJobs(t: TestContext, count: number) {
  const { schema, drop } = await freshDb();
  t.after(drop);
  const db = openDb({ engine: 'postgres', url: pgUrl, schema, poolSize: 2 });
  t.after(() => db.destroy());
  await migrateToLatest(db);
  for (let i = 0; i < count; i++) await insertRow(db, 'jobs', job(`job_${i}`, i));
  return db;
}

/** Writes to PostgreSQL's port from this process while `run` runs. */
async function writesDuring(run: () => Promise<unknown>): Promise<number> {
  const port = Number(new URL(pgUrl).port || 5432);
  const socket = net.Socket.prototype as unknown as { _writeGeneric: (...args: unknown[]) => unknown };
  const write = socket._writeGeneric;
  let writes = 0;
  socket._writeGeneric = function (this: net.Socket, ...args: unknown[]) {
    if (this.remotePort === port) writes += 1;
    return write.apply(this, args);
  };
  try {
    await run();
  } finally {
    socket._writeGeneric = write;
  }
  return writes;
}

test('reads made together go out in one write a connection, each answered with its own rows', { skip }, async (t) => {
  const db = await storeWithJobs(t, 40);
  // Both connections kept for reads are open before the count starts.
  await Promise.all([jobById.first(db, { id: 'job_0' }), jobById.first(db, { id: 'job_1' })]);

  let answers: Array<{ id: string; run_at: number } | undefined> = [];
  const writes = await writesDuring(async () => {
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
