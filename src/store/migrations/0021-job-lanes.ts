import { sql, type Kysely } from 'kysely';

// A job a batched lane claims (webhook delivery, mail) carries its lane, and the generic worker's
// claim index leaves those jobs out. The worker used to skip them with `kind not in (…)` while
// walking the run_at index, so every poll stepped over every due delivery and message: with
// 10,000 receipts waiting for the mail lane, the worker's claims took a third of the process's CPU.
// Jobs queued before this migration get their lane from their kind.
export async function up(db: Kysely<any>): Promise<void> {
  await db.schema.alterTable('jobs').addColumn('lane', 'text').execute();
  await db
    .updateTable('jobs')
    .set({ lane: sql.ref('kind') })
    .where('kind', 'in', ['webhook.deliver', 'mail.send'])
    .execute();
  await db.schema.dropIndex('jobs_claim').execute();
  await db.schema
    .createIndex('jobs_claim')
    .on('jobs')
    .column('run_at')
    .where(sql<boolean>`failed_at is null and lane is null`)
    .execute();
}
