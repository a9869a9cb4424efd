import type { Kysely } from 'kysely';
import { hashPassword, randomSecret, sha256Hex, verifyPassword } from '../../shared/crypto.ts';
import { AppError, notFound } from '../../shared/errors.ts';
import { newId } from '../../shared/ids.ts';
import { giveBackAttempt, takeAttempt, type AttemptLimit } from '../../store/attempts.ts';
import { isUniqueViolation } from '../../store/db.ts';
import type { Database } from '../../store/tables.ts';
import { queueMail } from '../mail/mail.service.ts';
import type { Deps, Origin } from '../context.ts';
import { recordAudit, type AuditBy } from '../audit/audit.service.ts';
import { can, ROLE_LABELS, ROLES, type Role } from './team.permissions.ts';
import { inviteProblem, removalProblem, roleChangeProblem } from './team.rules.ts';
import {
  findInvitationByHash,
  findLiveMemberByEmail,
  findMember,
  findMemberOf,
  insertInvitation,
  insertMember,
  everyMemberOf,
  liveMembersOf,
  lockLiveMembersOf,
  pendingInvitationsOf,
  revokeInvitationsSentBy,
  revokeInvitationsTo,
  setInvitationRevoked,
  setMemberPasswordHash,
  setMemberRemoved,
  setMemberRole,
  spendInvitation,
  supportRefundLimitOf,
  upsertSupportRefundLimit,
  liveInvitationTo,
  type InvitationRow,
  type MemberRow,
} from './team.repo.ts';

// A merchant's team (docs/team.md): the members who sign in to its dashboard, each with one role,
// and the invitations that bring new members in. Each action that changes the team is one named
// function here (invite, revoke, accept, change a role, remove, set the refund limit), so what is
// recorded of it later has one place to go.

type Db = Kysely<Database>;

export const INVITATION_TTL_MS = 72 * 60 * 60_000;
/** The same invitation sent again within this is the one already made (inviteMember). */
export const INVITATION_REPEAT_WINDOW_MS = 60_000;

export const TEAM_LIMITS = {
  /** Looks at invitation links from one client address in 15 minutes (a wrong token counts; a live one is given back). */
  invitationsByClient: { scope: 'team.invitation.client', max: 20, windowMs: 15 * 60_000 },
  /** Invitations one merchant sends in an hour. */
  invitesByMerchant: { scope: 'team.invite.merchant', max: 30, windowMs: 60 * 60_000 },
} as const satisfies Record<string, AttemptLimit>;

/** A member as the dashboard's session holds them. */
export type TeamMember = { id: string; userId: string; email: string; name: string | null; role: Role };
/** Who is acting on the team: a signed-in member of the merchant `userId`. */
export type TeamActor = { userId: string; memberId: string; email: string; role: Role; origin: Origin };

/** Team changes are the merchant's settings: recorded with no mode, by the member who made them. */
function recordTeamChange(
  trx: Db,
  actor: TeamActor,
  action: string,
  objectId: string,
  at: number,
  summary: Record<string, unknown> = {},
): Promise<void> {
  return recordAudit(trx, {
    userId: actor.userId,
    mode: null,
    actor: { kind: 'member', id: actor.memberId, email: actor.email },
    origin: actor.origin,
    action,
    objectId,
    summary,
    at,
  });
}

export type TeamProblem = { kind: 'problem'; message: string };

const memberOf = (row: MemberRow): TeamMember => ({
  id: row.id,
  userId: row.user_id,
  email: row.email,
  name: row.name,
  role: row.role,
});

export function normaliseMemberEmail(raw: unknown): string | null {
  if (typeof raw !== 'string') return null;
  const email = raw.trim().toLowerCase();
  return email.length <= 254 && /^[^\s@]+@[^\s@]+\.[^\s@]+$/.test(email) ? email : null;
}

const emailTaken = (email: string) =>
  new AppError('conflict.email_taken', `A dashboard member with email ${email} already exists`, { email });

/**
 * The owner a new merchant starts with (or one the operator adds, `member create-owner`), in the
 * caller's transaction; refused when the email already signs in to a team.
 */
export async function createOwnerMember(
  trx: Db,
  input: { userId: string; email: string; passwordHash: string; name?: string | null; now: number },
): Promise<TeamMember> {
  const email = input.email.trim().toLowerCase();
  if (await findLiveMemberByEmail(trx, email)) throw emailTaken(email);
  const row: MemberRow = {
    id: newId('member'),
    user_id: input.userId,
    email,
    name: input.name ?? null,
    password_hash: input.passwordHash,
    role: 'owner',
    created_at: input.now,
    invited_by: null,
    removed_at: null,
  };
  await insertMember(trx, row);
  return memberOf(row);
}

/**
 * The operator's way to give a merchant an owner (`member create-owner`): a new owner member, or,
 * when the email is already a member of this merchant's team, that member made owner (with the new
 * password). Refused when the email signs in to another merchant's team.
 */
export async function createOwnerByOperator(
  trx: Db,
  input: { userId: string; email: string; passwordHash: string; now: number },
  by: AuditBy,
): Promise<TeamMember & { created: boolean }> {
  const email = input.email.trim().toLowerCase();
  const existing = await findLiveMemberByEmail(trx, email);
  if (existing && existing.user_id !== input.userId) throw emailTaken(email);
  const made = existing
    ? { ...memberOf(existing), role: 'owner' as const, created: false }
    : { ...(await createOwnerMember(trx, { ...input, email })), created: true };
  if (existing) {
    await setMemberRole(trx, existing.id, 'owner');
    await setMemberPasswordHash(trx, existing.id, input.passwordHash);
  }
  await recordAudit(trx, {
    ...by,
    userId: input.userId,
    mode: null,
    action: made.created ? 'member.create_owner' : 'member.make_owner',
    objectId: made.id,
    summary: { email, ...(existing ? { from: existing.role } : {}) },
    at: input.now,
  });
  return made;
}

// Checked against when the email is unknown, so a wrong email costs the same scrypt as a wrong password.
let decoyHash: Promise<string> | null = null;

/** The member whose email and password these are; null otherwise, after the same work either way. */
export async function checkMemberPassword(db: Db, email: string, password: string): Promise<TeamMember | null> {
  const row = await findLiveMemberByEmail(db, email.trim().toLowerCase());
  decoyHash ??= hashPassword(randomSecret(12)).catch((error: unknown) => {
    decoyHash = null;
    throw error;
  });
  const ok = await verifyPassword(password, row?.password_hash ?? (await decoyHash));
  return row && ok ? memberOf(row) : null;
}

/** A member who is still on the team; null once removed (their sessions end with that). */
export async function liveMemberById(db: Db, id: string): Promise<TeamMember | null> {
  const row = await findMember(db, id);
  return row && row.removed_at === null ? memberOf(row) : null;
}

export async function liveMemberByEmail(db: Db, email: string): Promise<TeamMember | null> {
  const row = await findLiveMemberByEmail(db, email.trim().toLowerCase());
  return row ? memberOf(row) : null;
}

/** The merchant's first owner still on the team (the one `merchant set-password user_…` sets). */
export async function firstOwnerOf(db: Db, userId: string): Promise<TeamMember | null> {
  const owner = (await liveMembersOf(db, userId)).find((row) => row.role === 'owner');
  return owner ? memberOf(owner) : null;
}

/** Stores a new password hash for a member (in the caller's transaction: a reset spends its token in it). */
export async function setMemberPassword(trx: Db, memberId: string, passwordHash: string): Promise<void> {
  await setMemberPasswordHash(trx, memberId, passwordHash);
}

export type MemberListing = TeamMember & { createdAt: number; invitedBy: string | null };
export type InvitationListing = { id: string; email: string; role: Role; createdAt: number; expiresAt: number };

/** The team page: live members, oldest first; pending invitations; the support refund limit. */
export async function teamOf(deps: Deps, userId: string) {
  const now = deps.clock.now();
  const [members, invitations, limit] = await Promise.all([
    liveMembersOf(deps.db, userId),
    pendingInvitationsOf(deps.db, userId, now),
    supportRefundLimitOf(deps.db, userId),
  ]);
  return {
    members: members.map(
      (row): MemberListing => ({ ...memberOf(row), createdAt: Number(row.created_at), invitedBy: row.invited_by }),
    ),
    invitations: invitations.map(
      (row): InvitationListing => ({
        id: row.id,
        email: row.email,
        role: row.role,
        createdAt: Number(row.created_at),
        expiresAt: Number(row.expires_at),
      }),
    ),
    supportRefundLimitCents: limit ?? 0,
  };
}

/** The most a support member may refund at once, in cents; nothing until an owner or admin sets it. */
export async function supportRefundLimit(db: Db, userId: string): Promise<number> {
  return (await supportRefundLimitOf(db, userId)) ?? 0;
}

export async function setSupportRefundLimit(deps: Deps, actor: TeamActor, cents: number): Promise<TeamProblem | null> {
  if (!can(actor.role, 'team.manage'))
    return { kind: 'problem', message: 'Only an owner or an admin can set the refund limit.' };
  await deps.store.transaction(async (trx) => {
    const now = deps.clock.now();
    await upsertSupportRefundLimit(trx, actor.userId, cents, now);
    await recordTeamChange(trx, actor, 'team.support_refund_limit', actor.userId, now, { cents });
  });
  return null;
}

/**
 * Invites `email` to the team with `role`: an invitation row holding the token's SHA-256, and an
 * email with the link, in one transaction. The link works once, for 72 hours. An email has at most
 * one pending invitation from a team: inviting it again (a double click, another role, a lost
 * email) revokes the one it had, so only the newest link works; but the same invitation sent again
 * by the same member within a minute (a double click, a form sent twice) is the one already made,
 * and sends no second email. Invitations of one team are made one at a time, under a lock of the
 * team's rows, so two at once cannot both stay live.
 */
export async function inviteMember(
  deps: Deps,
  actor: TeamActor & { merchantName: string },
  input: { email: string; role: Role },
): Promise<{ kind: 'invited'; id: string; replaced: boolean } | TeamProblem> {
  const refused = inviteProblem(actor.role, input.role);
  if (refused) return { kind: 'problem', message: refused };
  const onTeam = { kind: 'problem', message: `${input.email} is already on your team.` } as const;
  // Only this team's own members are refused here: whether an email belongs to another merchant's
  // team is not the inviter's to learn. Such an invitee is told when they open the link.
  const existing = await findLiveMemberByEmail(deps.db, input.email);
  if (existing?.user_id === actor.userId) return onTeam;
  const now = deps.clock.now();
  return deps.store.transaction(async (trx) => {
    await lockLiveMembersOf(trx, actor.userId);
    if ((await findLiveMemberByEmail(trx, input.email))?.user_id === actor.userId) return onTeam;
    const live = await liveInvitationTo(trx, { userId: actor.userId, email: input.email, now });
    if (
      live &&
      live.role === input.role &&
      live.invited_by === actor.memberId &&
      now - Number(live.created_at) < INVITATION_REPEAT_WINDOW_MS
    )
      return { kind: 'invited', id: live.id, replaced: false } as const;
    if (!(await takeAttempt(trx, TEAM_LIMITS.invitesByMerchant, actor.userId, now)).ok)
      return { kind: 'problem', message: 'Too many invitations were sent in the last hour. Try again later.' } as const;
    const replaced = await revokeInvitationsTo(trx, { userId: actor.userId, email: input.email, now });
    await recordRevocations(trx, actor, replaced, now, 'invitation.create');
    const token = randomSecret(32);
    const id = newId('invitation');
    await insertInvitation(trx, {
      id,
      token_hash: sha256Hex(token),
      user_id: actor.userId,
      email: input.email,
      role: input.role,
      invited_by: actor.memberId,
      created_at: now,
      expires_at: now + INVITATION_TTL_MS,
      accepted_at: null,
      revoked_at: null,
    });
    await queueMail(
      trx,
      {
        to: input.email,
        template: 'team_invitation',
        data: {
          token,
          merchant: actor.merchantName,
          role: ROLE_LABELS[input.role],
          hours: INVITATION_TTL_MS / 3_600_000,
        },
        related: { type: 'invitation', id },
      },
      now,
      deps.secrets,
    );
    await recordTeamChange(trx, actor, 'invitation.create', id, now, { email: input.email, role: input.role });
    return { kind: 'invited', id, replaced: replaced.length > 0 } as const;
  });
}

/** Revokes a pending invitation of the actor's merchant; another merchant's, or one gone, is 404. */
export async function revokeInvitation(deps: Deps, actor: TeamActor, id: string): Promise<TeamProblem | null> {
  if (!can(actor.role, 'team.manage'))
    return { kind: 'problem', message: 'Only an owner or an admin can revoke invitations.' };
  await deps.store.transaction(async (trx) => {
    const now = deps.clock.now();
    if (!(await setInvitationRevoked(trx, actor.userId, id, now))) throw notFound('invitation', id);
    await recordTeamChange(trx, actor, 'invitation.revoke', id, now);
  });
  return null;
}

export type OpenedInvitation =
  | { kind: 'live'; invitation: { email: string; role: Role; userId: string } }
  | { kind: 'dead' }
  | { kind: 'limited'; retryAfterMs: number };

const TOKEN_SHAPE = /^[A-Za-z0-9_-]{20,100}$/;

/**
 * The invitation a link names, if it still works. Every look costs the client an attempt, given
 * back when the token was live, so guessing tokens is limited per address.
 */
export async function openInvitation(deps: Deps, token: string, client: string): Promise<OpenedInvitation> {
  const now = deps.clock.now();
  const taken = await takeAttempt(deps.db, TEAM_LIMITS.invitationsByClient, client, now);
  if (!taken.ok) return { kind: 'limited', retryAfterMs: taken.retryAfterMs };
  const row = TOKEN_SHAPE.test(token) ? await findInvitationByHash(deps.db, sha256Hex(token)) : undefined;
  if (!row || !invitationIsLive(row, now) || !(await senderMayStillInvite(deps.db, row))) return { kind: 'dead' };
  await giveBackAttempt(deps.db, TEAM_LIMITS.invitationsByClient, client, taken.windowStart);
  return { kind: 'live', invitation: { email: row.email, role: row.role, userId: row.user_id } };
}

const invitationIsLive = (row: InvitationRow, now: number) =>
  row.accepted_at === null && row.revoked_at === null && Number(row.expires_at) > now;

/**
 * Whether the member who sent an invitation is still on its team and may still invite its role.
 * Removing a member or changing their role revokes what they may no longer send; this is checked
 * again when the link is used, so a link outliving its sender's say-so is dead like any other.
 */
async function senderMayStillInvite(db: Db, row: InvitationRow): Promise<boolean> {
  const sender = await findMember(db, row.invited_by);
  return (
    !!sender &&
    sender.removed_at === null &&
    sender.user_id === row.user_id &&
    inviteProblem(sender.role, row.role) === null
  );
}

/**
 * Accepts a live invitation: the token is spent and the member made in one transaction, so a link
 * works once. Dead when its sender has since been removed or may no longer invite its role.
 * Refused, with nothing changed (the link still works), when the email meanwhile signs in to a team.
 */
export async function acceptInvitation(
  deps: Deps,
  token: string,
  input: { name: string; passwordHash: string; origin: Origin },
): Promise<{ kind: 'accepted'; member: TeamMember } | { kind: 'dead' } | { kind: 'taken' }> {
  if (!TOKEN_SHAPE.test(token)) return { kind: 'dead' };
  const hash = sha256Hex(token);
  const accepting = deps.store.transaction(async (trx) => {
    const now = deps.clock.now();
    const invitation = await findInvitationByHash(trx, hash);
    if (!invitation || !invitationIsLive(invitation, now) || !(await senderMayStillInvite(trx, invitation)))
      return { kind: 'dead' } as const;
    // Checked before the token is spent: a refused acceptance changes nothing.
    if (await findLiveMemberByEmail(trx, invitation.email)) return { kind: 'taken' } as const;
    // The guarded spend is what makes a link work once (and loses to a revocation made meanwhile).
    if (!(await spendInvitation(trx, hash, now))) return { kind: 'dead' } as const;
    const row: MemberRow = {
      id: newId('member'),
      user_id: invitation.user_id,
      email: invitation.email,
      name: input.name,
      password_hash: input.passwordHash,
      role: invitation.role,
      created_at: now,
      invited_by: invitation.invited_by,
      removed_at: null,
    };
    await insertMember(trx, row);
    const joined: TeamActor = {
      userId: row.user_id,
      memberId: row.id,
      email: row.email,
      role: row.role,
      origin: input.origin,
    };
    await recordTeamChange(trx, joined, 'member.join', row.id, now, {
      invitation: invitation.id,
      role: row.role,
      invited_by: invitation.invited_by,
    });
    // Any other link the team sent this email stops working: it is on the team now, and once
    // removed it comes back only through a new invitation.
    const others = await revokeInvitationsTo(trx, { userId: row.user_id, email: row.email, now });
    await recordRevocations(trx, joined, others, now, 'member.join');
    return { kind: 'accepted', member: memberOf(row) } as const;
  });
  // The same email accepting another team's invitation at the same moment: the index of live
  // members' emails lets one in, and the other is refused as if it had come second.
  return accepting.catch((error: unknown) => {
    if (isUniqueViolation(error)) return { kind: 'taken' } as const;
    throw error;
  });
}

/**
 * Changes a member's role. Only an owner makes or unmakes an owner, and the last owner keeps the
 * role; the owners are counted under a lock on the team's rows, so two demotions cannot both pass.
 */
export async function changeMemberRole(
  deps: Deps,
  actor: TeamActor,
  memberId: string,
  role: Role,
): Promise<TeamProblem | null> {
  return deps.store.transaction(async (trx) => {
    const members = await lockLiveMembersOf(trx, actor.userId);
    const target = members.find((member) => member.id === memberId);
    if (!target) throw notFound('member', memberId);
    const owners = members.filter((member) => member.role === 'owner').length;
    const refused = roleChangeProblem({ actor: actor.role, target: target.role, to: role, owners });
    if (refused) return { kind: 'problem', message: refused } as const;
    if (target.role !== role) {
      const now = deps.clock.now();
      await setMemberRole(trx, memberId, role);
      await recordTeamChange(trx, actor, 'member.role_change', memberId, now, {
        email: target.email,
        from: target.role,
        to: role,
      });
      // What they sent but may no longer send stops working with the change.
      const roles = ROLES.filter((invited) => inviteProblem(role, invited) !== null);
      await revokeSentInvitations(trx, actor, { memberId, roles, now, reason: 'member.role_change' });
    }
    return null;
  });
}

/**
 * Removes a member from the team. Their sessions end at once: a session is only good while its
 * member is on the team (the dashboard checks on every request).
 */
export async function removeMember(deps: Deps, actor: TeamActor, memberId: string): Promise<TeamProblem | null> {
  return deps.store.transaction(async (trx) => {
    const members = await lockLiveMembersOf(trx, actor.userId);
    const target = members.find((member) => member.id === memberId);
    if (!target) throw notFound('member', memberId);
    const owners = members.filter((member) => member.role === 'owner').length;
    const refused = removalProblem({ actor: actor.role, target: target.role, owners });
    if (refused) return { kind: 'problem', message: refused } as const;
    const now = deps.clock.now();
    await setMemberRemoved(trx, memberId, now);
    await recordTeamChange(trx, actor, 'member.remove', memberId, now, { email: target.email, role: target.role });
    // The invitations they sent stop working with them, and so do any addressed to them: a
    // removed member comes back only through an invitation sent after the removal.
    await revokeSentInvitations(trx, actor, { memberId, now, reason: 'member.remove' });
    const toThem = await revokeInvitationsTo(trx, { userId: actor.userId, email: target.email, now });
    await recordRevocations(trx, actor, toThem, now, 'member.remove');
    return null;
  });
}

/**
 * Revokes the pending invitations `memberId` sent (of `roles`, when given), in the transaction of
 * the removal or role change that is the reason, each recorded as a revocation by the actor.
 */
async function revokeSentInvitations(
  trx: Db,
  actor: TeamActor,
  input: { memberId: string; roles?: readonly Role[]; now: number; reason: string },
): Promise<void> {
  const revoked = await revokeInvitationsSentBy(trx, { ...input, userId: actor.userId });
  await recordRevocations(trx, actor, revoked, input.now, input.reason);
}

/** Each invitation revoked by a change of the team, recorded as a revocation by its actor, with the reason. */
async function recordRevocations(
  trx: Db,
  actor: TeamActor,
  revoked: ReadonlyArray<{ id: string; email: string; role: Role }>,
  now: number,
  reason: string,
): Promise<void> {
  for (const invitation of revoked)
    await recordTeamChange(trx, actor, 'invitation.revoke', invitation.id, now, {
      email: invitation.email,
      role: invitation.role,
      reason,
    });
}

/** One live member of the merchant, for the pages that act on them; another merchant's is 404. */
export async function memberOfTeam(db: Db, userId: string, memberId: string): Promise<TeamMember> {
  const row = await findMemberOf(db, userId, memberId);
  if (!row) throw notFound('member', memberId);
  return memberOf(row);
}

/** The emails of every member the merchant ever had, by member id, removed ones marked (for the audit log). */
export async function memberNamesOf(db: Db, userId: string): Promise<Map<string, string>> {
  const rows = await everyMemberOf(db, userId);
  return new Map(rows.map((row) => [row.id, row.removed_at === null ? row.email : `${row.email} (removed)`]));
}
