import type { Kysely } from 'kysely';

// The payer's account for a successful payment, as the bank released it (debtor-account), kept
// for refunds: sealed under the service key like other secrets (docs/banks.md, docs/security.md).
export async function up(db: Kysely<any>): Promise<void> {
  await db.schema.alterTable('payments').addColumn('payer_account_sealed', 'text').execute();
}
