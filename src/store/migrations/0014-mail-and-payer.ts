import type { Kysely } from 'kysely';

// Email (docs/email.md) and the payer dashboard's sign-in (docs/payer.md).
export async function up(db: Kysely<any>): Promise<void> {
  // One row per message: what was sent, to whom, about what, and how sending went. Template data
  // holding a secret (a one-time code) is sealed.
  await db.schema
    .createTable('mail_messages')
    .addColumn('id', 'text', (c) => c.primaryKey())
    .addColumn('to_address', 'text', (c) => c.notNull())
    .addColumn('template', 'text', (c) => c.notNull())
    .addColumn('data', 'text', (c) => c.notNull())
    .addColumn('related_type', 'text')
    .addColumn('related_id', 'text')
    .addColumn('user_id', 'text')
    .addColumn('mode', 'text')
    .addColumn('status', 'text', (c) => c.notNull())
    .addColumn('attempts', 'integer', (c) => c.notNull().defaultTo(0))
    .addColumn('last_error', 'text')
    .addColumn('dedupe_key', 'text', (c) => c.unique())
    .addColumn('created_at', 'bigint', (c) => c.notNull())
    .addColumn('sent_at', 'bigint')
    .execute();
  await db.schema.createIndex('mail_messages_to').on('mail_messages').columns(['to_address', 'created_at']).execute();
  await db.schema
    .createIndex('mail_messages_related')
    .on('mail_messages')
    .columns(['related_id', 'created_at'])
    .execute();

  // One-time sign-in codes: sealed, 10 minutes, 5 tries. One live code per email: a new code kills the old.
  await db.schema
    .createTable('payer_codes')
    .addColumn('id', 'text', (c) => c.primaryKey())
    .addColumn('email', 'text', (c) => c.notNull())
    .addColumn('code_sealed', 'text', (c) => c.notNull())
    .addColumn('tries_left', 'integer', (c) => c.notNull())
    .addColumn('expires_at', 'bigint', (c) => c.notNull())
    .addColumn('used_at', 'bigint')
    .addColumn('dead_at', 'bigint')
    .addColumn('created_at', 'bigint', (c) => c.notNull())
    .execute();
  await db.schema.createIndex('payer_codes_email').on('payer_codes').columns(['email', 'created_at']).execute();

  // Server-side payer sessions, found by the SHA-256 of the cookie's value.
  await db.schema
    .createTable('payer_sessions')
    .addColumn('id_hash', 'text', (c) => c.primaryKey())
    .addColumn('email', 'text', (c) => c.notNull())
    .addColumn('csrf_token', 'text', (c) => c.notNull())
    .addColumn('created_at', 'bigint', (c) => c.notNull())
    .addColumn('last_seen_at', 'bigint', (c) => c.notNull())
    .addColumn('expires_at', 'bigint', (c) => c.notNull())
    .addColumn('ended_at', 'bigint')
    .execute();
}
