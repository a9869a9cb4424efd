import type { Kysely } from 'kysely';

// Two-factor sign-in to the merchant dashboard (docs/team.md, "Two-factor sign-in"). Keyed by the
// member who signs in (`member_id`), except the team's requirement, which is the merchant's
// (`user_id`). The TOTP secret is sealed; recovery codes and pending sign-in tokens are SHA-256
// hashes. `last_step` is the time step of the last code accepted, moved forward by one guarded
// update, so a code is accepted once.
export async function up(db: Kysely<any>): Promise<void> {
  await db.schema
    .createTable('two_factor_members')
    .addColumn('member_id', 'text', (c) => c.primaryKey())
    .addColumn('totp_secret_sealed', 'text', (c) => c.notNull())
    .addColumn('enabled_at', 'bigint')
    .addColumn('last_step', 'bigint')
    .addColumn('created_at', 'bigint', (c) => c.notNull())
    .addColumn('updated_at', 'bigint', (c) => c.notNull())
    .execute();

  await db.schema
    .createTable('two_factor_recovery_codes')
    .addColumn('member_id', 'text', (c) => c.notNull())
    .addColumn('code_hash', 'text', (c) => c.notNull())
    .addColumn('created_at', 'bigint', (c) => c.notNull())
    .addColumn('used_at', 'bigint')
    .addPrimaryKeyConstraint('two_factor_recovery_codes_pk', ['member_id', 'code_hash'])
    .execute();

  await db.schema
    .createTable('two_factor_pending_sign_ins')
    .addColumn('token_hash', 'text', (c) => c.primaryKey())
    .addColumn('member_id', 'text', (c) => c.notNull())
    .addColumn('user_id', 'text', (c) => c.notNull().references('users.id'))
    .addColumn('step', 'text', (c) => c.notNull())
    .addColumn('next_path', 'text', (c) => c.notNull())
    .addColumn('created_at', 'bigint', (c) => c.notNull())
    .addColumn('expires_at', 'bigint', (c) => c.notNull())
    .addColumn('used_at', 'bigint')
    .execute();
  await db.schema
    .createIndex('two_factor_pending_sign_ins_member')
    .on('two_factor_pending_sign_ins')
    .columns(['member_id', 'expires_at'])
    .execute();

  await db.schema
    .createTable('two_factor_team_settings')
    .addColumn('user_id', 'text', (c) => c.primaryKey().references('users.id'))
    .addColumn('required', 'integer', (c) => c.notNull())
    .addColumn('updated_at', 'bigint', (c) => c.notNull())
    .execute();
}
