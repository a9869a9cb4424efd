import type { Kysely } from 'kysely';

// The mounted sandbox bank's client secret, made at the first start and kept sealed
// (src/modules/banks/sandbox-client.ts), where a fixed secret in the source used to be.
export async function up(db: Kysely<any>): Promise<void> {
  await db.schema
    .createTable('bank_client_secrets')
    .addColumn('client_id', 'text', (c) => c.primaryKey())
    .addColumn('secret_sealed', 'text', (c) => c.notNull())
    .addColumn('created_at', 'bigint', (c) => c.notNull())
    .execute();
}
