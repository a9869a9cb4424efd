import { test } from 'node:test';
import assert from 'node:assert/strict';
import { sql, type CompiledQuery } from 'kysely';
import { engine, freshDb } from '../../test/helpers.ts';
import { migrateToLatest } from './migrate.ts';
import { migrations } from './migrations/index.ts';
import type { Db } from './db.ts';

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

test('failed deliveries, test-clock jobs, executions awaiting the bank and authorisation states are read through indexes that hold only those rows', async (t) => {
  const { db, drop } = await freshDb();
  t.after(drop);
  await migrateToLatest(db);
  // As deliveries.repo.ts, queue.ts and payments.repo.ts ask (a status is a literal, so that
  // SQLite can take the index). SQLite keeps payments.auth_state's UNIQUE constraint as it was.
  const reads: Record<string, { compile(): CompiledQuery }> = {
    webhook_deliveries_failed: db
      .selectFrom('webhook_deliveries')
      .select('id')
      .where('endpoint_id', '=', 'webhook_1')
      .where('status', '=', sql.lit('failed'))
      .where('failed_at', '>=', 1),
    jobs_clock: db.selectFrom('jobs').select('id').where('clock_id', '=', 'clock_1').where('run_at', '<=', 5),
    payments_status: db
      .selectFrom('payments')
      .select('id')
      .where('status', '=', sql.lit('awaiting-consent'))
      .where('recurring_consent_id', 'is not', null)
      .orderBy('updated_at')
      .limit(10),
  };
  if (engine === 'postgres')
    reads.payments_auth_state_key = db.selectFrom('payments').select('id').where('auth_state', '=', 'state_1');
  for (const [index, read] of Object.entries(reads)) {
    const compiled = read.compile();
    const plan = await db.transaction().execute(async (trx) => {
      if (engine === 'postgres') {
        await sql`set local enable_seqscan = off`.execute(trx);
        const { rows } = await trx.executeQuery<Record<string, string>>({
          ...compiled,
          sql: `explain ${compiled.sql}`,
        });
        return rows.map((row) => Object.values(row).join(' ')).join('\n');
      }
      const { rows } = await trx.executeQuery<{ detail: string }>({
        ...compiled,
        sql: `explain query plan ${compiled.sql}`,
      });
      return rows.map((row) => row.detail).join('\n');
    });
    assert.match(plan, new RegExp(`\\b${index}\\b`), plan);
    const definition = await indexDefinition(db, index);
    assert.match(definition ?? '', /\bwhere\b/i, `${index} is partial: ${definition}`);
    if (index === 'payments_auth_state_key') assert.match(definition ?? '', /\bunique\b/i, `${index} is unique`);
  }
});

async function indexDefinition(db: Db, index: string): Promise<string | undefined> {
  const query =
    engine === 'postgres'
      ? sql<{
          d: string;
        }>`select indexdef as d from pg_indexes where indexname = ${index} and schemaname = current_schema()`
      : sql<{ d: string }>`select sql as d from sqlite_master where name = ${index}`;
  return (await query.execute(db)).rows[0]?.d;
}
