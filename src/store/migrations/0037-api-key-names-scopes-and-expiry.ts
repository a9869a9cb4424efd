import type { Kysely } from 'kysely';

// API keys get a name, the label of whoever created them, what they may do, and when a rolled key
// stops (docs/api-keys.md). `permissions` is null for a full key, `read_only` for a read-only one,
// or a comma-separated list such as `requests:write,refunds:read`. `expires_at` is set on the old
// key when a key is rolled with a grace period; past it the key is refused as a revoked one.
// Keys made before names existed are named after their mode; their creator is unknown (null).
export async function up(db: Kysely<any>): Promise<void> {
  await db.schema
    .alterTable('api_keys')
    .addColumn('name', 'text', (c) => c.notNull().defaultTo(''))
    .execute();
  await db.schema.alterTable('api_keys').addColumn('created_by', 'text').execute();
  await db.schema.alterTable('api_keys').addColumn('permissions', 'text').execute();
  await db.schema.alterTable('api_keys').addColumn('expires_at', 'bigint').execute();
  await db.updateTable('api_keys').set({ name: 'Live key' }).where('mode', '=', 'live').execute();
  await db.updateTable('api_keys').set({ name: 'Test key' }).where('mode', '=', 'test').execute();
}
