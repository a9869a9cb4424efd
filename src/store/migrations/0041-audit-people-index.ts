import { sql, type Kysely } from 'kysely';

// A member's, payer's or operator's changes are read through an index; an API key's and the
// service's are not (docs/audit.md, "Reading the trail"). Keys and jobs make nearly every record,
// so an index of them cost every create and charge a B-tree insert, while a filter on one of them
// finds its records densely in the merchant's newest-first order without one.
export async function up(db: Kysely<any>): Promise<void> {
  await db.schema.dropIndex('audit_events_actor').execute();
  await db.schema
    .createIndex('audit_events_people')
    .on('audit_events')
    .columns(['user_id', 'actor_id', 'seq'])
    .where(sql<boolean>`actor_kind in ('member', 'payer', 'operator')`)
    .execute();
}
