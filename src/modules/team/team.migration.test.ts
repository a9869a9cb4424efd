import { test } from 'node:test';
import assert from 'node:assert/strict';
import { freshDb } from '../../../test/helpers.ts';
import { hashPassword } from '../../shared/crypto.ts';
import { migrateTo, migrateToLatest } from '../../store/migrate.ts';
import { checkMemberPassword } from './team.service.ts';

// Migration 0035 makes each merchant's sign-in its first member, an owner, and gives the sessions
// and reset links in flight to that member.

test('0035: every merchant gets an owner member with its email and password; sessions and resets belong to it', async (t) => {
  const { db, drop } = await freshDb();
  t.after(drop);
  await migrateTo(db, '0033-event-delivery-summaries');
  const hash = await hashPassword('correct horse battery');
  for (const [id, email] of [
    ['user_1', 'Owner@Kowhai.example'],
    ['user_2', 'tui@example.com'],
  ])
    await db
      .insertInto('users' as never)
      .values({ id, name: id, email, password_hash: hash, created_at: 5, updated_at: 5 } as never)
      .execute();
  await db
    .insertInto('dashboard_sessions' as never)
    .values({
      id_hash: 'h1',
      user_id: 'user_1',
      csrf_token: 'c',
      created_at: 1,
      last_seen_at: 1,
      expires_at: 9,
      ended_at: null,
      user_agent: null,
    } as never)
    .execute();
  await db
    .insertInto('dashboard_resets' as never)
    .values({ token_hash: 't1', user_id: 'user_2', created_at: 1, expires_at: 9, used_at: null } as never)
    .execute();
  await migrateToLatest(db);

  const members = await db.selectFrom('members').selectAll().orderBy('user_id').execute();
  assert.deepEqual(
    members.map((m) => [m.user_id, m.email, m.role, m.password_hash === hash, Number(m.created_at), m.removed_at]),
    [
      ['user_1', 'owner@kowhai.example', 'owner', true, 5, null],
      ['user_2', 'tui@example.com', 'owner', true, 5, null],
    ],
  );
  assert.match(members[0].id, /^mem_[0-9A-Z]{26}$/);
  const session = await db.selectFrom('dashboard_sessions').select('member_id').executeTakeFirstOrThrow();
  assert.equal(session.member_id, members[0].id);
  const reset = await db.selectFrom('dashboard_resets').select('member_id').executeTakeFirstOrThrow();
  assert.equal(reset.member_id, members[1].id);
  // The merchant's old password signs the owner in.
  assert.equal((await checkMemberPassword(db, 'OWNER@kowhai.example', 'correct horse battery'))?.id, members[0].id);
  assert.equal(await checkMemberPassword(db, 'owner@kowhai.example', 'wrong horse battery'), null);
});
