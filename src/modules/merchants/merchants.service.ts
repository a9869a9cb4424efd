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
  setApiKeyLastUsed,
  setApiKeyRevoked,
  setUserPasswordHash,
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

type Db = Kysely<Database>;

export const KEY_PATTERN = /^sk_(live|test)_[A-Za-z0-9_-]{32}$/;

export type CreatedKey = { id: string; key: string; mode: Mode };

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

export async function createApiKey(db: Db, clock: Clock, userId: string, mode: Mode, by: AuditBy): Promise<CreatedKey> {
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
    });
    await audit(trx, by, userId, mode, 'api_key.create', id, now, { hint });
  });
  return { id, key, mode };
}

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

export type NewMerchant = { name: string; email: string; password?: string; bankAccount?: string };
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
    const bankAccount = input.bankAccount
      ? await addBankAccount(trx, clock, userId, input.bankAccount, null, by)
      : null;
    const live = await createApiKey(trx, clock, userId, 'live', by);
    const test = await createApiKey(trx, clock, userId, 'test', by);
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
  merchant: { id: string; name: string };
  clockOffsetMs: number;
};

/**
 * Resolves a bearer key to its merchant and mode; null when unknown, malformed or revoked. In hand
 * when the key's row could be read at once and its last use needs no write.
 */
export function authenticateKey(db: Db, key: string): NowOrLater<Authenticated | null> {
  const match = KEY_PATTERN.exec(key);
  if (!match) return null;
  const keyHash = sha256Hex(key);
  const now = Date.now();
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
  const found: Authenticated = {
    keyId: row.key_id,
    mode: row.mode,
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

/** Checks a new dashboard password and returns its scrypt hash, to store with setMerchantPasswordHash. */
export async function hashNewPassword(password: string): Promise<string> {
  if (password.length < MIN_PASSWORD_LENGTH)
    throw invalidParam('password', `password must be at least ${MIN_PASSWORD_LENGTH} characters`);
  if (password.length > 200) throw invalidParam('password', 'password must be at most 200 characters');
  return hashPassword(password);
}

/** Stores a hash from hashNewPassword as the merchant's password (in the caller's transaction). */
export async function setMerchantPasswordHash(
  db: Db,
  clock: Clock,
  userId: string,
  passwordHash: string,
  by: AuditBy,
): Promise<void> {
  await transact(db, async (trx) => {
    const now = clock.now();
    await setUserPasswordHash(trx, userId, passwordHash, now);
    await audit(trx, by, userId, null, 'merchant.password_change', userId, now);
  });
}

/** Sets a merchant's dashboard password (scrypt), by id or email. */
export async function setMerchantPassword(
  db: Db,
  clock: Clock,
  who: string,
  password: string,
  by: AuditBy,
): Promise<{ id: string }> {
  const passwordHash = await hashNewPassword(password);
  const row = who.startsWith('user_') ? await findUserById(db, who) : await findMerchantByEmail(db, who);
  if (!row) throw notFound('merchant', who);
  await setMerchantPasswordHash(db, clock, row.id, passwordHash, by);
  return { id: row.id };
}

export type ApiKeySummary = {
  id: string;
  mode: Mode;
  hint: string;
  created_at: number;
  last_used_at: number | null;
  revoked_at: number | null;
};

export async function listApiKeysOf(db: Db, userId: string, mode: Mode): Promise<ApiKeySummary[]> {
  const rows = await apiKeysOf(db, userId, mode);
  return rows.map((row) => ({
    ...row,
    created_at: Number(row.created_at),
    last_used_at: row.last_used_at == null ? null : Number(row.last_used_at),
    revoked_at: row.revoked_at == null ? null : Number(row.revoked_at),
  }));
}

/** Revokes one of this merchant's keys in this mode; another merchant's key, or the other mode's, is not found. */
export async function revokeApiKeyOf(
  db: Db,
  clock: Clock,
  userId: string,
  mode: Mode,
  keyId: string,
  by: AuditBy,
): Promise<{ id: string }> {
  const row = await findApiKeyOf(db, userId, mode, keyId);
  if (!row) throw notFound('api_key', keyId);
  return revokeApiKey(db, clock, row.id, by);
}

export async function listBankAccountsOf(db: Db, userId: string) {
  return allBankAccountsOf(db, userId);
}
