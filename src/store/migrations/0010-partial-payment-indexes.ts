import { sql, type Kysely } from 'kysely';

// Most payments leave some of these columns empty: a checkout payment has no consent, a
// subscription charge no idempotency key. Indexing only the rows that have a value keeps every
// payment insert from writing index entries no query will ever look up.
const partial: Array<{ name: string; columns: string[]; present: string; unique?: boolean }> = [
  { name: 'payments_consent', columns: ['recurring_consent_id', 'created_at'], present: 'recurring_consent_id' },
  { name: 'payments_subscription', columns: ['subscription_id', 'id'], present: 'subscription_id' },
  {
    name: 'payments_idempotency',
    columns: ['user_id', 'mode', 'idempotency_key'],
    present: 'idempotency_key',
    unique: true,
  },
];

export async function up(db: Kysely<any>): Promise<void> {
  for (const index of partial) {
    await db.schema.dropIndex(index.name).execute();
    const create = db.schema
      .createIndex(index.name)
      .on('payments')
      .columns(index.columns)
      .where(sql.ref(index.present), 'is not', null);
    await (index.unique ? create.unique() : create).execute();
  }
}
