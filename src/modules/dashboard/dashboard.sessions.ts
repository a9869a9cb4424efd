import type { Kysely } from 'kysely';
import { PasswordHashingBusy, randomSecret, sha256Hex } from '../../shared/crypto.ts';
import { giveBackAttempt, takeAttempt, type AttemptLimit } from '../../store/attempts.ts';
import type { Database } from '../../store/tables.ts';
import { queueMail } from '../mail/mail.service.ts';
import {
  hashNewPassword,
  merchantById,
  MIN_PASSWORD_LENGTH,
  type DashboardMerchant,
} from '../merchants/merchants.service.ts';
import {
  checkMemberPassword,
  liveMemberByEmail,
  liveMemberById,
  setMemberPassword,
  type TeamMember,
} from '../team/team.service.ts';
import type { Deps, Origin } from '../context.ts';
import { recordAudit } from '../audit/audit.service.ts';
import { secondStepAfterPassword, type SecondStep } from './dashboard.two-factor.ts';
import {
  endSessionByRef,
  endSessionRow,
  endSessionRowsOf,
  endSessionRowsOfMember,
  findReset,
  findSession,
  insertReset,
  insertSession,
  lockShownOnce,
  shownOnceOf,
  setShownOnce,
  liveSessionRowsOf,
  spendReset,
  touchSession,
} from './dashboard.repo.ts';

// Sign-in to the dashboard (docs/dashboard.md) by a member of the merchant's team (docs/team.md):
// email and the member's scrypt password; server-side sessions found by the SHA-256 of the cookie's
// value, each of one member, 12 hours idle and 7 days at most, a new id at every sign-in, ended at
// logout, at a password change, from the sessions list, or when the member leaves the team. Failed
// sign-ins are limited per email and per client address, in the database so every process shares
// the count; a password is reset by a link emailed to the member, which works once for 30 minutes.

export const SESSION_IDLE_MS = 12 * 60 * 60_000;
export const SESSION_MAX_MS = 7 * 24 * 60 * 60_000;
export const RESET_TTL_MS = 30 * 60_000;
/**
 * Sign-in limits (docs/security.md, "Limits"). An attempt is taken before the password is checked
 * and given back when it was right, so at most `max` wrong passwords are ever checked in a window,
 * however many arrive at once.
 */
export const SIGN_IN_LIMITS = {
  /** Wrong passwords for one email in 15 minutes before sign-in to it is refused. */
  byEmail: { scope: 'dashboard.password.email', max: 5, windowMs: 15 * 60_000 },
  /** Wrong passwords from one client address in 15 minutes. */
  byClient: { scope: 'dashboard.password.client', max: 20, windowMs: 15 * 60_000 },
  /** Reset links asked for from one client address in an hour (every ask counts). */
  resetsByClient: { scope: 'dashboard.reset.client', max: 10, windowMs: 60 * 60_000 },
  /** Reset links emailed to one merchant in an hour; past it the reply is the same, no email is sent. */
  resetsByEmail: { scope: 'dashboard.reset.email', max: 3, windowMs: 60 * 60_000 },
} as const satisfies Record<string, AttemptLimit>;

type Db = Kysely<Database>;

/** A signed-in session: the team member who signed in, and the merchant whose dashboard it is. */
export type DashboardSession = {
  idHash: string;
  csrfToken: string;
  member: TeamMember;
  merchant: DashboardMerchant;
  createdAt: number;
};

export function normaliseEmail(raw: unknown): string | null {
  if (typeof raw !== 'string') return null;
  const email = raw.trim().toLowerCase();
  return email.length <= 254 && /^[^\s@]+@[^\s@]+\.[^\s@]+$/.test(email) ? email : null;
}

export type SignInOutcome =
  | { kind: 'signed_in'; sessionId: string }
  | SecondStep
  | { kind: 'wrong' }
  | { kind: 'limited'; retryAfterMs: number }
  | { kind: 'busy' };

/**
 * Checks the password and opens a new session, or, for a member with two-factor sign-in (or whose
 * team requires it), a pending sign-in for the second step (dashboard.two-factor.ts). The attempt is taken from the client's and the
 * email's limits first, so a locked email or client is refused before the password is looked at
 * and concurrent guesses cannot all slip past the count; the reply for an unknown email is the same
 * as for a wrong password.
 */
export async function signIn(
  deps: Deps,
  input: {
    email: string;
    password: string;
    client: string;
    origin: Origin;
    previousSessionId: string | undefined;
  },
): Promise<SignInOutcome> {
  const now = deps.clock.now();
  const byClient = await takeAttempt(deps.db, SIGN_IN_LIMITS.byClient, input.client, now);
  if (!byClient.ok) return { kind: 'limited', retryAfterMs: byClient.retryAfterMs };
  const byEmail = await takeAttempt(deps.db, SIGN_IN_LIMITS.byEmail, input.email, now);
  const giveBack = async (email: boolean) => {
    await giveBackAttempt(deps.db, SIGN_IN_LIMITS.byClient, input.client, byClient.windowStart);
    if (email && byEmail.ok) await giveBackAttempt(deps.db, SIGN_IN_LIMITS.byEmail, input.email, byEmail.windowStart);
  };
  if (!byEmail.ok) {
    // Nothing was checked: the locked email does not cost the client one of its attempts.
    await giveBack(false);
    return { kind: 'limited', retryAfterMs: byEmail.retryAfterMs };
  }
  let member: TeamMember | null;
  try {
    member =
      input.password.length > 0 && input.password.length <= 200
        ? await checkMemberPassword(deps.db, input.email, input.password)
        : null;
  } catch (error) {
    if (!(error instanceof PasswordHashingBusy)) throw error;
    await giveBack(true);
    return { kind: 'busy' };
  }
  if (!member) {
    await recordFailedSignIn(deps, input.email, input.origin, 'password');
    return { kind: 'wrong' };
  }
  await giveBack(true);
  const secondStep = await secondStepAfterPassword(deps, member);
  if (secondStep) return secondStep;
  const sessionId = await startSession(deps, member, input);
  return { kind: 'signed_in', sessionId };
}

/**
 * Opens a new session for a member who has just proved who they are (every step of sign-in passed,
 * or an accepted invitation). A new id at every sign-in: a session id planted in the browser before
 * sign-in never becomes a signed-in one.
 */
export async function startSession(
  deps: Deps,
  member: TeamMember,
  input: { origin: Origin; previousSessionId: string | undefined },
): Promise<string> {
  const now = deps.clock.now();
  if (input.previousSessionId) await endSession(deps, input.previousSessionId);
  const sessionId = randomSecret(32);
  const userAgent = input.origin.userAgent;
  await deps.store.transaction(async (trx) => {
    await insertSession(trx, {
      id_hash: sha256Hex(sessionId),
      user_id: member.userId,
      member_id: member.id,
      csrf_token: randomSecret(24),
      created_at: now,
      last_seen_at: now,
      expires_at: now + SESSION_MAX_MS,
      ended_at: null,
      shown_once_sealed: null,
      user_agent: userAgent ? userAgent.slice(0, 120) : null,
    });
    await recordAudit(trx, {
      userId: member.userId,
      mode: null,
      actor: { kind: 'member', id: member.id, email: member.email },
      origin: input.origin,
      action: 'member.sign_in',
      objectId: member.id,
      at: now,
    });
  });
  return sessionId;
}

/**
 * A wrong password or code for a member is recorded in their team's audit trail, by the member it
 * was tried for (with where it came from); a wrong password for an email that is no member belongs
 * to no team and is only counted against the limits.
 */
export async function recordFailedSignIn(
  deps: Deps,
  email: string,
  origin: Origin,
  step: 'password' | 'code' | 'passkey',
): Promise<void> {
  const member = await liveMemberByEmail(deps.db, email.trim().toLowerCase());
  if (!member) return;
  await deps.store.transaction((trx) =>
    recordAudit(trx, {
      userId: member.userId,
      mode: null,
      actor: { kind: 'member', id: member.id, email: member.email },
      origin,
      action: 'member.sign_in_failed',
      objectId: member.id,
      summary: { step },
      at: deps.clock.now(),
    }),
  );
}

/** The live session a cookie names; seeing it keeps it alive (12 hours idle, 7 days at most). */
export async function sessionOf(deps: Deps, sessionId: string | undefined): Promise<DashboardSession | null> {
  if (!sessionId || sessionId.length > 100) return null;
  const now = deps.clock.now();
  const idHash = sha256Hex(sessionId);
  const row = await findSession(deps.db, idHash);
  if (
    !row ||
    row.ended_at !== null ||
    Number(row.expires_at) <= now ||
    Number(row.last_seen_at) + SESSION_IDLE_MS <= now
  )
    return null;
  // Read on every request: a member removed from the team is signed out at their next request,
  // and a role changed applies to it.
  const member = row.member_id ? await liveMemberById(deps.db, row.member_id) : null;
  if (!member || member.userId !== row.user_id) return null;
  const merchant = await merchantById(deps.db, row.user_id);
  if (!merchant) return null;
  if (now - Number(row.last_seen_at) > 60_000) await touchSession(deps.db, idHash, now);
  return { idHash, csrfToken: row.csrf_token, member, merchant, createdAt: Number(row.created_at) };
}

export async function endSession(deps: Deps, sessionId: string | undefined): Promise<void> {
  if (!sessionId || sessionId.length > 100) return;
  await endSessionRow(deps.db, sha256Hex(sessionId), deps.clock.now());
}

export async function endSessionsOfMerchant(db: Db, now: number, userId: string): Promise<void> {
  await endSessionRowsOf(db, userId, now);
}

export async function endSessionsOfMember(db: Db, now: number, memberId: string): Promise<void> {
  await endSessionRowsOfMember(db, memberId, now);
}

export type SessionSummary = {
  ref: string;
  createdAt: number;
  lastSeenAt: number;
  userAgent: string | null;
  current: boolean;
};

/**
 * The merchant's live sessions. Each is named by a short prefix of its hash, enough to tell them
 * apart and to revoke one, and useless for taking one over.
 */
export async function liveSessions(deps: Deps, session: DashboardSession): Promise<SessionSummary[]> {
  const now = deps.clock.now();
  const rows = await liveSessionRowsOf(deps.db, session.member.id, now, SESSION_IDLE_MS);
  return rows.map((row) => ({
    ref: row.id_hash.slice(0, 16),
    createdAt: Number(row.created_at),
    lastSeenAt: Number(row.last_seen_at),
    userAgent: row.user_agent,
    current: row.id_hash === session.idHash,
  }));
}

export async function revokeSession(
  deps: Deps,
  session: DashboardSession,
  ref: string,
  origin: Origin,
): Promise<boolean> {
  if (!/^[0-9a-f]{16}$/.test(ref)) return false;
  return deps.store.transaction(async (trx) => {
    const now = deps.clock.now();
    const ended = await endSessionByRef(trx, session.member.id, ref, now);
    if (ended)
      await recordAudit(trx, {
        userId: session.merchant.id,
        mode: null,
        actor: { kind: 'member', id: session.member.id, email: session.member.email },
        origin,
        action: 'session.end',
        objectId: session.member.id,
        summary: { session: ref },
        at: now,
      });
    return ended;
  });
}

export type ResetAsk = { kind: 'asked' } | { kind: 'limited'; retryAfterMs: number };

/**
 * Emails a reset link when the email is a team member's. The reply is the same either way, so the
 * form does not tell who has an account.
 */
export async function askForReset(deps: Deps, email: string, client: string): Promise<ResetAsk> {
  const now = deps.clock.now();
  const allowed = await takeAttempt(deps.db, SIGN_IN_LIMITS.resetsByClient, client, now);
  if (!allowed.ok) return { kind: 'limited', retryAfterMs: allowed.retryAfterMs };
  const member = await liveMemberByEmail(deps.db, email);
  if (!member) return { kind: 'asked' };
  return deps.store.transaction(async (trx) => {
    // Past the hourly limit the reply stays the same; only the email is not sent again. Taken in
    // the transaction that sends, so concurrent asks for one member queue on its count.
    if (!(await takeAttempt(trx, SIGN_IN_LIMITS.resetsByEmail, member.id, now)).ok) return { kind: 'asked' } as const;
    const token = await insertResetToken(trx, member, now);
    await queueMail(
      trx,
      {
        to: member.email,
        template: 'merchant_password_reset',
        data: { token, minutes: RESET_TTL_MS / 60_000 },
        related: { type: 'member', id: member.id },
      },
      now,
      deps.secrets,
    );
    return { kind: 'asked' } as const;
  });
}

async function insertResetToken(db: Db, member: TeamMember, now: number): Promise<string> {
  const token = randomSecret(32);
  await insertReset(db, {
    token_hash: sha256Hex(token),
    user_id: member.userId,
    member_id: member.id,
    created_at: now,
    expires_at: now + RESET_TTL_MS,
    used_at: null,
  });
  return token;
}

/**
 * A set-password link for a member, made by the operator (`member create-owner`): the same
 * one-time token as an emailed reset, for 30 minutes.
 */
export async function setPasswordLinkFor(db: Db, member: TeamMember, now: number, baseUrl: string): Promise<string> {
  return `${baseUrl}/dashboard/reset/${await insertResetToken(db, member, now)}`;
}

/** Whether a reset token can still be used. */
export async function resetIsLive(deps: Deps, token: string): Promise<boolean> {
  if (!/^[A-Za-z0-9_-]{20,100}$/.test(token)) return false;
  const row = await findReset(deps.db, sha256Hex(token));
  return !!row && row.used_at === null && Number(row.expires_at) > deps.clock.now();
}

export type ResetOutcome = { kind: 'done' } | { kind: 'dead' } | { kind: 'weak' } | { kind: 'busy' };

/** Sets the new password with a live token, once; every session of the member ends. */
export async function resetPassword(
  deps: Deps,
  token: string,
  password: string,
  origin: Origin,
): Promise<ResetOutcome> {
  if (!(await resetIsLive(deps, token))) return { kind: 'dead' };
  if (password.length < MIN_PASSWORD_LENGTH || password.length > 200) return { kind: 'weak' };
  let passwordHash: string;
  try {
    passwordHash = await hashNewPassword(password);
  } catch (error) {
    if (error instanceof PasswordHashingBusy) return { kind: 'busy' };
    throw error;
  }
  const hash = sha256Hex(token);
  // One transaction: the token is spent (atomically, so two submissions of one link cannot both
  // set a password), the password set and every session ended, or none of it.
  return deps.store.transaction(async (trx) => {
    const now = deps.clock.now();
    if (!(await spendReset(trx, hash, now))) return { kind: 'dead' } as const;
    const row = await findReset(trx, hash);
    if (!row?.member_id) return { kind: 'dead' } as const;
    await setMemberPassword(trx, row.member_id, passwordHash);
    await endSessionRowsOfMember(trx, row.member_id, now);
    // The link went to the member's email: whoever used it is that member.
    const member = await liveMemberById(trx, row.member_id);
    if (member)
      await recordAudit(trx, {
        userId: member.userId,
        mode: null,
        actor: { kind: 'member', id: member.id, email: member.email },
        origin,
        action: 'member.password_reset',
        objectId: member.id,
        at: now,
      });
    return { kind: 'done' } as const;
  });
}

/** What the dashboard shows once: a new webhook endpoint with its secret, a new API key, new recovery codes. */
export type ShownOnce = { kind: 'webhook' | 'api_key' | 'recovery_codes'; id: string; value: unknown };

/**
 * Keeps a new secret for the one page view after the create's redirect (post/redirect/get), sealed
 * in the session: a reload of the create, or Back then Forward, makes nothing twice.
 */
export async function holdForOneView(
  deps: Deps,
  session: DashboardSession,
  item: ShownOnce,
  /** The transaction that makes the item, so that it is held once the item exists (a repeat finds it). */
  db: Db = deps.db,
): Promise<void> {
  await setShownOnce(db, session.idHash, deps.secrets.seal(JSON.stringify(item)));
}

/**
 * The item held for its one view, if one of this kind is, left in place: a repeat of the form that
 * made it (a double click) leads to the page that shows it rather than to a refusal.
 */
export async function heldForOneView(
  deps: Deps,
  session: DashboardSession,
  kind: ShownOnce['kind'],
): Promise<ShownOnce | null> {
  const sealed = await shownOnceOf(deps.db, session.idHash);
  if (sealed === null) return null;
  const item = JSON.parse(deps.secrets.open(sealed)) as ShownOnce;
  return item.kind === kind ? item : null;
}

/** The held item, if it is this one, cleared as it is read: it shows once; afterwards null. */
export async function takeOneView(
  deps: Deps,
  session: DashboardSession,
  kind: ShownOnce['kind'],
  id: string,
): Promise<unknown | null> {
  return deps.store.transaction(async (trx) => {
    const sealed = await lockShownOnce(trx, session.idHash);
    if (sealed === null) return null;
    const item = JSON.parse(deps.secrets.open(sealed)) as ShownOnce;
    if (item.kind !== kind || item.id !== id) return null;
    await setShownOnce(trx, session.idHash, null);
    return item.value;
  });
}
