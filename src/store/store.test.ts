import { test } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import { sql, type Kysely } from 'kysely';
import { engine, freshDb, pgUrl, type TestDb } from '../../test/helpers.ts';
import { prepared } from './prepared.ts';
import { openStore, storeOf, transact, type Store } from './store.ts';

// One test per promise of docs/store.md that holds on both engines (the SQLite-only ones, about
// group commit and its fsync, are in group-commit.test.ts). Each runs on the engine of the pass.

async function storeWithItems(t: import('node:test').TestContext): Promise<{ store: Store; testDb: TestDb }> {
  const testDb = await freshDb();
  t.after(() => testDb.drop());
  const store = storeOf(testDb.db);
  await sql`create table items (id integer primary key, label text not null)`.execute(store.db);
  return { store, testDb };
}

/** What another connection sees: committed rows only. */
async function committedIds(testDb: TestDb): Promise<number[]> {
  const other =
    engine === 'postgres'
      ? openStore({ engine: 'postgres', url: pgUrl, schema: testDb.schema, poolSize: 1 })
      : openStore({ engine: 'sqlite', file: testDb.file! });
  try {
    const rows = await sql<{ id: number }>`select id from items order by id`.execute(other.db);
    return rows.rows.map((row) => Number(row.id));
  } finally {
    await other.close();
  }
}

test('a transaction answers with its result once committed, and what it wrote is then seen by every connection', async (t) => {
  const { store, testDb } = await storeWithItems(t);
  const result = await store.transaction(async (trx) => {
    await sql`insert into items (id, label) values (1, 'one')`.execute(trx);
    return 'done';
  });
  assert.equal(result, 'done');
  assert.deepEqual(await committedIds(testDb), [1]);
});

test('a transaction that throws leaves nothing behind, and its error reaches the caller', async (t) => {
  const { store, testDb } = await storeWithItems(t);
  await assert.rejects(
    store.transaction(async (trx) => {
      await sql`insert into items (id, label) values (1, 'one')`.execute(trx);
      throw new Error('changed my mind');
    }),
    /changed my mind/,
  );
  assert.deepEqual(await committedIds(testDb), []);
});

test('a relaxed transaction answers with { result, durable }; durable settles once what it read is on disk', async (t) => {
  const { store, testDb } = await storeWithItems(t);
  const { result, durable } = await store.transaction(
    async (trx) => {
      await sql`insert into items (id, label) values (2, 'lease')`.execute(trx);
      return 'claimed';
    },
    { durability: 'relaxed' },
  );
  assert.equal(result, 'claimed');
  if (engine === 'postgres') assert.equal(durable, null, 'what it read was committed, so on disk');
  await durable;
  // Its own writes still commit with their batch (they are only not waited for).
  await store.transaction(async () => undefined);
  assert.deepEqual(await committedIds(testDb), [2]);
});

test('PostgreSQL: a relaxed transaction alone commits without waiting for its WAL flush', {
  skip: engine !== 'postgres' ? 'SQLite relaxes its own fsync (group-commit.test.ts)' : false,
}, async (t) => {
  const { testDb } = await storeWithItems(t);
  // One connection, so the last read runs where the relaxed transaction ran.
  const store = openStore({ engine: 'postgres', url: pgUrl, schema: testDb.schema, poolSize: 1 });
  t.after(() => store.close());
  const setting = async (trx: Kysely<any>) =>
    (await sql<{ value: string }>`select current_setting('synchronous_commit') as value`.execute(trx)).rows[0].value;
  const { result } = await store.transaction((trx) => setting(trx), { durability: 'relaxed' });
  assert.equal(result, 'off');
  assert.equal(await store.transaction((trx) => setting(trx)), 'on', 'a full transaction waits, as ever');
  assert.equal(await setting(store.db), 'on', 'and the connection keeps no trace of the relaxed one');
});

test('afterCommit work runs once the transaction has committed, once per hook, and never when it rolls back', async (t) => {
  const { store } = await storeWithItems(t);
  const ran: string[] = [];
  const hook = () => ran.push('woken');
  await store.transaction(async (trx) => {
    store.afterCommit(trx, hook);
    store.afterCommit(trx, hook);
    await sql`insert into items (id, label) values (1, 'one')`.execute(trx);
    await new Promise((resolve) => setTimeout(resolve, 5));
    assert.deepEqual(ran, [], 'not before the commit');
  });
  assert.deepEqual(ran, ['woken'], 'once, after the commit');
  await store
    .transaction(async (trx) => {
      store.afterCommit(trx, () => ran.push('rolled back'));
      throw new Error('no');
    })
    .catch(() => {});
  await new Promise((resolve) => setTimeout(resolve, 5));
  assert.deepEqual(ran, ['woken']);
});

test('transact joins the transaction it is given, and begins one on the store otherwise', async (t) => {
  const { store, testDb } = await storeWithItems(t);
  await assert.rejects(
    store.transaction(async (trx) => {
      await transact(trx, (same) => sql`insert into items (id, label) values (1, 'inner')`.execute(same));
      throw new Error('the outer transaction fails');
    }),
  );
  assert.deepEqual(await committedIds(testDb), [], 'the inner work was part of the outer transaction');
  await transact(store.db, (trx) => sql`insert into items (id, label) values (2, 'own')`.execute(trx));
  assert.deepEqual(await committedIds(testDb), [2]);
});

test('the engine-specific extras answer on their engine only', async (t) => {
  const { store, testDb } = await storeWithItems(t);
  await store.check();
  if (engine === 'sqlite') {
    assert.equal(typeof store.commitsElsewhere(), 'number');
    const target = path.join(path.dirname(testDb.file!), 'copy.db');
    await store.backupTo(target);
    assert.ok(fs.statSync(target).size > 0);
    await assert.rejects(store.backupTo(target), /already exists/);
  } else {
    assert.equal(store.commitsElsewhere(), null, 'nothing can be cached across processes');
    assert.deepEqual(await store.readNow('select 1 as one', []), [{ one: 1 }], 'a plain read goes to the shared reads');
    assert.equal(store.readNow('select 1 for update', []), null, 'a locking read takes a pooled connection');
    assert.equal(store.readNow('delete from items', []), null, 'so does a write');
    await assert.rejects(store.backupTo('/tmp/never.db'), /pg_dump/);
  }
});

test('the store keeps its rules in its API: no marker statement, no WeakMap side channel, no patched driver', () => {
  const folder = path.resolve('src/store');
  const sources = fs
    .readdirSync(folder, { recursive: true, encoding: 'utf8' })
    .filter((file) => file.endsWith('.ts') && !file.endsWith('.test.ts') && !file.startsWith('migrations'));
  for (const file of sources) {
    const text = fs.readFileSync(path.join(folder, file), 'utf8');
    assert.doesNotMatch(text, /WeakMap/, `${file}: a WeakMap`);
    assert.doesNotMatch(text, /\.query\s*=\s*/, `${file}: a driver's query replaced`);
    assert.doesNotMatch(text, /select 'tono:/, `${file}: a marker statement`);
  }
});

test('a statement read again after the schema changed names its columns as they now are', async (t) => {
  const { store } = await storeWithItems(t);
  // A prepared query is kept parsed by the engine (on PostgreSQL, prepared on the server by name).
  const itemById = prepared<{ id: number }, Record<string, unknown>>((db, arg) =>
    db
      .selectFrom('items' as never)
      .selectAll()
      .where('id' as never, '=', arg('id') as never),
  );
  await sql`insert into items (id, label) values (1, 'tea')`.execute(store.db);
  await sql`alter table items add column note text`.execute(store.db);
  assert.deepEqual(
    await store.db
      .selectFrom('items' as never)
      .selectAll()
      .execute(),
    [{ id: 1, label: 'tea', note: null }],
  );
  assert.deepEqual(await itemById.first(store.db, { id: 1 }), { id: 1, label: 'tea', note: null });
  // The same `select *` after a column moves: dropped, and added again after another.
  await sql`alter table items drop column label`.execute(store.db);
  await sql`alter table items add column label text not null default 'coffee'`.execute(store.db);
  assert.deepEqual(
    await store.db
      .selectFrom('items' as never)
      .selectAll()
      .execute(),
    [{ id: 1, note: null, label: 'coffee' }],
  );
  // inside a transaction too, where a stale plan would abort it
  const inside = await store.transaction((trx) => itemById.first(trx, { id: 1 }));
  assert.deepEqual(inside, { id: 1, note: null, label: 'coffee' });
});
