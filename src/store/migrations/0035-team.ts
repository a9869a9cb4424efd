import { sql, type Kysely } from 'kysely';
import { newId } from '../../shared/ids.ts';

// A merchant's team (docs/team.md): the people who sign in to its dashboard, each with a role, and
// the invitations that bring new ones in. Every existing merchant's sign-in (the email and password
// hash on `users`) becomes its first member, an owner, and every session and reset link in flight is
// given to that member, so nobody is signed out by the upgrade.
export async function up(db: Kysely<any>): Promise<void> {
  await db.schema
    .createTable('members')
    .addColumn('id', 'text', (c) => c.primaryKey())
    .addColumn('user_id', 'text', (c) => c.notNull().references('users.id'))
    .addColumn('email', 'text', (c) => c.notNull())
    .addColumn('name', 'text')
    .addColumn('password_hash', 'text', (c) => c.notNull())
    .addColumn('role', 'text', (c) => c.notNull())
    .addColumn('created_at', 'bigint', (c) => c.notNull())
    .addColumn('invited_by', 'text')
    .addColumn('removed_at', 'bigint')
    .execute();
  // Sign-in is by email alone, so an email names one member at most until that member is removed.
  await sql`create unique index members_email_live on members (email) where removed_at is null`.execute(db);
  await db.schema.createIndex('members_owner').on('members').columns(['user_id', 'created_at']).execute();

  await db.schema
    .createTable('invitations')
    .addColumn('id', 'text', (c) => c.primaryKey())
    .addColumn('token_hash', 'text', (c) => c.notNull().unique())
    .addColumn('user_id', 'text', (c) => c.notNull().references('users.id'))
    .addColumn('email', 'text', (c) => c.notNull())
    .addColumn('role', 'text', (c) => c.notNull())
    .addColumn('invited_by', 'text', (c) => c.notNull())
    .addColumn('created_at', 'bigint', (c) => c.notNull())
    .addColumn('expires_at', 'bigint', (c) => c.notNull())
    .addColumn('accepted_at', 'bigint')
    .addColumn('revoked_at', 'bigint')
    .execute();
  await db.schema.createIndex('invitations_owner').on('invitations').columns(['user_id', 'created_at']).execute();

  await db.schema
    .createTable('team_settings')
    .addColumn('user_id', 'text', (c) => c.primaryKey().references('users.id'))
    .addColumn('support_refund_limit_cents', 'integer', (c) => c.notNull())
    .addColumn('updated_at', 'bigint', (c) => c.notNull())
    .execute();

  const users = await db.selectFrom('users').select(['id', 'email', 'password_hash', 'created_at']).execute();
  for (let i = 0; i < users.length; i += 200) {
    const values = users.slice(i, i + 200).map((user) => ({
      id: newId('member'),
      user_id: user.id,
      email: String(user.email).toLowerCase(),
      name: null,
      password_hash: user.password_hash,
      role: 'owner',
      created_at: user.created_at,
      invited_by: null,
      removed_at: null,
    }));
    await db.insertInto('members').values(values).execute();
  }

  const ownerOf = sql`(select members.id from members where members.user_id = `;
  await db.schema.alterTable('dashboard_sessions').addColumn('member_id', 'text').execute();
  await sql`update dashboard_sessions set member_id = ${ownerOf}dashboard_sessions.user_id)`.execute(db);
  await db.schema
    .createIndex('dashboard_sessions_member')
    .on('dashboard_sessions')
    .columns(['member_id', 'created_at'])
    .execute();
  await db.schema.alterTable('dashboard_resets').addColumn('member_id', 'text').execute();
  await sql`update dashboard_resets set member_id = ${ownerOf}dashboard_resets.user_id)`.execute(db);
}
