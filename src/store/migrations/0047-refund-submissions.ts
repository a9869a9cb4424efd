import type { Kysely } from 'kysely';

// A refund's first submission to the merchant's bank is recorded before the call is made. From then
// on the bank may hold a payment under the refund's key, whatever answer was lost, so the refund is
// only ever sent again under the same key and authority (docs/refunds.md, "Unknown answers").
export async function up(db: Kysely<any>): Promise<void> {
  await db.schema.alterTable('refunds').addColumn('submitted_at', 'bigint').execute();
}
