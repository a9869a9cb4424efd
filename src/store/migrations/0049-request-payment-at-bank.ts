import type { Kysely } from 'kysely';

// A single request's payment claimed for the bank and not yet settled, on the request's own row, so
// deleting or expiring the request can refuse or wait without reading another module's table: a
// payment the payer approved must still make its request paid (docs/checkout.md).
export async function up(db: Kysely<any>): Promise<void> {
  await db.schema.alterTable('requests').addColumn('payment_at_bank', 'text').execute();
}
