import type { Kysely } from 'kysely';
import { AppError, invalidParam, notFound } from '../../shared/errors.ts';
import { hashPassword, randomSecret, sha256Hex } from '../../shared/crypto.ts';
import { newId } from '../../shared/ids.ts';
import type { Clock } from '../../shared/time.ts';
import { transact } from '../../store/tx.ts';
import type { Database } from '../../store/tables.ts';
import {
  anyUser, findApiKey, findBankAccountOf, findUserByEmail, findUserById, insertApiKey, insertBankAccount, insertUser, keyByHashQuery, setApiKeyRevoked,
} from './merchants.repo.ts';
import {
  BANK_ACCOUNT_FORM,
  formatBankAccountNumber,
  isValidBankAccountNumber,
  parseBankAccountNumber,
} from './bank-account-number.ts';
import type { Mode } from '../../shared/mode.ts';

type Db = Kysely<Database>;

export const KEY_PATTERN = /^sk_(live|test)_[A-Za-z0-9_-]{32}$/;

export type CreatedKey = { id: string; key: string; mode: Mode };

export async function createApiKey(db: Db, clock: Clock, userId: string, mode: Mode): Promise<CreatedKey> {
  const key = `sk_${mode}_${randomSecret(24)}`;
  const id = newId('key');
  await insertApiKey(db, { id, user_id: userId, mode, key_hash: sha256Hex(key), hint: `sk_${mode}_…${key.slice(-4)}`, created_at: clock.now(), revoked_at: null });
  return { id, key, mode };
}

export async function revokeApiKey(db: Db, clock: Clock, keyIdOrKey: string): Promise<{ id: string }> {
  const byKey = KEY_PATTERN.test(keyIdOrKey);
  const row = await findApiKey(db, byKey ? { keyHash: sha256Hex(keyIdOrKey) } : { id: keyIdOrKey });
  if (!row) throw notFound('api_key', byKey ? undefined : keyIdOrKey);
  if (row.revoked_at == null) await setApiKeyRevoked(db, row.id, clock.now());
  return { id: row.id };
}

export async function addBankAccount(db: Db, clock: Clock, userId: string, number: string, name?: string | null) {
  const parts = parseBankAccountNumber(number);
  if (!parts || !isValidBankAccountNumber(number)) throw invalidParam('account_number', `account_number must be ${BANK_ACCOUNT_FORM}`);
  const row = { id: newId('bankAccount'), user_id: userId, account_number: formatBankAccountNumber(parts), name: name ?? null, created_at: clock.now() };
  await insertBankAccount(db, row);
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

export async function createMerchant(db: Db, clock: Clock, input: NewMerchant): Promise<CreatedMerchant> {
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
    await insertUser(trx, { id: userId, name: input.name.trim(), email, password_hash: passwordHash, created_at: now, updated_at: now });
    const bankAccount = input.bankAccount ? await addBankAccount(trx, clock, userId, input.bankAccount) : null;
    const live = await createApiKey(trx, clock, userId, 'live');
    const test = await createApiKey(trx, clock, userId, 'test');
    return { user_id: userId, live_key: live.key, test_key: test.key, bank_account_id: bankAccount?.id ?? null, dashboard_password: password };
  });
}

export type Authenticated = { keyId: string; mode: Mode; merchant: { id: string; name: string }; clockOffsetMs: number };

/** Resolves a bearer key to its merchant and mode; null when unknown, malformed or revoked. */
export async function authenticateKey(db: Db, key: string): Promise<Authenticated | null> {
  const match = KEY_PATTERN.exec(key);
  if (!match) return null;
  const row = await keyByHashQuery.first(db, { keyHash: sha256Hex(key) });
  if (!row || row.revoked_at != null || row.mode !== match[1]) return null;
  return {
    keyId: row.key_id,
    mode: row.mode,
    merchant: { id: row.user_id, name: row.name },
    clockOffsetMs: Number(row.test_clock_offset_ms),
  };
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
export const anyMerchant = anyUser;

/** One of the merchant's bank accounts, or undefined when the id is not theirs. */
export const bankAccountOf = findBankAccountOf;
export { bankAccountWithOwner, listBankAccounts, type BankAccountRow } from './merchants.repo.ts';

// A merchant's test clock runs this far ahead of real time (test mode; docs/api-conventions.md).
export { testClockOffsetOf, testClockOffsetsOf, addToTestClockOffset } from './merchants.repo.ts';
