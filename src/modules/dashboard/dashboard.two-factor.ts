import { randomBytes } from 'node:crypto';
import { Secret } from 'otpauth';
import encodeQR from 'qr';
import { randomSecret, sha256Hex } from '../../shared/crypto.ts';
import { giveBackAttempt, takeAttempt, type AttemptLimit } from '../../store/attempts.ts';
import type { Db } from '../../store/db.ts';
import { transact } from '../../store/store.ts';
import { liveMemberByEmail, liveMemberById, type TeamMember } from '../team/team.service.ts';
import type { Deps, Origin } from '../context.ts';
import { recordAudit, type AuditBy } from '../audit/audit.service.ts';
import { endSessionRowsOfMember } from './dashboard.repo.ts';
import {
  acceptedStep,
  readCode,
  RECOVERY_CODE_COUNT,
  RECOVERY_CODE_LENGTH,
  recoveryCodeFromBytes,
  totpOf,
  type TypedCode,
} from './two-factor.rules.ts';
import {
  acceptStep,
  countUnusedRecoveryCodes,
  deleteEndedPendingSignIns,
  deletePendingSignInsOf,
  deletePasskeysOf,
  deleteRecoveryCodes,
  deleteTwoFactorMember,
  findPendingSignIn,
  findTwoFactorMember,
  insertPendingSignIn,
  markEnabled,
  putEnrollingSecret,
  putTeamRequirement,
  setPendingNextPath,
  replaceRecoveryCodes,
  spendPendingSignIn,
  spendRecoveryCode,
  teamRequiresTwoFactor,
  type TwoFactorMemberRow,
} from './two-factor.repo.ts';

// Two-factor sign-in to the dashboard (docs/team.md, "Two-factor sign-in"; docs/security.md): a
// member's TOTP authenticator (the secret sealed), ten one-time recovery codes (hashed), the
// pending sign-in between a right password and a right code (its token hashed, 5 minutes), and the
// team's requirement. Each change a member or the operator makes is one named function here.
// This file does not import dashboard.sessions.ts (which calls in here from `signIn`): the routes
// open the session once a code is right.

/** A member as two-factor sign-in needs them: their id, their team (the merchant) and the label for their app. */
export type Member = { memberId: string; userId: string; email: string };

const asMember = (member: Pick<TeamMember, 'id' | 'userId' | 'email'>): Member => ({
  memberId: member.id,
  userId: member.userId,
  email: member.email,
});

/** The signed-in member; every two-factor row is keyed by their id. */
export function memberOf(signedIn: { member: Pick<TeamMember, 'id' | 'userId' | 'email'> }): Member {
  return asMember(signedIn.member);
}

/** The member an operator names by email (the CLI), or null. */
export async function memberByEmail(db: Db, email: string): Promise<Member | null> {
  const member = await liveMemberByEmail(db, email.trim().toLowerCase());
  return member ? asMember(member) : null;
}

export const PENDING_SIGN_IN_MS = 5 * 60_000;

/** A change to a member's second step, recorded in the team's audit trail by that member. */
export function recordChange(
  trx: Db,
  member: Member,
  origin: Origin,
  action: string,
  at: number,
  summary: Record<string, unknown> = {},
): Promise<void> {
  return recordAudit(trx, {
    userId: member.userId,
    mode: null,
    actor: { kind: 'member', id: member.memberId, email: member.email },
    origin,
    action,
    objectId: member.memberId,
    summary,
    at,
  });
}

/**
 * Code limits (docs/security.md, "Limits"), as for passwords: an attempt is taken before a code is
 * checked and given back when it was right.
 */
export const TWO_FACTOR_LIMITS = {
  /** Wrong codes for one member in 15 minutes, then every code of theirs is refused until it ends. */
  byMember: { scope: 'dashboard.2fa.member', max: 5, windowMs: 15 * 60_000 },
  /** Wrong codes from one client address in 15 minutes. */
  byClient: { scope: 'dashboard.2fa.client', max: 20, windowMs: 15 * 60_000 },
} as const satisfies Record<string, AttemptLimit>;

export type CodeRefusal =
  | { kind: 'malformed' }
  | { kind: 'wrong' }
  | { kind: 'limited'; retryAfterMs: number }
  /** The pending sign-in is unknown, used or older than 5 minutes. */
  | { kind: 'expired' };

/** Thrown inside a transaction to roll back what it did; caught by `inTransaction`. */
class Refused extends Error {
  readonly refusal: CodeRefusal;
  constructor(refusal: CodeRefusal) {
    super(refusal.kind);
    this.refusal = refusal;
  }
}

async function inTransaction<T>(deps: Deps, work: (trx: Db) => Promise<T>): Promise<T | CodeRefusal> {
  try {
    return await deps.store.transaction(work);
  } catch (error) {
    if (error instanceof Refused) return error.refusal;
    throw error;
  }
}

const recoveryHash = (memberId: string, code: string) => sha256Hex(`${memberId}:${code}`);

/**
 * Runs `check` under the code limits of the member and the client address: the attempt is taken
 * first, so concurrent guesses cannot all pass a count made before any of them was checked, and
 * given back when the code was right.
 */
export async function underCodeLimits<T extends object>(
  deps: Deps,
  memberId: string,
  client: string,
  check: () => Promise<T | CodeRefusal>,
): Promise<T | CodeRefusal> {
  const now = deps.clock.now();
  const byClient = await takeAttempt(deps.db, TWO_FACTOR_LIMITS.byClient, client, now);
  if (!byClient.ok) return { kind: 'limited', retryAfterMs: byClient.retryAfterMs };
  const byMember = await takeAttempt(deps.db, TWO_FACTOR_LIMITS.byMember, memberId, now);
  if (!byMember.ok) {
    await giveBackAttempt(deps.db, TWO_FACTOR_LIMITS.byClient, client, byClient.windowStart);
    return { kind: 'limited', retryAfterMs: byMember.retryAfterMs };
  }
  const outcome = await check();
  if ((outcome as { kind: string }).kind !== 'wrong') {
    // Right, or refused before the code counted (an expired sign-in): it does not count.
    await giveBackAttempt(deps.db, TWO_FACTOR_LIMITS.byClient, client, byClient.windowStart);
    await giveBackAttempt(deps.db, TWO_FACTOR_LIMITS.byMember, memberId, byMember.windowStart);
  }
  return outcome;
}

/**
 * Accepts a typed code in `trx`, or throws Refused('wrong'). A TOTP code moves the member's last
 * accepted step forward (refused if it does not move: a code used already); a recovery code is
 * spent. `enabled`: a sign-in or a change needs the authenticator in use; confirming enrolment
 * needs it not yet in use, and takes no recovery code.
 */
async function acceptCode(deps: Deps, trx: Db, memberId: string, typed: TypedCode, enabled: boolean): Promise<void> {
  const now = deps.clock.now();
  const row = await findTwoFactorMember(trx, memberId);
  if (!row || (row.enabled_at !== null) !== enabled) throw new Refused({ kind: 'wrong' });
  if (typed.kind === 'totp') {
    const step = acceptedStep(deps.secrets.open(row.totp_secret_sealed), typed.code, now);
    if (step === null || !(await acceptStep(trx, memberId, step, enabled, now))) throw new Refused({ kind: 'wrong' });
    return;
  }
  if (!enabled || !(await spendRecoveryCode(trx, memberId, recoveryHash(memberId, typed.code), now)))
    throw new Refused({ kind: 'wrong' });
}

/** Ten new recovery codes replace the member's old ones; returned in clear this once. */
async function newRecoveryCodes(trx: Db, memberId: string, now: number): Promise<string[]> {
  const codes = Array.from({ length: RECOVERY_CODE_COUNT }, () =>
    recoveryCodeFromBytes(randomBytes(RECOVERY_CODE_LENGTH)),
  );
  await replaceRecoveryCodes(
    trx,
    memberId,
    codes.map((code) => recoveryHash(memberId, code)),
    now,
  );
  return codes;
}

const enabledRow = (row: TwoFactorMemberRow | undefined) => !!row && row.enabled_at !== null;

// ---- What the account page shows

export type TwoFactorStatus = { enabled: boolean; recoveryCodesLeft: number; teamRequires: boolean };

export async function twoFactorStatus(deps: Deps, member: Member): Promise<TwoFactorStatus> {
  const row = await findTwoFactorMember(deps.db, member.memberId);
  return {
    enabled: enabledRow(row),
    recoveryCodesLeft: enabledRow(row) ? await countUnusedRecoveryCodes(deps.db, member.memberId) : 0,
    teamRequires: await teamRequiresTwoFactor(deps.db, member.userId),
  };
}

export type Enrolment = { secret: string; uri: string; qrDataUri: string };

/** Starts enrolment: a new secret, made here and sealed; an authenticator in use is never replaced. */
export async function beginTwoFactorEnrolment(deps: Deps, member: Member): Promise<void> {
  await putEnrollingSecret(
    deps.db,
    member.memberId,
    deps.secrets.seal(new Secret({ size: 20 }).base32),
    deps.clock.now(),
  );
}

/**
 * What the set-up page shows while the member enrols: the secret, its otpauth:// URI and the QR
 * code of it. Begins enrolment when there is none; null once the authenticator is in use (its
 * secret is never shown again).
 */
export async function enrolmentOf(deps: Deps, member: Member): Promise<Enrolment | null> {
  let row = await findTwoFactorMember(deps.db, member.memberId);
  if (enabledRow(row)) return null;
  if (!row) {
    await beginTwoFactorEnrolment(deps, member);
    row = await findTwoFactorMember(deps.db, member.memberId);
    if (!row || enabledRow(row)) return null;
  }
  const secret = deps.secrets.open(row.totp_secret_sealed);
  const uri = totpOf(secret, member.email).toString();
  const gif = encodeQR(uri, 'gif', { ecc: 'medium', scale: 4, border: 2 });
  return { secret, uri, qrDataUri: `data:image/gif;base64,${Buffer.from(gif).toString('base64')}` };
}

export type Enabled = { kind: 'enabled'; recoveryCodes: string[] };

/** Completes enrolment with a right current code; the first recovery codes come with it. */
export async function confirmTwoFactorEnrolment(
  deps: Deps,
  member: Member,
  rawCode: unknown,
  client: string,
  origin: Origin,
): Promise<Enabled | CodeRefusal> {
  const typed = readCode(rawCode);
  if (typed?.kind !== 'totp') return { kind: 'malformed' };
  return underCodeLimits(deps, member.memberId, client, () =>
    inTransaction(deps, (trx) => enableWith(deps, trx, member, typed, origin)),
  );
}

async function enableWith(deps: Deps, trx: Db, member: Member, typed: TypedCode, origin: Origin): Promise<Enabled> {
  const now = deps.clock.now();
  await acceptCode(deps, trx, member.memberId, typed, false);
  if (!(await markEnabled(trx, member.memberId, now))) throw new Refused({ kind: 'wrong' });
  const recoveryCodes = await newRecoveryCodes(trx, member.memberId, now);
  await recordChange(trx, member, origin, 'member.two_factor_enable', now);
  return { kind: 'enabled', recoveryCodes };
}

/** A typed code for a change to the second step, and where it came from. */
export type CodeAttempt = { rawCode: unknown; client: string; origin: Origin };

/** The changes to the second step that need a code, by the action that records them. */
type CodedChange =
  | 'member.recovery_codes_renew'
  | 'member.two_factor_disable'
  | 'member.passkey_add'
  | 'member.passkey_remove';

/**
 * A change to the member's second step (new recovery codes, turning it off, adding or removing a
 * passkey) with a current code or an unused recovery code: `apply` runs in the transaction that
 * accepts the code, under the limits of wrong codes, and nothing is done on a refusal. A wrong code
 * is recorded (`member.change_refused`), as a wrong code at sign-in is: someone with the session
 * but not the second step may be trying codes.
 */
export async function changeWithCode<T extends object>(
  deps: Deps,
  member: Member,
  attempt: CodeAttempt,
  change: CodedChange,
  apply: (trx: Db) => Promise<T>,
): Promise<T | CodeRefusal> {
  const typed = readCode(attempt.rawCode);
  if (!typed) return { kind: 'malformed' };
  const outcome = await underCodeLimits(deps, member.memberId, attempt.client, () =>
    inTransaction(deps, async (trx) => {
      await acceptCode(deps, trx, member.memberId, typed, true);
      return apply(trx);
    }),
  );
  if ((outcome as { kind?: string }).kind === 'wrong') {
    await deps.store.transaction((trx) =>
      recordChange(trx, member, attempt.origin, 'member.change_refused', deps.clock.now(), { change, step: 'code' }),
    );
  }
  return outcome;
}

/** A new set of recovery codes (the old ones stop working), with a current code or an unused recovery code. */
export async function makeNewRecoveryCodes(
  deps: Deps,
  member: Member,
  rawCode: unknown,
  client: string,
  origin: Origin,
): Promise<{ kind: 'made'; recoveryCodes: string[] } | CodeRefusal> {
  return changeWithCode(deps, member, { rawCode, client, origin }, 'member.recovery_codes_renew', async (trx) => {
    const now = deps.clock.now();
    const recoveryCodes = await newRecoveryCodes(trx, member.memberId, now);
    await recordChange(trx, member, origin, 'member.recovery_codes_renew', now);
    return { kind: 'made' as const, recoveryCodes };
  });
}

/**
 * Turns two-factor sign-in off for the member, with a current code or an unused recovery code:
 * the secret and the recovery codes are deleted. Refused while the team requires it.
 */
export async function turnOffTwoFactor(
  deps: Deps,
  member: Member,
  rawCode: unknown,
  client: string,
  origin: Origin,
): Promise<{ kind: 'off' } | { kind: 'required' } | CodeRefusal> {
  if (await teamRequiresTwoFactor(deps.db, member.userId)) return { kind: 'required' };
  return changeWithCode(deps, member, { rawCode, client, origin }, 'member.two_factor_disable', async (trx) => {
    await removeTwoFactorRows(trx, member.memberId);
    await recordChange(trx, member, origin, 'member.two_factor_disable', deps.clock.now());
    return { kind: 'off' as const };
  });
}

async function removeTwoFactorRows(trx: Db, memberId: string): Promise<boolean> {
  const removed = await deleteTwoFactorMember(trx, memberId);
  await deleteRecoveryCodes(trx, memberId);
  await deletePendingSignInsOf(trx, memberId);
  await deletePasskeysOf(trx, memberId);
  return removed > 0;
}

/**
 * The team's requirement (only the owner may change it: `team.two_factor`). Turning it on needs the member's own authenticator in use, so
 * the one who requires it is never the one locked into set-up.
 */
export async function setTeamTwoFactorRequirement(
  deps: Deps,
  member: Member,
  required: boolean,
  origin: Origin,
): Promise<{ kind: 'set' } | { kind: 'own_first' }> {
  if (required && !enabledRow(await findTwoFactorMember(deps.db, member.memberId))) return { kind: 'own_first' };
  await deps.store.transaction(async (trx) => {
    const now = deps.clock.now();
    await putTeamRequirement(trx, member.userId, required, now);
    await recordAudit(trx, {
      userId: member.userId,
      mode: null,
      actor: { kind: 'member', id: member.memberId, email: member.email },
      origin,
      action: 'team.two_factor_requirement',
      objectId: member.userId,
      summary: { required },
      at: now,
    });
  });
  return { kind: 'set' };
}

/**
 * Operator recovery (`member reset-2fa`): the member's authenticator, recovery codes and pending
 * sign-ins are deleted and their sessions ended, in one transaction. True when they had any.
 */
export async function resetTwoFactorByOperator(db: Db, member: Member, now: number, by: AuditBy): Promise<boolean> {
  return transact(db, async (trx) => {
    const had = await removeTwoFactorRows(trx, member.memberId);
    await endSessionRowsOfMember(trx, member.memberId, now);
    await recordAudit(trx, {
      ...by,
      userId: member.userId,
      mode: null,
      action: 'member.two_factor_reset',
      objectId: member.memberId,
      summary: { email: member.email, had_two_factor: had },
      at: now,
    });
    return had;
  });
}

// ---- Sign-in: between the password and the session

export type SecondStep = { kind: 'second_step'; pendingToken: string; step: 'code' | 'setup' };

/**
 * After a right password: a pending sign-in when the member must give a code (their authenticator
 * is in use) or set one up (their team requires it); null when the session may open at once.
 */
export async function secondStepAfterPassword(deps: Deps, teamMember: TeamMember): Promise<SecondStep | null> {
  const member = asMember(teamMember);
  const step = enabledRow(await findTwoFactorMember(deps.db, member.memberId))
    ? 'code'
    : (await teamRequiresTwoFactor(deps.db, member.userId))
      ? 'setup'
      : null;
  if (!step) return null;
  const now = deps.clock.now();
  const token = randomSecret(32);
  await deps.store.transaction(async (trx) => {
    await deleteEndedPendingSignIns(trx, now);
    await insertPendingSignIn(trx, {
      token_hash: sha256Hex(token),
      member_id: member.memberId,
      user_id: member.userId,
      step,
      next_path: '/dashboard',
      created_at: now,
      expires_at: now + PENDING_SIGN_IN_MS,
      used_at: null,
      passkey_challenge: null,
    });
  });
  return { kind: 'second_step', pendingToken: token, step };
}

export type PendingSignIn = { tokenHash: string; member: Member; step: 'code' | 'setup'; nextPath: string };

/** Where to go once signed in: a dashboard path the login route has checked. */
export async function rememberNextPath(deps: Deps, pendingToken: string, nextPath: string): Promise<void> {
  await setPendingNextPath(deps.db, sha256Hex(pendingToken), nextPath.slice(0, 500));
}

/** The live pending sign-in a cookie names, or null. */
export async function pendingSignInOf(deps: Deps, token: string | undefined): Promise<PendingSignIn | null> {
  if (!token || token.length > 100) return null;
  const row = await findPendingSignIn(deps.db, sha256Hex(token));
  if (!row || row.used_at !== null || Number(row.expires_at) <= deps.clock.now()) return null;
  // A member removed from the team since their password was right gets no session.
  const member = await liveMemberById(deps.db, row.member_id);
  if (!member || member.userId !== row.user_id) return null;
  return {
    tokenHash: row.token_hash,
    member: asMember(member),
    step: row.step,
    nextPath: row.next_path,
  };
}

/** The second step passed: the caller opens the merchant's session (a new id, as at every sign-in). */
export type Passed = { kind: 'passed'; memberId: string };

/** A right current code or an unused recovery code spends the pending sign-in, once. */
export async function passSignInWithCode(
  deps: Deps,
  pending: PendingSignIn,
  rawCode: unknown,
  client: string,
): Promise<Passed | CodeRefusal> {
  if (pending.step !== 'code') return { kind: 'expired' };
  const typed = readCode(rawCode);
  if (!typed) return { kind: 'malformed' };
  return underCodeLimits(deps, pending.member.memberId, client, () =>
    inTransaction(deps, async (trx) => {
      await acceptCode(deps, trx, pending.member.memberId, typed, true);
      if (!(await spendPendingSignIn(trx, pending.tokenHash, deps.clock.now()))) throw new Refused({ kind: 'expired' });
      return { kind: 'passed' as const, memberId: pending.member.memberId };
    }),
  );
}

/** The team requires two-factor sign-in: the member sets it up, and the pending sign-in is spent with it. */
export async function passSignInWithSetup(
  deps: Deps,
  pending: PendingSignIn,
  rawCode: unknown,
  client: string,
  origin: Origin,
): Promise<(Passed & { recoveryCodes: string[] }) | CodeRefusal> {
  if (pending.step !== 'setup') return { kind: 'expired' };
  const typed = readCode(rawCode);
  if (typed?.kind !== 'totp') return { kind: 'malformed' };
  return underCodeLimits(deps, pending.member.memberId, client, () =>
    inTransaction(deps, async (trx) => {
      if (!(await spendPendingSignIn(trx, pending.tokenHash, deps.clock.now()))) throw new Refused({ kind: 'expired' });
      const enabled = await enableWith(deps, trx, pending.member, typed, origin);
      return { kind: 'passed' as const, memberId: pending.member.memberId, recoveryCodes: enabled.recoveryCodes };
    }),
  );
}
