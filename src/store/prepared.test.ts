import { test, type TestContext } from 'node:test';
import assert from 'node:assert/strict';
import { sql } from 'kysely';
import { engine, freshDb, pgUrl } from '../../test/helpers.ts';
import { migrateToLatest } from './migrate.ts';
import { inserted, insertLater, insertRow, prepared, updateById, updateByIdLater } from './prepared.ts';
import { openDb, transact } from './store.ts';
import { inJsonArray, lockForUpdate, plannedAtEachCall } from './db.ts';
import { postgresDescribesDuring, postgresWritesDuring } from '../../test/support/round-trips.ts';
import { jobRow } from '../../test/support/jobs.ts';

// Prepared queries against the real engines (SQLite here, PostgreSQL with TEST_ENGINE=postgres):
// each call binds its own values into SQL compiled once.

const jobById = prepared<{ id: string }, { id: string; kind: string; dedupe_key: string | null }>((db, arg) =>
  db.selectFrom('jobs').select(['id', 'kind', 'dedupe_key']).where('id', '=', arg('id')),
);

const jobsOfKindDue = prepared<{ kind: string; before: number }, { id: string }>((db, arg) =>
  db.selectFrom('jobs').select('id').where('kind', '=', arg('kind')).where('run_at', '<', arg('before')).orderBy('id'),
);

const job = jobRow;

test('a prepared query binds each call its own values, inside transactions too', async (t) => {
  const { db, drop } = await freshDb();
  t.after(drop);
  await migrateToLatest(db);
  await insertRow(db, 'jobs', job('a', { run_at: 10 }));
  await insertRow(db, 'jobs', job('b', { run_at: 20, kind: 'other' }));
  await insertRow(db, 'jobs', job('c', { run_at: 30 }));

  assert.equal((await jobById.first(db, { id: 'b' }))?.kind, 'other');
  assert.equal(await jobById.first(db, { id: 'nope' }), undefined);
  assert.deepEqual(
    (await jobsOfKindDue.all(db, { kind: 'k', before: 31 })).map((r) => r.id),
    ['a', 'c'],
  );
  assert.deepEqual(
    (await jobsOfKindDue.all(db, { kind: 'k', before: 30 })).map((r) => r.id),
    ['a'],
  );
  await transact(db, async (trx) => {
    assert.equal((await jobById.first(trx, { id: 'c' }))?.id, 'c');
  });
  await assert.rejects(jobById.first(db, {} as { id: string }), /no value for argument id/);
});

test('insertRow: one plan per set of columns, undefined columns left out, and a clash ignored on request', async (t) => {
  const { db, drop } = await freshDb();
  t.after(drop);
  await migrateToLatest(db);
  await insertRow(db, 'jobs', job('a', { dedupe_key: 'x' }));
  // last_error undefined: left out, so the column takes its default (null).
  await insertRow(db, 'jobs', { ...job('b'), last_error: undefined } as any);
  assert.equal(
    (await db.selectFrom('jobs').select('last_error').where('id', '=', 'b').executeTakeFirstOrThrow()).last_error,
    null,
  );

  assert.equal(inserted(await insertRow(db, 'jobs', job('c', { dedupe_key: 'x' }), 'dedupe_key')), false);
  assert.equal(inserted(await insertRow(db, 'jobs', job('d', { dedupe_key: 'y' }), 'dedupe_key')), true);
  assert.deepEqual(
    (await db.selectFrom('jobs').select('id').orderBy('id').execute()).map((r) => r.id),
    ['a', 'b', 'd'],
  );
  // Only the named conflict is ignored: a duplicate id still fails.
  await assert.rejects(insertRow(db, 'jobs', job('a', { dedupe_key: 'z' }), 'dedupe_key'));
});

test('updateById sets exactly the given columns of that row', async (t) => {
  const { db, drop } = await freshDb();
  t.after(drop);
  await migrateToLatest(db);
  await insertRow(db, 'jobs', job('a'));
  await insertRow(db, 'jobs', job('b'));
  await updateById(db, 'jobs', 'a', { last_error: 'boom', run_at: 5 });
  await updateById(db, 'jobs', 'b', { run_at: 7 });
  await updateById(db, 'jobs', 'b', {});
  const rows = await db.selectFrom('jobs').select(['id', 'last_error', 'run_at']).orderBy('id').execute();
  assert.deepEqual(
    rows.map((r) => [r.id, r.last_error, Number(r.run_at)]),
    [
      ['a', 'boom', 5],
      ['b', null, 7],
    ],
  );
});

const wholeJob = prepared<{ id: string }, Record<string, unknown>>((db, arg) =>
  db.selectFrom('jobs').selectAll().where('id', '=', arg('id')),
);
const wholeJobOfKind = prepared<{ kind: string }, Record<string, unknown>>((db, arg) =>
  db.selectFrom('jobs').selectAll().where('kind', '=', arg('kind')),
);

/** A migrated PostgreSQL schema of the test's own, through a store of one connection. */
async function oneConnection(t: TestContext, options: { preparedStatements?: boolean } = {}) {
  const { schema, drop } = await freshDb();
  t.after(drop);
  const db = openDb({ engine: 'postgres', url: pgUrl, schema, poolSize: 1, ...options });
  t.after(() => db.destroy());
  await migrateToLatest(db);
  return { db, schema };
}

test('PostgreSQL keeps prepared queries parsed; one a migration made stale is prepared again', {
  skip: engine !== 'postgres' ? "server-side statements are PostgreSQL's" : false,
}, async (t) => {
  // One pooled connection, so every statement in a transaction below runs where the earlier ones
  // were prepared (a read outside a transaction goes to the connections kept for reads).
  const { db, schema } = await oneConnection(t);
  await insertRow(db, 'jobs', job('a'));
  await transact(db, async (trx) => {
    assert.equal((await wholeJob.first(trx, { id: 'a' }))?.id, 'a');
    assert.equal((await wholeJobOfKind.first(trx, { kind: 'k' }))?.id, 'a');
  });
  const onServer = await sql<{ statement: string }>`select statement from pg_prepared_statements`.execute(db);
  assert.ok(
    onServer.rows.some((row) => row.statement.startsWith('select * from "jobs" where "id" = $1')),
    JSON.stringify(onServer.rows),
  );

  assert.equal((await wholeJob.first(db, { id: 'a' }))?.id, 'a', 'prepared on a connection kept for reads too');

  // What an older process sees when a newer version's migration, in another process, adds a column
  // meanwhile (one made through this store prepares everything again: store.test.ts).
  const other = openDb({ engine: 'postgres', url: pgUrl, schema, poolSize: 1 });
  await sql`alter table jobs add column later text`.execute(other);
  await other.destroy();
  assert.equal((await wholeJob.first(db, { id: 'a' }))?.later, null, 'on its own, the call is prepared again and run');
  await assert.rejects(
    transact(db, (trx) => wholeJobOfKind.first(trx, { kind: 'k' })),
    /cached plan must not change result type/,
  );
  assert.equal(
    (await transact(db, (trx) => wholeJobOfKind.first(trx, { kind: 'k' })))?.later,
    null,
    'in a transaction, the next one is prepared again',
  );
});

test('PostgreSQL: a statement kept prepared answers its rows as pg builds them, run after run', {
  skip: engine !== 'postgres' ? "server-side statements are PostgreSQL's" : false,
}, async (t) => {
  // The row shape pg builds from a statement's columns is kept per connection and statement
  // (src/store/postgres/dialect.ts, ShapedQuery): the rows must be what pg gives without it.
  const { db } = await oneConnection(t);
  await insertRow(db, 'jobs', job('a', { dedupe_key: 'once', locked_until: 2 ** 40 }));
  await insertRow(db, 'jobs', job('b', { last_error: 'boom', failed_at: 7 }));
  const unprepared = async (id: string) =>
    (await sql<Record<string, unknown>>`select * from jobs where id = ${id}`.execute(db)).rows[0];
  for (let run = 0; run < 3; run++)
    for (const id of ['a', 'b']) {
      const row = await wholeJob.first(db, { id });
      assert.deepEqual(row, await unprepared(id));
      assert.equal(Object.getPrototypeOf(row), Object.prototype);
    }
  assert.equal((await wholeJob.first(db, { id: 'a' }))?.locked_until, 2 ** 40, 'int8 columns are numbers');
  const both = await wholeJobOfKind.all(db, { kind: 'k' });
  both.sort((x, y) => String(x.id).localeCompare(String(y.id)));
  assert.deepEqual(both, [await unprepared('a'), await unprepared('b')]);
  // another statement whose columns differ, on the same connection
  assert.deepEqual(await jobById.first(db, { id: 'b' }), { id: 'b', kind: 'k', dedupe_key: null });
});

test('PostgreSQL: a connection describes a statement kept prepared once; later runs send no Describe', {
  skip: engine !== 'postgres' ? "server-side statements are PostgreSQL's" : false,
}, async (t) => {
  // src/store/postgres/dialect.ts, ShapedQuery: the server describes the columns on the first run
  // on a connection only; the rows of every later run are built from the shape kept for it there.
  const { db } = await oneConnection(t);
  await insertRow(db, 'jobs', job('a', { last_error: 'boom', locked_until: 2 ** 40 }));
  await insertRow(db, 'jobs', job('b'));
  const unprepared = async (id: string) =>
    (await sql<Record<string, unknown>>`select * from jobs where id = ${id}`.execute(db)).rows[0];
  const expected = await unprepared('a');
  const describes = await postgresDescribesDuring(() =>
    transact(db, async (trx) => {
      for (let run = 0; run < 3; run++) {
        assert.deepEqual(await wholeJob.first(trx, { id: 'a' }), expected);
        assert.deepEqual(await jobById.first(trx, { id: 'a' }), { id: 'a', kind: 'k', dedupe_key: null });
        assert.equal(Number((await moveJob.run(trx, { id: 'b', runAt: run })).numAffectedRows), 1);
        assert.equal((await wholeJob.first(trx, { id: 'none' })) ?? null, null);
      }
    }),
  );
  assert.equal(describes, 3, 'two reads and an update, each described on its first run only');
  assert.equal((await transact(db, (trx) => wholeJob.first(trx, { id: 'b' })))?.run_at, 2);
});

const jobsByIds = prepared<{ ids: string }, { id: string }>((db, arg) =>
  db
    .selectFrom('jobs')
    .select('id')
    .where(inJsonArray(db, 'id', arg('ids')))
    .orderBy('id'),
);

test('PostgreSQL plans a query over a list of values at each call, so a table that grew is read by its index', {
  skip: engine !== 'postgres' ? "server-side statements are PostgreSQL's" : false,
}, async (t) => {
  // A plan kept from while the table was empty scanned it whole at every call once it had grown,
  // until its next ANALYZE (src/store/db.ts, inJsonArray). The table here is never analyzed.
  const { db } = await oneConnection(t);
  await transact(db, async (trx) => {
    for (let run = 0; run < 8; run++) assert.deepEqual(await jobsByIds.all(trx, { ids: '["x","y"]' }), []);
    assert.equal(await jobById.first(trx, { id: 'x' }), undefined);
  });
  const onServer = await sql<{ statement: string }>`select statement from pg_prepared_statements`.execute(db);
  assert.ok(
    onServer.rows.some((row) => row.statement.includes('"dedupe_key"')),
    'others are kept prepared',
  );
  assert.ok(!onServer.rows.some((row) => plannedAtEachCall(row.statement)), JSON.stringify(onServer.rows));

  await sql`insert into jobs (id, kind, run_at, payload, created_at)
    select 'job_' || lpad(n::text, 5, '0'), 'k', 100, '{}', 1 from generate_series(1, 20000) n`.execute(db);
  const wanted = ['job_00007', 'job_12345', 'job_19999'];
  // The backend's counts not yet reported (this transaction's and the ones before it), read around the call.
  const scansOf = async (trx: typeof db) => {
    const { rows } = await sql<{ seq_scan: string; idx_scan: string }>`select seq_scan, idx_scan
      from pg_stat_xact_user_tables where relid = 'jobs'::regclass`.execute(trx);
    return { seq: Number(rows[0]?.seq_scan), byIndex: Number(rows[0]?.idx_scan) };
  };
  const scans = await transact(db, async (trx) => {
    const before = await scansOf(trx);
    assert.deepEqual(
      (await jobsByIds.all(trx, { ids: JSON.stringify([...wanted, 'job_none']) })).map((row) => row.id),
      wanted,
    );
    const after = await scansOf(trx);
    return { seq: after.seq - before.seq, byIndex: after.byIndex > before.byIndex };
  });
  assert.deepEqual(scans, { seq: 0, byIndex: true });
});

test('DATABASE_PREPARED_STATEMENTS=false: nothing is prepared on the server', {
  skip: engine !== 'postgres' ? "server-side statements are PostgreSQL's" : false,
}, async (t) => {
  const { db } = await oneConnection(t, { preparedStatements: false });
  await insertRow(db, 'jobs', job('a'));
  assert.equal((await wholeJob.first(db, { id: 'a' }))?.id, 'a');
  assert.deepEqual((await sql`select name from pg_prepared_statements`.execute(db)).rows, []);
  await sql`alter table jobs add column later text`.execute(db);
  assert.equal((await transact(db, (trx) => wholeJob.first(trx, { id: 'a' })))?.later, null);
});

const moveJob = prepared<{ id: string; runAt: number }>((db, arg) =>
  db
    .updateTable('jobs')
    .set({ run_at: arg('runAt') })
    .where('id', '=', arg('id')),
);

test('writes run later are part of their transaction: seen by the next statement, and a failure fails the whole', async (t) => {
  const { db, drop } = await freshDb();
  t.after(drop);
  await migrateToLatest(db);
  await insertRow(db, 'jobs', job('taken'));

  await transact(db, async (trx) => {
    await insertLater(trx, 'jobs', job('a'));
    await moveJob.later(trx, { id: 'a', runAt: 7 });
    assert.equal((await jobById.first(trx, { id: 'a' }))?.id, 'a');
    await updateByIdLater(trx, 'jobs', 'a', { dedupe_key: 'seen' });
    assert.equal((await jobById.first(trx, { id: 'a' }))?.dedupe_key, 'seen');
  });
  assert.equal((await db.selectFrom('jobs').select('run_at').where('id', '=', 'a').executeTakeFirst())?.run_at, 7);

  // A clash is thrown by the next statement that is awaited, or by the commit, and nothing of the transaction stays.
  const unique = /unique|duplicate key/i;
  await assert.rejects(
    transact(db, async (trx) => {
      await insertRow(trx, 'jobs', job('b'));
      await insertLater(trx, 'jobs', job('taken'));
      await jobById.first(trx, { id: 'b' });
    }),
    unique,
  );
  await assert.rejects(
    transact(db, async (trx) => {
      await insertLater(trx, 'jobs', job('c'));
      await insertLater(trx, 'jobs', job('taken'));
    }),
    unique,
  );
  const ids = (await db.selectFrom('jobs').select('id').orderBy('id').execute()).map((row) => row.id);
  assert.deepEqual(ids, ['a', 'taken']);

  // Outside a transaction a later write is awaited like any other.
  await assert.rejects(insertLater(db, 'jobs', job('taken')), unique);
  // A transaction that throws after writes run later rolls them back.
  await assert.rejects(
    transact(db, async (trx) => {
      await insertLater(trx, 'jobs', job('d'));
      throw new Error('refused');
    }),
    /refused/,
  );
  assert.equal(await jobById.first(db, { id: 'd' }), undefined);
});

test("firstCommitted reads committed rows beside a PostgreSQL transaction, and the transaction's own on SQLite", async (t) => {
  const { db, drop } = await freshDb();
  t.after(drop);
  await migrateToLatest(db);
  await insertRow(db, 'jobs', job('a'));
  const lockJob = prepared<{ id: string }, { id: string; dedupe_key: string | null }>((base, arg) =>
    lockForUpdate(base, base.selectFrom('jobs').select(['id', 'dedupe_key']).where('id', '=', arg('id'))),
  );

  await transact(db, async (trx) => {
    await updateById(trx, 'jobs', 'a', { dedupe_key: 'mine' });
    // PostgreSQL: on the connections kept for reads, so the row as committed, and no wait on the
    // lock this transaction holds. SQLite: the transaction has the one connection.
    const committed = await jobById.firstCommitted(trx, { id: 'a' });
    assert.equal(committed?.dedupe_key, engine === 'postgres' ? null : 'mine');
    // A read that locks is the transaction's own on both.
    assert.equal((await lockJob.firstCommitted(trx, { id: 'a' }))?.dedupe_key, 'mine');
  });
  // Outside a transaction it is a read like `first`.
  assert.equal((await jobById.firstCommitted(db, { id: 'a' }))?.dedupe_key, 'mine');
  assert.equal(await jobById.firstCommitted(db, { id: 'none' }), undefined);
});

test('PostgreSQL: a BEGIN and the writes run later go out with the next awaited statement, one write to the socket', {
  skip: engine !== 'postgres' ? "the pipeline is PostgreSQL's" : false,
}, async (t) => {
  const { db } = await oneConnection(t);
  await jobById.first(db, { id: 'warm' });

  const writes = await postgresWritesDuring(() =>
    transact(db, async (trx) => {
      await insertLater(trx, 'jobs', job('a'));
      await insertLater(trx, 'jobs', job('b'));
      await moveJob.later(trx, { id: 'a', runAt: 7 });
      assert.equal((await jobById.first(trx, { id: 'a' }))?.id, 'a');
      await insertLater(trx, 'jobs', job('c'));
      await updateByIdLater(trx, 'jobs', 'c', { run_at: 5, last_error: 'later' });
    }),
  );
  assert.equal(writes, 2, 'begin, three writes and a read; then two writes and the commit');
  assert.equal((await db.selectFrom('jobs').select('id').execute()).length, 3);
  assert.deepEqual(
    await db.selectFrom('jobs').select(['run_at', 'last_error']).where('id', '=', 'c').executeTakeFirst(),
    {
      run_at: 5,
      last_error: 'later',
    },
  );
});
