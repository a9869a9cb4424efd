import type { Kysely } from 'kysely';

// Secrets at rest (docs/security.md): the recurring token of an authorisation event moves out of
// the event's body into a sealed column; a delivery says whether it may carry it in clear. Values
// written before this are sealed once at start (store/seal-at-rest.ts), recorded in store_tasks,
// because a migration has no service key.
export async function up(db: Kysely<any>): Promise<void> {
  await db.schema.alterTable('events').addColumn('secret_sealed', 'text').execute();
  await db.schema
    .alterTable('webhook_deliveries')
    .addColumn('with_secret', 'integer', (c) => c.notNull().defaultTo(0))
    .execute();
  await db.schema
    .createTable('store_tasks')
    .addColumn('name', 'text', (c) => c.primaryKey())
    .addColumn('done_at', 'bigint', (c) => c.notNull())
    .execute();
}
