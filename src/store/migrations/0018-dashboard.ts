import type { Kysely } from 'kysely';

// The merchant dashboard (docs/dashboard.md): server-side sessions found by the SHA-256 of the
// cookie's value, password-reset tokens by the SHA-256 of the emailed token, and when each API key
// was last used (a column of the merchants module's api_keys, shown in the dashboard's key list).
export async function up(db: Kysely<any>): Promise<void> {
  await db.schema
    .createTable('dashboard_sessions')
    .addColumn('id_hash', 'text', (c) => c.primaryKey())
    .addColumn('user_id', 'text', (c) => c.notNull())
    .addColumn('csrf_token', 'text', (c) => c.notNull())
    .addColumn('created_at', 'bigint', (c) => c.notNull())
    .addColumn('last_seen_at', 'bigint', (c) => c.notNull())
    .addColumn('expires_at', 'bigint', (c) => c.notNull())
    .addColumn('ended_at', 'bigint')
    .addColumn('user_agent', 'text')
    .execute();
  await db.schema
    .createIndex('dashboard_sessions_user')
    .on('dashboard_sessions')
    .columns(['user_id', 'created_at'])
    .execute();
  await db.schema
    .createTable('dashboard_resets')
    .addColumn('token_hash', 'text', (c) => c.primaryKey())
    .addColumn('user_id', 'text', (c) => c.notNull())
    .addColumn('created_at', 'bigint', (c) => c.notNull())
    .addColumn('expires_at', 'bigint', (c) => c.notNull())
    .addColumn('used_at', 'bigint')
    .execute();
  await db.schema
    .createIndex('dashboard_resets_user')
    .on('dashboard_resets')
    .columns(['user_id', 'created_at'])
    .execute();
  await db.schema.alterTable('api_keys').addColumn('last_used_at', 'bigint').execute();
}
