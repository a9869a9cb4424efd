import { sql, type Kysely } from 'kysely';

// Claiming (src/jobs/worker.ts, src/jobs/batch-lane.ts) asks for the earliest unfailed jobs due
// now, in run_at order. PostgreSQL cannot take that order from jobs_due (failed_at, run_at):
// `failed_at is null` is not an equality, so it does not fix the leading column. Every claim, in
// every process, several times a second, scanned and sorted the whole table instead (10 ms with
// 40,000 jobs, most of them due later). Indexes of the unfailed jobs by run_at (the worker) and by
// kind and run_at (a lane runs one kind) hand out the earliest first; they replace jobs_due, with
// an index of the failed ones alone for the metrics' count (it holds no row of a healthy queue).
export async function up(db: Kysely<any>): Promise<void> {
  await db.schema.dropIndex('jobs_due').execute();
  await db.schema
    .createIndex('jobs_claim')
    .on('jobs')
    .column('run_at')
    .where(sql.ref('failed_at'), 'is', null)
    .execute();
  await db.schema
    .createIndex('jobs_claim_kind')
    .on('jobs')
    .columns(['kind', 'run_at'])
    .where(sql.ref('failed_at'), 'is', null)
    .execute();
  await db.schema
    .createIndex('jobs_failed')
    .on('jobs')
    .column('failed_at')
    .where(sql.ref('failed_at'), 'is not', null)
    .execute();
}
