import type { Kysely, Selectable } from 'kysely';
import type { Database } from '../../store/tables.ts';
import type {
  TwoFactorMembersTable,
  TwoFactorPasskeysTable,
  TwoFactorPendingSignInsTable,
} from './two-factor.tables.ts';

// Every statement on the two-factor tables (migrations 0036 and 0040).

type Db = Kysely<Database>;
export type TwoFactorMemberRow = Selectable<TwoFactorMembersTable>;
export type PendingSignInRow = Selectable<TwoFactorPendingSignInsTable>;
export type PasskeyRow = Selectable<TwoFactorPasskeysTable>;

export async function findTwoFactorMember(db: Db, memberId: string): Promise<TwoFactorMemberRow | undefined> {
  return db.selectFrom('two_factor_members').selectAll().where('member_id', '=', memberId).executeTakeFirst();
}

/** A new secret for a member who is not enrolled; one already in use is never replaced. */
export async function putEnrollingSecret(db: Db, memberId: string, sealed: string, now: number): Promise<void> {
  await db
    .insertInto('two_factor_members')
    .values({
      member_id: memberId,
      totp_secret_sealed: sealed,
      enabled_at: null,
      last_step: null,
      created_at: now,
      updated_at: now,
    })
    .onConflict((oc) =>
      oc
        .column('member_id')
        .doUpdateSet({ totp_secret_sealed: sealed, last_step: null, created_at: now, updated_at: now })
        .where('two_factor_members.enabled_at', 'is', null),
    )
    .execute();
}

/**
 * Accepts a code of time step `step`: moves the member's last accepted step forward in one guarded
 * update, so of two uses of one code (or of an older one) only the first moves it. `enabled`: the
 * authenticator must be in use (a sign-in) or not yet (confirming enrolment).
 */
export async function acceptStep(
  db: Db,
  memberId: string,
  step: number,
  enabled: boolean,
  now: number,
): Promise<boolean> {
  const result = await db
    .updateTable('two_factor_members')
    .set({ last_step: step, updated_at: now })
    .where('member_id', '=', memberId)
    .where('enabled_at', enabled ? 'is not' : 'is', null)
    .where((eb) => eb.or([eb('last_step', 'is', null), eb('last_step', '<', step)]))
    .executeTakeFirst();
  return Number(result.numUpdatedRows) > 0;
}

export async function markEnabled(db: Db, memberId: string, now: number): Promise<boolean> {
  const result = await db
    .updateTable('two_factor_members')
    .set({ enabled_at: now, updated_at: now })
    .where('member_id', '=', memberId)
    .where('enabled_at', 'is', null)
    .executeTakeFirst();
  return Number(result.numUpdatedRows) > 0;
}

export async function deleteTwoFactorMember(db: Db, memberId: string): Promise<number> {
  const result = await db.deleteFrom('two_factor_members').where('member_id', '=', memberId).executeTakeFirst();
  return Number(result.numDeletedRows);
}

export async function replaceRecoveryCodes(db: Db, memberId: string, hashes: string[], now: number): Promise<void> {
  await deleteRecoveryCodes(db, memberId);
  await db
    .insertInto('two_factor_recovery_codes')
    .values(hashes.map((code_hash) => ({ member_id: memberId, code_hash, created_at: now, used_at: null })))
    .execute();
}

export async function deleteRecoveryCodes(db: Db, memberId: string): Promise<void> {
  await db.deleteFrom('two_factor_recovery_codes').where('member_id', '=', memberId).execute();
}

/** Spends an unused recovery code, atomically: false when it is not the member's or was used. */
export async function spendRecoveryCode(db: Db, memberId: string, codeHash: string, now: number): Promise<boolean> {
  const result = await db
    .updateTable('two_factor_recovery_codes')
    .set({ used_at: now })
    .where('member_id', '=', memberId)
    .where('code_hash', '=', codeHash)
    .where('used_at', 'is', null)
    .executeTakeFirst();
  return Number(result.numUpdatedRows) > 0;
}

export async function countUnusedRecoveryCodes(db: Db, memberId: string): Promise<number> {
  const row = await db
    .selectFrom('two_factor_recovery_codes')
    .select((eb) => eb.fn.countAll<number>().as('n'))
    .where('member_id', '=', memberId)
    .where('used_at', 'is', null)
    .executeTakeFirstOrThrow();
  return Number(row.n);
}

export async function insertPendingSignIn(db: Db, row: PendingSignInRow): Promise<void> {
  await db.insertInto('two_factor_pending_sign_ins').values(row).execute();
}

export async function findPendingSignIn(db: Db, tokenHash: string): Promise<PendingSignInRow | undefined> {
  return db
    .selectFrom('two_factor_pending_sign_ins')
    .selectAll()
    .where('token_hash', '=', tokenHash)
    .executeTakeFirst();
}

/** Spends a live pending sign-in, atomically: false when it was spent already or has expired. */
export async function spendPendingSignIn(db: Db, tokenHash: string, now: number): Promise<boolean> {
  const result = await db
    .updateTable('two_factor_pending_sign_ins')
    .set({ used_at: now })
    .where('token_hash', '=', tokenHash)
    .where('used_at', 'is', null)
    .where('expires_at', '>', now)
    .executeTakeFirst();
  return Number(result.numUpdatedRows) > 0;
}

export async function deletePendingSignInsOf(db: Db, memberId: string): Promise<void> {
  await db.deleteFrom('two_factor_pending_sign_ins').where('member_id', '=', memberId).execute();
}

/** Pending sign-ins that have ended are worth nothing: dropped as new ones are made. */
export async function deleteEndedPendingSignIns(db: Db, now: number): Promise<void> {
  await db.deleteFrom('two_factor_pending_sign_ins').where('expires_at', '<=', now).execute();
}

export async function teamRequiresTwoFactor(db: Db, userId: string): Promise<boolean> {
  const row = await db
    .selectFrom('two_factor_team_settings')
    .select('required')
    .where('user_id', '=', userId)
    .executeTakeFirst();
  return Number(row?.required ?? 0) === 1;
}

export async function putTeamRequirement(db: Db, userId: string, required: boolean, now: number): Promise<void> {
  await db
    .insertInto('two_factor_team_settings')
    .values({ user_id: userId, required: required ? 1 : 0, updated_at: now })
    .onConflict((oc) => oc.column('user_id').doUpdateSet({ required: required ? 1 : 0, updated_at: now }))
    .execute();
}

export async function setPendingNextPath(db: Db, tokenHash: string, nextPath: string): Promise<void> {
  await db
    .updateTable('two_factor_pending_sign_ins')
    .set({ next_path: nextPath })
    .where('token_hash', '=', tokenHash)
    .execute();
}

// ---- Passkeys (migration 0040)

export async function passkeysOfMember(db: Db, memberId: string): Promise<PasskeyRow[]> {
  return db
    .selectFrom('two_factor_passkeys')
    .selectAll()
    .where('member_id', '=', memberId)
    .orderBy('created_at')
    .orderBy('id')
    .execute();
}

export async function passkeyOfMember(db: Db, memberId: string, credentialId: string): Promise<PasskeyRow | undefined> {
  return db
    .selectFrom('two_factor_passkeys')
    .selectAll()
    .where('member_id', '=', memberId)
    .where('credential_id', '=', credentialId)
    .executeTakeFirst();
}

export async function insertPasskey(db: Db, row: PasskeyRow): Promise<boolean> {
  const result = await db
    .insertInto('two_factor_passkeys')
    .values(row)
    .onConflict((oc) => oc.column('credential_id').doNothing())
    .executeTakeFirst();
  return Number(result.numInsertedOrUpdatedRows ?? 0) > 0;
}

export async function deletePasskey(db: Db, memberId: string, id: string): Promise<boolean> {
  const result = await db
    .deleteFrom('two_factor_passkeys')
    .where('member_id', '=', memberId)
    .where('id', '=', id)
    .executeTakeFirst();
  return Number(result.numDeletedRows) > 0;
}

export async function deletePasskeysOf(db: Db, memberId: string): Promise<void> {
  await db.deleteFrom('two_factor_passkeys').where('member_id', '=', memberId).execute();
}

/**
 * Records a sign-in with a passkey: its signature counter only moves forward (an authenticator that
 * keeps none reports 0 every time), so a signature seen before does not move it.
 */
export async function movePasskeyCounter(db: Db, id: string, counter: number, now: number): Promise<boolean> {
  const result = await db
    .updateTable('two_factor_passkeys')
    .set({ counter, last_used_at: now })
    .where('id', '=', id)
    .where('counter', counter === 0 ? '=' : '<', counter)
    .executeTakeFirst();
  return Number(result.numUpdatedRows) > 0;
}

/** The challenge of a passkey the member is adding; only for a member whose two-factor sign-in is on. */
export async function putRegistrationChallenge(
  db: Db,
  memberId: string,
  challenge: string,
  expiresAt: number,
): Promise<boolean> {
  const result = await db
    .updateTable('two_factor_members')
    .set({ passkey_challenge: challenge, passkey_challenge_expires_at: expiresAt })
    .where('member_id', '=', memberId)
    .where('enabled_at', 'is not', null)
    .executeTakeFirst();
  return Number(result.numUpdatedRows) > 0;
}

/** Takes the member's unexpired registration challenge, once: a second taker gets null. */
export async function takeRegistrationChallenge(db: Db, memberId: string, now: number): Promise<string | null> {
  const row = await db
    .selectFrom('two_factor_members')
    .select(['passkey_challenge', 'passkey_challenge_expires_at'])
    .where('member_id', '=', memberId)
    .where('enabled_at', 'is not', null)
    .executeTakeFirst();
  const challenge = row?.passkey_challenge;
  if (!challenge || Number(row.passkey_challenge_expires_at) <= now) return null;
  const result = await db
    .updateTable('two_factor_members')
    .set({ passkey_challenge: null, passkey_challenge_expires_at: null })
    .where('member_id', '=', memberId)
    .where('passkey_challenge', '=', challenge)
    .executeTakeFirst();
  return Number(result.numUpdatedRows) > 0 ? challenge : null;
}

export async function putSignInChallenge(db: Db, tokenHash: string, challenge: string): Promise<void> {
  await db
    .updateTable('two_factor_pending_sign_ins')
    .set({ passkey_challenge: challenge })
    .where('token_hash', '=', tokenHash)
    .where('used_at', 'is', null)
    .execute();
}
