import type { Kysely } from 'kysely';

// The service key's check value (store/key-check.ts): a constant sealed under the key by the first
// start, opened by every later start before it opens or seals any secret, so a start with another
// key refuses rather than seal new secrets under it.
export async function up(db: Kysely<any>): Promise<void> {
  await db.schema
    .createTable('secret_key_check')
    .addColumn('name', 'text', (c) => c.primaryKey())
    .addColumn('sealed', 'text', (c) => c.notNull())
    .addColumn('created_at', 'bigint', (c) => c.notNull())
    .execute();
}
