import { sql, type Kysely } from 'kysely';
import { engineOf } from '../db.ts';
import { rebuildPartial } from './partial-index.ts';

// Indexes that nearly every row of their table entered for nothing (docs/performance.md, "What a
// call costs on PostgreSQL"). A change of an indexed column writes the row's every index entry
// again, so a delivery or a payment paid for each index twice: when it was made and when its
// outcome was recorded.
// - An endpoint's failed deliveries are read by the endpoint and the time they failed: only failed
//   deliveries are indexed.
// - A test clock's jobs are read by the clock: only jobs of a clock are indexed.
// - Executions still awaiting the bank are read oldest first: only payments awaiting it are
//   indexed by (status, updated_at).
// - A payment is found by its bank authorisation's state, which recurring executions and
//   subscription charges have none of: on PostgreSQL only payments with one are indexed, still
//   unique. SQLite keeps the column's UNIQUE constraint, which it cannot drop from a table.
export async function up(db: Kysely<any>): Promise<void> {
  await rebuildPartial(
    db,
    'webhook_deliveries_failed',
    'webhook_deliveries',
    ['endpoint_id', 'failed_at'],
    sql`status = 'failed'`,
  );
  await rebuildPartial(db, 'jobs_clock', 'jobs', ['clock_id', 'run_at'], sql`clock_id is not null`);
  await rebuildPartial(db, 'payments_status', 'payments', ['status', 'updated_at'], sql`status = 'awaiting-consent'`);
  if (engineOf(db) === 'postgres') {
    await db.schema.alterTable('payments').dropConstraint('payments_auth_state_key').execute();
    await db.schema
      .createIndex('payments_auth_state_key')
      .on('payments')
      .column('auth_state')
      .unique()
      .where(sql<boolean>`auth_state is not null`)
      .execute();
  }
}
