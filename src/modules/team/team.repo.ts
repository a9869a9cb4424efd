import type { Kysely, Selectable } from 'kysely';
import { lockForUpdate } from '../../store/db.ts';
import type { Database } from '../../store/tables.ts';
import type { Role } from './team.permissions.ts';
import type { InvitationsTable, MembersTable } from './team.tables.ts';

type Db = Kysely<Database>;
export type MemberRow = Selectable<MembersTable>;
export type InvitationRow = Selectable<InvitationsTable>;

export async function insertMember(db: Db, row: MemberRow): Promise<void> {
  await db.insertInto('members').values(row).execute();
}

export function findLiveMemberByEmail(db: Db, email: string): Promise<MemberRow | undefined> {
  return db
    .selectFrom('members')
    .selectAll()
    .where('email', '=', email)
    .where('removed_at', 'is', null)
    .executeTakeFirst();
}

export function findMember(db: Db, id: string): Promise<MemberRow | undefined> {
  return db.selectFrom('members').selectAll().where('id', '=', id).executeTakeFirst();
}

export function findMemberOf(db: Db, userId: string, id: string): Promise<MemberRow | undefined> {
  return db
    .selectFrom('members')
    .selectAll()
    .where('user_id', '=', userId)
    .where('id', '=', id)
    .where('removed_at', 'is', null)
    .executeTakeFirst();
}

export function liveMembersOf(db: Db, userId: string): Promise<MemberRow[]> {
  return db
    .selectFrom('members')
    .selectAll()
    .where('user_id', '=', userId)
    .where('removed_at', 'is', null)
    .orderBy('created_at')
    .orderBy('id')
    .execute();
}

/** The merchant's live members, locked: a role change or removal counts the owners under this lock. */
/** Every member the merchant ever had, removed ones too (the audit log names them). */
export function everyMemberOf(db: Db, userId: string): Promise<Pick<MemberRow, 'id' | 'email' | 'removed_at'>[]> {
  return db.selectFrom('members').select(['id', 'email', 'removed_at']).where('user_id', '=', userId).execute();
}

export function lockLiveMembersOf(db: Db, userId: string): Promise<MemberRow[]> {
  return lockForUpdate(
    db,
    db.selectFrom('members').selectAll().where('user_id', '=', userId).where('removed_at', 'is', null),
  ).execute();
}

export async function setMemberRole(db: Db, id: string, role: Role): Promise<void> {
  await db.updateTable('members').set({ role }).where('id', '=', id).execute();
}

export async function setMemberRemoved(db: Db, id: string, now: number): Promise<void> {
  await db
    .updateTable('members')
    .set({ removed_at: now })
    .where('id', '=', id)
    .where('removed_at', 'is', null)
    .execute();
}

export async function setMemberPasswordHash(db: Db, id: string, passwordHash: string): Promise<void> {
  await db.updateTable('members').set({ password_hash: passwordHash }).where('id', '=', id).execute();
}

export async function insertInvitation(db: Db, row: InvitationRow): Promise<void> {
  await db.insertInto('invitations').values(row).execute();
}

export function findInvitationByHash(db: Db, tokenHash: string): Promise<InvitationRow | undefined> {
  return db.selectFrom('invitations').selectAll().where('token_hash', '=', tokenHash).executeTakeFirst();
}

export function pendingInvitationsOf(db: Db, userId: string, now: number): Promise<InvitationRow[]> {
  return db
    .selectFrom('invitations')
    .selectAll()
    .where('user_id', '=', userId)
    .where('accepted_at', 'is', null)
    .where('revoked_at', 'is', null)
    .where('expires_at', '>', now)
    .orderBy('created_at', 'desc')
    .limit(100)
    .execute();
}

/** Revokes the merchant's pending invitation; false when there is none by that id. */
export async function setInvitationRevoked(db: Db, userId: string, id: string, now: number): Promise<boolean> {
  const result = await db
    .updateTable('invitations')
    .set({ revoked_at: now })
    .where('user_id', '=', userId)
    .where('id', '=', id)
    .where('accepted_at', 'is', null)
    .where('revoked_at', 'is', null)
    .executeTakeFirst();
  return Number(result.numUpdatedRows) > 0;
}

/**
 * Revokes the merchant's pending invitations sent by `memberId` (only those of `roles`, when
 * given): their sender was removed, or may no longer invite that role. Returns the ones revoked.
 */
export async function revokeInvitationsSentBy(
  db: Db,
  input: { userId: string; memberId: string; roles?: readonly Role[]; now: number },
): Promise<Pick<InvitationRow, 'id' | 'email' | 'role'>[]> {
  if (input.roles?.length === 0) return [];
  let update = db
    .updateTable('invitations')
    .set({ revoked_at: input.now })
    .where('user_id', '=', input.userId)
    .where('invited_by', '=', input.memberId)
    .where('accepted_at', 'is', null)
    .where('revoked_at', 'is', null);
  if (input.roles) update = update.where('role', 'in', input.roles);
  return update.returning(['id', 'email', 'role']).execute();
}

/**
 * Revokes the merchant's pending invitations addressed to `email` (but `exceptId`): the email was
 * invited again, joined through one of them, or was removed from the team. Returns the ones revoked.
 */
export async function revokeInvitationsTo(
  db: Db,
  input: { userId: string; email: string; now: number; exceptId?: string },
): Promise<Pick<InvitationRow, 'id' | 'email' | 'role'>[]> {
  let update = db
    .updateTable('invitations')
    .set({ revoked_at: input.now })
    .where('user_id', '=', input.userId)
    .where('email', '=', input.email)
    .where('accepted_at', 'is', null)
    .where('revoked_at', 'is', null)
    .where('expires_at', '>', input.now);
  if (input.exceptId) update = update.where('id', '!=', input.exceptId);
  return update.returning(['id', 'email', 'role']).execute();
}

/** The merchant's live invitation to `email`, if it has one (at most one is live, inviteMember). */
export function liveInvitationTo(
  db: Db,
  input: { userId: string; email: string; now: number },
): Promise<InvitationRow | undefined> {
  return db
    .selectFrom('invitations')
    .selectAll()
    .where('user_id', '=', input.userId)
    .where('email', '=', input.email)
    .where('accepted_at', 'is', null)
    .where('revoked_at', 'is', null)
    .where('expires_at', '>', input.now)
    .orderBy('created_at', 'desc')
    .executeTakeFirst();
}

/** Spends a live invitation, atomically: two submissions of one link cannot both make a member. */
export async function spendInvitation(db: Db, tokenHash: string, now: number): Promise<boolean> {
  const result = await db
    .updateTable('invitations')
    .set({ accepted_at: now })
    .where('token_hash', '=', tokenHash)
    .where('accepted_at', 'is', null)
    .where('revoked_at', 'is', null)
    .where('expires_at', '>', now)
    .executeTakeFirst();
  return Number(result.numUpdatedRows) > 0;
}

export async function supportRefundLimitOf(db: Db, userId: string): Promise<number | null> {
  const row = await db
    .selectFrom('team_settings')
    .select('support_refund_limit_cents')
    .where('user_id', '=', userId)
    .executeTakeFirst();
  return row ? Number(row.support_refund_limit_cents) : null;
}

export async function upsertSupportRefundLimit(db: Db, userId: string, cents: number, now: number): Promise<void> {
  await db
    .insertInto('team_settings')
    .values({ user_id: userId, support_refund_limit_cents: cents, updated_at: now })
    .onConflict((oc) => oc.column('user_id').doUpdateSet({ support_refund_limit_cents: cents, updated_at: now }))
    .execute();
}
