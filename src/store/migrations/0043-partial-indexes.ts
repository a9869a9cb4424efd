import { sql, type Kysely } from 'kysely';

// Two indexes that nearly every row of their table entered for nothing (docs/performance.md,
// "What a call costs on PostgreSQL"): a webhook delivery's failures are read by the endpoint and
// the time they failed, and only failed deliveries are wanted, yet every delivery entered the
// index when it was queued and again when its outcome was recorded; a job's test clock is read by
// its id, and only jobs of a test clock have one, yet every job entered the index with none.
export async function up(db: Kysely<any>): Promise<void> {
  await db.schema.dropIndex('webhook_deliveries_failed').execute();
  await db.schema
    .createIndex('webhook_deliveries_failed')
    .on('webhook_deliveries')
    .columns(['endpoint_id', 'failed_at'])
    .where(sql<boolean>`status = 'failed'`)
    .execute();
  await db.schema.dropIndex('jobs_clock').execute();
  await db.schema
    .createIndex('jobs_clock')
    .on('jobs')
    .columns(['clock_id', 'run_at'])
    .where(sql<boolean>`clock_id is not null`)
    .execute();
}
