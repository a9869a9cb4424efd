import type { Kysely } from 'kysely';
import { AppError, invalidParam, notFound } from '../../shared/errors.ts';
import { hashPassword, randomSecret, sha256Hex, verifyPassword } from '../../shared/crypto.ts';
import { newId } from '../../shared/ids.ts';
import type { Clock } from '../../shared/time.ts';
import { transact } from '../../store/store.ts';
import type { Database } from '../../store/tables.ts';
import { recordAudit, type AuditBy } from '../audit/audit.service.ts';
import {
  addToTestClockOffset as addToClockOffset,
  allBankAccountsOf,
  anyUser,
  bankAccountWithOwner as accountWithOwner,
  listBankAccounts as bankAccountsPage,
  testClockOffsetOf as clockOffsetOf,
  testClockOffsetsOf as clockOffsetsOf,
  type BankAccountRow,
  apiKeysOf,
  findApiKey,
  findApiKeyOf,
  findBankAccountOf,
  findUserByEmail,
  findUserById,
  insertApiKey,
  insertBankAccount,
  insertUser,
  keyByHashQuery,
  markApiKeyRolled,
  setApiKeyLastUsed,
  setApiKeyRevoked,
} from './merchants.repo.ts';
import { keyCacheOf, type KeyRow } from './merchants.key-cache.ts';
import {
  BANK_ACCOUNT_FORM,
  formatBankAccountNumber,
  isValidBankAccountNumber,
  parseBankAccountNumber,
} from './bank-account-number.ts';
import type { Mode } from '../../shared/mode.ts';
import { andThen, type NowOrLater } from '../../shared/now-or-later.ts';
import { createOwnerMember, firstOwnerOf, liveMemberByEmail, setMemberPassword } from '../team/team.service.ts';
import { DAY_MS, HOUR_MS } from '../../shared/time.ts';
import {
  describeRestriction,
  FULL_ACCESS,
  restrictionFromColumn,
  restrictionToColumn,
  type KeyRestriction,
} from './key-scopes.rules.ts';
import type { Ctx } from '../context.ts';

type Db = Kysely<Database>;

export const KEY_PATTERN = /^sk_(live|test)_[A-Za-z0-9_-]{32}$/;

export type CreatedKey = { id: string; key: string; mode: Mode; name: string };

/** Settings (keys, bank accounts, passwords) are recorded with no mode unless they have one. */
function audit(
  trx: Db,
  by: AuditBy,
  userId: string,
  mode: Mode | null,
  action: string,
  objectId: string,
  at: number,
  summary = {},
) {
  return recordAudit(trx, { ...by, userId, mode, action, objectId, summary, at });
}

/** What a new key is: its name, who creates it (a member's email, `operator`), and what it may do. */
export type NewKeyDetails = { name?: string; createdBy?: string | null; restriction?: KeyRestriction };

export const MAX_KEY_NAME_LENGTH = 100;

function keyNameOf(name: string | undefined, mode: Mode): string {
  if (name === undefined) return mode === 'live' ? 'Live key' : 'Test key';
  const trimmed = name.trim();
  if (!trimmed) throw invalidParam('name', 'name must not be empty: say what the key is for, e.g. "Shop server"');
  if (trimmed.length > MAX_KEY_NAME_LENGTH)
    throw invalidParam('name', `name must be at most ${MAX_KEY_NAME_LENGTH} characters`);
  return trimmed;
}

function checkedRestriction(restriction: KeyRestriction): KeyRestriction {
  if (restriction.kind === 'limited' && restriction.permissions.length === 0)
    throw invalidParam('permissions', 'choose at least one permission, or make the key read-only or full');
  return restriction;
}

/**
 * Creates a key and returns it, the one time it is known; only its hash is kept. Every key is made
 * here: by the CLI, the dashboard, a new merchant's first keys and a roll, each recorded in the
 * audit trail with who made it.
 */
export async function createApiKey(
  db: Db,
  clock: Clock,
  userId: string,
  mode: Mode,
  details: NewKeyDetails,
  by: AuditBy,
): Promise<CreatedKey> {
  const name = keyNameOf(details.name, mode);
  const restriction = checkedRestriction(details.restriction ?? FULL_ACCESS);
  const key = `sk_${mode}_${randomSecret(24)}`;
  const id = newId('key');
  const hint = `sk_${mode}_…${key.slice(-4)}`;
  await transact(db, async (trx) => {
    const now = clock.now();
    await insertApiKey(trx, {
      id,
      user_id: userId,
      mode,
      key_hash: sha256Hex(key),
      hint,
      created_at: now,
      revoked_at: null,
      last_used_at: null,
      name,
      created_by: details.createdBy ?? null,
      permissions: restrictionToColumn(restriction),
      expires_at: null,
    });
    await audit(trx, by, userId, mode, 'api_key.create', id, now, {
      hint,
      name,
      access: describeRestriction(restriction),
    });
  });
  return { id, key, mode, name };
}

/** Revokes a key by id or by the key itself (the CLI's `keys revoke`, the dashboard's revoke). */
export async function revokeApiKey(db: Db, clock: Clock, keyIdOrKey: string, by: AuditBy): Promise<{ id: string }> {
  const byKey = KEY_PATTERN.test(keyIdOrKey);
  const row = await findApiKey(db, byKey ? { keyHash: sha256Hex(keyIdOrKey) } : { id: keyIdOrKey });
  if (!row) throw notFound('api_key', byKey ? undefined : keyIdOrKey);
  if (row.revoked_at == null)
    await transact(db, async (trx) => {
      const now = clock.now();
      await setApiKeyRevoked(trx, row.id, now);
      await audit(trx, by, row.user_id, row.mode, 'api_key.revoke', row.id, now, { hint: row.hint });
    });
  return { id: row.id };
}

/** How long the old key of a roll keeps working: from now (revoked at once) to 7 days. */
export const ROLL_PERIODS = {
  now: 0,
  '1h': HOUR_MS,
  '24h': DAY_MS,
  '3d': 3 * DAY_MS,
  '7d': 7 * DAY_MS,
} as const;
export type RollPeriod = keyof typeof ROLL_PERIODS;

export const isRollPeriod = (value: unknown): value is RollPeriod =>
  typeof value === 'string' && Object.hasOwn(ROLL_PERIODS, value);

export type RolledKey = { created: CreatedKey; old: { id: string; stopsAt: number } };

/**
 * Rolls a key: a new key with the same name and restriction at once, and the old one stopping after
 * `period` (revoked at once for `now`). The old key is refused as revoked from then, cached or not.
 * A revoked, expired or already rolled key cannot be rolled. The old key is marked rolled by one
 * guarded update before the new key is made, in one transaction: of two rolls of one key at once
 * (a double click, two tabs), one makes the new key and the other is refused as rolled already.
 * An audit trail records this call.
 */
export async function rollApiKey(
  db: Db,
  clock: Clock,
  old: { id: string; user_id: string; mode: Mode },
  period: RollPeriod,
  createdBy: string | null,
  by: AuditBy,
): Promise<RolledKey> {
  if (!isRollPeriod(period))
    throw invalidParam('period', `period must be one of ${Object.keys(ROLL_PERIODS).join(', ')}`);
  return transact(db, async (trx) => {
    const now = clock.now();
    const stopsAt = now + ROLL_PERIODS[period];
    // Read first, so a key plainly not rollable is refused with no write (a write empties the key
    // cache); the guarded update then decides between two rolls that both read it active.
    const refusal = await whyNotRollable(trx, old, now);
    if (refusal) throw refusal;
    const row = await markApiKeyRolled(
      trx,
      { id: old.id, userId: old.user_id, mode: old.mode },
      ROLL_PERIODS[period] === 0 ? { revoked_at: now } : { expires_at: stopsAt },
    );
    if (!row) throw (await whyNotRollable(trx, old, now)) ?? rolledAlready();
    const created = await createApiKey(
      trx,
      clock,
      row.user_id,
      row.mode,
      { name: row.name, createdBy, restriction: restrictionFromColumn(row.permissions) },
      by,
    );
    await audit(trx, by, row.user_id, row.mode, 'api_key.roll', row.id, now, {
      hint: row.hint,
      replaced_by: created.id,
      stops_at: new Date(stopsAt).toISOString(),
    });
    return { created, old: { id: row.id, stopsAt } };
  });
}

/** Why a key cannot be rolled: no such key, or one revoked, expired or rolled already; null when it can. */
async function whyNotRollable(
  db: Db,
  old: { id: string; user_id: string; mode: Mode },
  now: number,
): Promise<AppError | null> {
  const row = await findApiKey(db, { id: old.id });
  if (!row || row.user_id !== old.user_id || row.mode !== old.mode) return notFound('api_key', old.id);
  if (row.revoked_at != null || (row.expires_at != null && Number(row.expires_at) <= now))
    return new AppError('conflict.invalid_state', 'This key is revoked or expired: create a new key instead', {
      status: 'revoked',
    });
  return row.expires_at != null ? rolledAlready() : null;
}

const rolledAlready = () =>
  new AppError('conflict.invalid_state', 'This key was rolled already: it stops at its expiry', {
    status: 'expiring',
  });

/** Rolls a key found by its id alone (the CLI's `keys roll`, run by the operator). */
export async function rollApiKeyById(
  db: Db,
  clock: Clock,
  keyId: string,
  period: RollPeriod,
  by: AuditBy,
): Promise<RolledKey> {
  const row = await findApiKey(db, { id: keyId });
  if (!row) throw notFound('api_key', keyId);
  return rollApiKey(db, clock, { id: row.id, user_id: row.user_id, mode: row.mode }, period, 'operator', by);
}

const byOf = (ctx: Ctx): AuditBy => ({ actor: ctx.actor, origin: ctx.origin });

/** Who the signed-in caller is, as a key's `created_by` records it. */
export function creatorLabelOf(actor: Ctx['actor']): string {
  switch (actor.kind) {
    case 'member':
      return actor.email;
    case 'operator':
      return 'operator';
    case 'api_key':
      return `key ${actor.id}`;
    case 'payer':
      return actor.email;
    case 'service':
      return `service (${actor.job})`;
  }
}

/** A new key of the caller's merchant and mode, created by the caller (the dashboard's create). */
export function createApiKeyOf(ctx: Ctx, details: { name: string; restriction: KeyRestriction }): Promise<CreatedKey> {
  return createApiKey(
    ctx.db,
    ctx.deps.clock,
    ctx.merchant.id,
    ctx.mode,
    { ...details, createdBy: creatorLabelOf(ctx.actor) },
    byOf(ctx),
  );
}

/** Rolls one of the caller's keys of its mode; another merchant's, or the other mode's, is not found. */
export async function rollApiKeyOf(ctx: Ctx, keyId: string, period: RollPeriod): Promise<RolledKey> {
  return rollApiKey(
    ctx.db,
    ctx.deps.clock,
    { id: keyId, user_id: ctx.merchant.id, mode: ctx.mode },
    period,
    creatorLabelOf(ctx.actor),
    byOf(ctx),
  );
}

export async function addBankAccount(
  db: Db,
  clock: Clock,
  userId: string,
  number: string,
  name: string | null | undefined,
  by: AuditBy,
) {
  const parts = parseBankAccountNumber(number);
  if (!parts || !isValidBankAccountNumber(number))
    throw invalidParam('account_number', `account_number must be ${BANK_ACCOUNT_FORM}`);
  const row = {
    id: newId('bankAccount'),
    user_id: userId,
    account_number: formatBankAccountNumber(parts),
    name: name ?? null,
    created_at: clock.now(),
  };
  await transact(db, async (trx) => {
    await insertBankAccount(trx, row);
    await audit(trx, by, userId, null, 'bank_account.create', row.id, row.created_at, {
      account_number: row.account_number,
      name: row.name,
    });
  });
  return row;
}

export type NewMerchant = {
  name: string;
  email: string;
  password?: string;
  bankAccount?: string;
  /** Names the merchant's first keys' creator (`operator` at the CLI). */
  createdBy?: string;
  /** The first keys' names are `<keyNamePrefix> live key` and `… test key` (default `First`). */
  keyNamePrefix?: string;
};
export type CreatedMerchant = {
  user_id: string;
  live_key: string;
  test_key: string;
  bank_account_id: string | null;
  dashboard_password: string;
};

/** Who made a merchant when no one says: the operator setting the service up (tests, the demo). */
const SET_UP: AuditBy = { actor: { kind: 'operator', name: 'setup' } };

export async function createMerchant(
  db: Db,
  clock: Clock,
  input: NewMerchant,
  by: AuditBy = SET_UP,
): Promise<CreatedMerchant> {
  const email = input.email.trim().toLowerCase();
  if (!/^[^\s@]+@[^\s@]+\.[^\s@]+$/.test(email)) throw invalidParam('email', 'email must be an email address');
  if (!input.name.trim()) throw invalidParam('name', 'name must not be empty');
  const password = input.password ?? randomSecret(12);
  if (password.length < 8) throw invalidParam('password', 'password must be at least 8 characters');
  const passwordHash = await hashPassword(password);
  return transact(db, async (trx) => {
    const taken = await findUserByEmail(trx, email);
    if (taken) throw new AppError('conflict.email_taken', `A merchant with email ${email} already exists`, { email });
    const now = clock.now();
    const userId = newId('user');
    await insertUser(trx, {
      id: userId,
      name: input.name.trim(),
      email,
      password_hash: passwordHash,
      created_at: now,
      updated_at: now,
    });
    await audit(trx, by, userId, null, 'merchant.create', userId, now, { name: input.name.trim(), email });
    // The merchant's first member, who signs in to the dashboard with this email and password.
    await createOwnerMember(trx, { userId, email, passwordHash, now });
    const bankAccount = input.bankAccount
      ? await addBankAccount(trx, clock, userId, input.bankAccount, null, by)
      : null;
    const prefix = input.keyNamePrefix ?? 'First';
    const createdBy = input.createdBy ?? null;
    const live = await createApiKey(trx, clock, userId, 'live', { name: `${prefix} live key`, createdBy }, by);
    const test = await createApiKey(trx, clock, userId, 'test', { name: `${prefix} test key`, createdBy }, by);
    return {
      user_id: userId,
      live_key: live.key,
      test_key: test.key,
      bank_account_id: bankAccount?.id ?? null,
      dashboard_password: password,
    };
  });
}

const LAST_USED_PRECISION_MS = 60_000;

export type Authenticated = {
  keyId: string;
  mode: Mode;
  restriction: KeyRestriction;
  merchant: { id: string; name: string };
  clockOffsetMs: number;
};

/**
 * Resolves a bearer key to its merchant and mode; null when unknown, malformed, revoked or past its
 * expiry at `now` (real time). In hand when the key's row could be read at once and its last use
 * needs no write.
 */
export function authenticateKey(db: Db, key: string, now: number = Date.now()): NowOrLater<Authenticated | null> {
  const match = KEY_PATTERN.exec(key);
  if (!match) return null;
  const keyHash = sha256Hex(key);
  const cache = keyCacheOf(db);
  const cached = cache?.get(keyHash, now);
  if (cached) return withKeyRow(db, cached, match[1]!, now);
  const row = keyByHashQuery.firstNow(db, { keyHash });
  // Only a row read at once is kept: one that waited was not yet durable when read.
  if (cache && row && !(row instanceof Promise)) cache.remember(keyHash, row);
  return andThen(row, (found) => withKeyRow(db, found, match[1]!, now));
}

function withKeyRow(db: Db, row: KeyRow | undefined, mode: string, now: number): NowOrLater<Authenticated | null> {
  if (!row || row.revoked_at != null || row.mode !== mode) return null;
  // A rolled key's expiry is checked here, on every call, against the row whether it came from the
  // cache or not: the cache keeps rows until a write, and reaching an expiry writes nothing.
  if (row.expires_at != null && now >= Number(row.expires_at)) return null;
  const found: Authenticated = {
    keyId: row.key_id,
    mode: row.mode,
    restriction: restrictionOf(row.permissions),
    merchant: { id: row.user_id, name: row.name },
    clockOffsetMs: Number(row.test_clock_offset_ms),
  };
  // Kept to the minute, so a busy key costs one write a minute rather than one a call. The row,
  // cached or not, records it at once, so the calls until the write is done do not write it again.
  if (row.last_used_at == null || now - Number(row.last_used_at) >= LAST_USED_PRECISION_MS) {
    row.last_used_at = now;
    return setApiKeyLastUsed(db, row.key_id, now).then(() => found);
  }
  return found;
}

const restrictions = new Map<string, KeyRestriction>();

/** A key's restriction, read once per distinct column value rather than once per call. */
function restrictionOf(column: string | null): KeyRestriction {
  if (column == null) return FULL_ACCESS;
  let restriction = restrictions.get(column);
  if (!restriction) {
    if (restrictions.size >= 1000) restrictions.clear();
    restrictions.set(column, (restriction = restrictionFromColumn(column)));
  }
  return restriction;
}

export async function findMerchantByEmail(db: Db, email: string) {
  return findUserByEmail(db, email.trim().toLowerCase());
}

/** The merchant's name and email, for what Tono writes to payers and to the merchant. */
export async function merchantContact(db: Db, userId: string): Promise<{ name: string; email: string }> {
  const user = await findUserById(db, userId);
  if (!user) throw new Error(`no merchant ${userId}`);
  return { name: user.name, email: user.email };
}

/** Whether any merchant exists yet (the first start creates a demo merchant). */
export function anyMerchant(db: Db): Promise<boolean> {
  return anyUser(db);
}

/** One of the merchant's bank accounts, or undefined when the id is not theirs. */
export function bankAccountOf(db: Db, userId: string, id: string): Promise<BankAccountRow | undefined> {
  return findBankAccountOf(db, userId, id);
}

/** A bank account with its merchant's name, for the statement details of a payment into it. */
export function bankAccountWithOwner(db: Db, id: string) {
  return accountWithOwner(db, id);
}

export function listBankAccounts(db: Db, userId: string, page: { limit: number; startingAfter?: string }) {
  return bankAccountsPage(db, userId, page);
}

export type { BankAccountRow };

// A merchant's test clock runs this far ahead of real time (test mode; docs/api-conventions.md).

export function testClockOffsetOf(db: Db, userId: string): Promise<number> {
  return clockOffsetOf(db, userId);
}

export function testClockOffsetsOf(db: Db, userIds: string[]): Promise<Map<string, number>> {
  return clockOffsetsOf(db, userIds);
}

/** Moves a merchant's test clock on (the test helpers' advance, in its transaction). */
export function addToTestClockOffset(db: Db, userId: string, deltaMs: number): Promise<void> {
  return addToClockOffset(db, userId, deltaMs);
}

// What the merchant dashboard needs of merchants, keys and bank accounts (docs/dashboard.md).

export type DashboardMerchant = { id: string; name: string; email: string; clockOffsetMs: number };

export async function merchantById(db: Db, userId: string): Promise<DashboardMerchant | null> {
  const row = await findUserById(db, userId);
  return row ? { id: row.id, name: row.name, email: row.email, clockOffsetMs: Number(row.test_clock_offset_ms) } : null;
}

// Checked against when the email is unknown, so a wrong email costs the same scrypt as a wrong password.
let decoyHash: Promise<string> | null = null;

/** The merchant whose email and password these are; null otherwise, after the same work either way. */
export async function checkMerchantPassword(
  db: Db,
  email: string,
  password: string,
): Promise<DashboardMerchant | null> {
  const row = await findMerchantByEmail(db, email);
  decoyHash ??= hashPassword(randomSecret(12)).catch((error: unknown) => {
    decoyHash = null;
    throw error;
  });
  const ok = await verifyPassword(password, row?.password_hash ?? (await decoyHash));
  return row && ok
    ? { id: row.id, name: row.name, email: row.email, clockOffsetMs: Number(row.test_clock_offset_ms) }
    : null;
}

export const MIN_PASSWORD_LENGTH = 12;

/** Checks a new dashboard password and returns its scrypt hash, to store as a team member's. */
export async function hashNewPassword(password: string): Promise<string> {
  if (password.length < MIN_PASSWORD_LENGTH)
    throw invalidParam('password', `password must be at least ${MIN_PASSWORD_LENGTH} characters`);
  if (password.length > 200) throw invalidParam('password', 'password must be at most 200 characters');
  return hashPassword(password);
}

/**
 * Sets a dashboard password (scrypt), by the merchant's id (its first owner's) or a member's email:
 * the operator's way back in (docs/team.md).
 */
export async function setMerchantPassword(
  db: Db,
  clock: Clock,
  who: string,
  password: string,
  by: AuditBy,
): Promise<{ id: string; memberId: string }> {
  const passwordHash = await hashNewPassword(password);
  const member = who.startsWith('user_') ? await firstOwnerOf(db, who) : await liveMemberByEmail(db, who);
  if (!member) throw notFound('merchant', who);
  await transact(db, async (trx) => {
    await setMemberPassword(trx, member.id, passwordHash);
    await audit(trx, by, member.userId, null, 'member.password_change', member.id, clock.now());
  });
  return { id: member.userId, memberId: member.id };
}

export type ApiKeySummary = {
  id: string;
  mode: Mode;
  name: string;
  hint: string;
  created_by: string | null;
  restriction: KeyRestriction;
  created_at: number;
  last_used_at: number | null;
  revoked_at: number | null;
  /** When a rolled key stops (it still works before). */
  expires_at: number | null;
};

const numberOrNull = (value: number | string | null) => (value == null ? null : Number(value));

export async function listApiKeysOf(db: Db, userId: string, mode: Mode): Promise<ApiKeySummary[]> {
  const rows = await apiKeysOf(db, userId, mode);
  return rows.map(({ permissions, ...row }) => ({
    ...row,
    restriction: restrictionFromColumn(permissions),
    created_at: Number(row.created_at),
    last_used_at: numberOrNull(row.last_used_at),
    revoked_at: numberOrNull(row.revoked_at),
    expires_at: numberOrNull(row.expires_at),
  }));
}

/**
 * Revokes one of the caller's keys of its mode; another merchant's key, or the other mode's, is not
 * found (the dashboard's revoke).
 */
export async function revokeApiKeyOf(ctx: Ctx, keyId: string): Promise<{ id: string }> {
  const row = await findApiKeyOf(ctx.db, ctx.merchant.id, ctx.mode, keyId);
  if (!row) throw notFound('api_key', keyId);
  return revokeApiKey(ctx.db, ctx.deps.clock, row.id, byOf(ctx));
}

export async function listBankAccountsOf(db: Db, userId: string) {
  return allBankAccountsOf(db, userId);
}
