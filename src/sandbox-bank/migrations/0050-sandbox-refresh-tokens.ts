import type { Kysely } from 'kysely';

// The bank issues a refresh token with each enduring consent's access token and rotates it on
// every refresh (grant_type=refresh_token), so that access tokens can expire as a live bank's do
// (docs/banks.md, "The sandbox bank"). Kept as hashes, as every other token of the bank.
export async function up(db: Kysely<any>): Promise<void> {
  await db.schema
    .createTable('sandbox_refresh_tokens')
    .addColumn('token_hash', 'text', (c) => c.primaryKey())
    .addColumn('client_id', 'text', (c) => c.notNull())
    .addColumn('consent_id', 'text', (c) => c.notNull())
    .addColumn('created_at', 'bigint', (c) => c.notNull())
    .addColumn('used_at', 'bigint')
    .addColumn('revoked_at', 'bigint')
    .execute();
  await db.schema
    .createIndex('sandbox_refresh_tokens_consent')
    .on('sandbox_refresh_tokens')
    .column('consent_id')
    .execute();
  // The test hook that expires a consent's access tokens finds them by their consent.
  await db.schema.createIndex('sandbox_tokens_consent').on('sandbox_tokens').column('consent_id').execute();
}
