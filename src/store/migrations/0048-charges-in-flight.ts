import { sql, type Kysely } from 'kysely';

// The charges handed to a bank and not yet recorded, few at any time, found without reading every
// charge ever made: the subscriptions module makes sure each has its job when a process starts
// (docs/subscriptions.md, "Control").
export async function up(db: Kysely<any>): Promise<void> {
  await db.schema
    .createIndex('subscription_charges_in_flight')
    .on('subscription_charges')
    .column('subscription_id')
    .where(sql<boolean>`status = 'in_flight'`)
    .execute();
}
