import type { Kysely } from 'kysely';

// The payer's account behind each enduring consent (a recurring consent or a subscription), sealed
// like payments.payer_account_sealed: an enduring consent moves money from the one account the
// payer authorised it on, so the account the bank released for its first successful payment is
// the account of every later one, which take it from here instead of asking the bank again
// (docs/banks.md).
export async function up(db: Kysely<any>): Promise<void> {
  await db.schema
    .createTable('enduring_payer_accounts')
    .addColumn('enduring_id', 'text', (c) => c.primaryKey())
    .addColumn('payer_account_sealed', 'text', (c) => c.notNull())
    .addColumn('created_at', 'bigint', (c) => c.notNull())
    .execute();
}
