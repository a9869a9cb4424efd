import type { Kysely } from 'kysely';

// Passkeys as a second kind of second step (docs/team.md, "Passkeys"): a member with two-factor
// sign-in on may add security keys or platform passkeys (WebAuthn). Only each credential's public
// key is kept; `counter` is the authenticator's signature counter, moved forward by one guarded
// update per sign-in. A ceremony's challenge waits on the row it belongs to (the member's, for
// adding one; the pending sign-in's, for signing in) until it is used once or ends.
export async function up(db: Kysely<any>): Promise<void> {
  await db.schema
    .createTable('two_factor_passkeys')
    .addColumn('id', 'text', (c) => c.primaryKey())
    .addColumn('member_id', 'text', (c) => c.notNull())
    .addColumn('credential_id', 'text', (c) => c.notNull().unique())
    .addColumn('public_key', 'text', (c) => c.notNull())
    .addColumn('counter', 'bigint', (c) => c.notNull())
    .addColumn('transports', 'text', (c) => c.notNull())
    .addColumn('name', 'text', (c) => c.notNull())
    .addColumn('created_at', 'bigint', (c) => c.notNull())
    .addColumn('last_used_at', 'bigint')
    .execute();
  await db.schema.createIndex('two_factor_passkeys_member').on('two_factor_passkeys').column('member_id').execute();
  await db.schema.alterTable('two_factor_members').addColumn('passkey_challenge', 'text').execute();
  await db.schema.alterTable('two_factor_members').addColumn('passkey_challenge_expires_at', 'bigint').execute();
  await db.schema.alterTable('two_factor_pending_sign_ins').addColumn('passkey_challenge', 'text').execute();
}
