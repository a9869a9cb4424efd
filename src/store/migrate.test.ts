import { test } from 'node:test';
import assert from 'node:assert/strict';
import { sql } from 'kysely';
import { engine, freshDb } from '../../test/helpers.ts';
import { migrateToLatest } from './migrate.ts';
import { migrations } from './migrations/index.ts';

test('migrating twice applies every migration once, then nothing', async (t) => {
  const { db, drop } = await freshDb();
  t.after(drop);
  assert.deepEqual(await migrateToLatest(db), Object.keys(migrations));
  assert.deepEqual(await migrateToLatest(db), []);
});

// Several Tono databases (or test schemas) can share one PostgreSQL database. Columns and schemas
// dropped in one of them while another migrates must not fail the other's migration.
test('PostgreSQL: a migration is not disturbed by columns dropped in another schema meanwhile', {
  skip: engine !== 'postgres' && 'PostgreSQL only',
}, async (t) => {
  const neighbour = await freshDb();
  t.after(neighbour.drop);
  await sql`create table churn (id integer)`.execute(neighbour.db);
  let churning = true;
  const churn = (async () => {
    for (let i = 0; churning; i++) {
      await sql.raw(`alter table churn add column c${i} integer`).execute(neighbour.db);
      await sql.raw(`alter table churn drop column c${i}`).execute(neighbour.db);
      // A dropped column still counts towards PostgreSQL's 1,600 per table: start a new table now and then.
      if (i % 500 === 499) await sql`drop table churn; create table churn (id integer)`.execute(neighbour.db);
    }
  })();
  try {
    for (let round = 0; round < 8; round++) {
      const mine = await freshDb();
      try {
        assert.equal((await migrateToLatest(mine.db)).length, Object.keys(migrations).length);
      } finally {
        await mine.drop();
      }
    }
  } finally {
    churning = false;
    await churn;
  }
});
