import type { Kysely, Selectable } from 'kysely';
import { inJsonArray } from '../../store/db.ts';
import { prepared } from '../../store/prepared.ts';
import type { Database } from '../../store/tables.ts';
import type { Mode } from '../../shared/mode.ts';
import type { ApiKeysTable, BankAccountsTable, UsersTable } from './merchants.tables.ts';
import { keysWriteEnds, keysWriteStarts, type KeyRow } from './merchants.key-cache.ts';

type Db = Kysely<Database>;
export type UserRow = Selectable<UsersTable>;
export type BankAccountRow = Selectable<BankAccountsTable>;

/**
 * Every write to api_keys or users goes through this, so the key cache never answers with a row
 * such a write is changing or has changed (merchants.key-cache.ts). The one exception is a key's
 * last use, which the key check writes and updates in its cached row itself.
 */
async function writingKeys<T>(write: () => Promise<T>): Promise<T> {
  keysWriteStarts();
  try {
    return await write();
  } finally {
    keysWriteEnds();
  }
}

export async function insertApiKey(db: Db, row: Selectable<ApiKeysTable>): Promise<void> {
  await writingKeys(() => db.insertInto('api_keys').values(row).execute());
}

export async function findApiKey(db: Db, by: { id: string } | { keyHash: string }) {
  return db
    .selectFrom('api_keys')
    .select(['id', 'user_id', 'mode', 'hint', 'name', 'permissions', 'revoked_at', 'expires_at'])
    .where('id' in by ? 'id' : 'key_hash', '=', 'id' in by ? by.id : by.keyHash)
    .executeTakeFirst();
}

export async function setApiKeyRevoked(db: Db, id: string, at: number): Promise<void> {
  await writingKeys(() =>
    db.updateTable('api_keys').set({ revoked_at: at }).where('id', '=', id).where('revoked_at', 'is', null).execute(),
  );
}

/**
 * Marks an active key (neither revoked nor rolled) of this merchant and mode as rolled: revoked at
 * once, or stopping at a time. One guarded update, so of two rolls of one key at once only one
 * changes it (on PostgreSQL the second waits for the first's row and then finds it rolled). Returns
 * the key as it was, or undefined when it changed nothing.
 */
export async function markApiKeyRolled(
  db: Db,
  key: { id: string; userId: string; mode: Mode },
  stop: { revoked_at: number } | { expires_at: number },
) {
  return writingKeys(() =>
    db
      .updateTable('api_keys')
      .set(stop)
      .where('id', '=', key.id)
      .where('user_id', '=', key.userId)
      .where('mode', '=', key.mode)
      .where('revoked_at', 'is', null)
      .where('expires_at', 'is', null)
      .returning(['id', 'user_id', 'mode', 'hint', 'name', 'permissions'])
      .executeTakeFirst(),
  );
}

export async function insertBankAccount(db: Db, row: BankAccountRow): Promise<void> {
  await db.insertInto('bank_accounts').values(row).execute();
}

// Read by every request created: prepared, and answered without Kysely's connection handling when it can be.
const bankAccountOfQuery = prepared<{ userId: string; id: string }, BankAccountRow>((db, arg) =>
  db.selectFrom('bank_accounts').selectAll().where('id', '=', arg('id')).where('user_id', '=', arg('userId')),
);

export async function findBankAccountOf(db: Db, userId: string, id: string): Promise<BankAccountRow | undefined> {
  return bankAccountOfQuery.first(db, { userId, id });
}

/** A bank account with the name of the merchant it belongs to. */
export async function bankAccountWithOwner(db: Db, id: string) {
  return db
    .selectFrom('bank_accounts')
    .innerJoin('users', 'users.id', 'bank_accounts.user_id')
    .select(['bank_accounts.account_number', 'bank_accounts.name', 'users.name as merchant_name'])
    .where('bank_accounts.id', '=', id)
    .executeTakeFirstOrThrow();
}

export async function listBankAccounts(
  db: Db,
  userId: string,
  page: { limit: number; startingAfter?: string },
): Promise<BankAccountRow[]> {
  let query = db.selectFrom('bank_accounts').selectAll().where('user_id', '=', userId);
  if (page.startingAfter) query = query.where('id', '<', page.startingAfter);
  return query
    .orderBy('id', 'desc')
    .limit(page.limit + 1)
    .execute();
}

export async function insertUser(db: Db, row: Omit<UserRow, 'test_clock_offset_ms'>): Promise<void> {
  await writingKeys(() => db.insertInto('users').values(row).execute());
}

export async function findUserByEmail(db: Db, email: string): Promise<UserRow | undefined> {
  return db.selectFrom('users').selectAll().where('email', '=', email).executeTakeFirst();
}

// Prepared: every subscription receipt reads its merchant's name.
const userByIdQuery = prepared<{ id: string }, UserRow>((db, arg) =>
  db.selectFrom('users').selectAll().where('id', '=', arg('id')),
);

export async function findUserById(db: Db, id: string): Promise<UserRow | undefined> {
  return userByIdQuery.first(db, { id });
}

export async function anyUser(db: Db): Promise<boolean> {
  return (await db.selectFrom('users').select('id').limit(1).executeTakeFirst()) !== undefined;
}

// Every API call runs this: prepared once rather than rebuilt per request.
export const keyByHashQuery = prepared<{ keyHash: string }, KeyRow>((db, arg) =>
  db
    .selectFrom('api_keys')
    .innerJoin('users', 'users.id', 'api_keys.user_id')
    .select([
      'api_keys.id as key_id',
      'api_keys.mode',
      'api_keys.revoked_at',
      'api_keys.expires_at',
      'api_keys.permissions',
      'api_keys.last_used_at',
      'users.id as user_id',
      'users.name',
      'users.test_clock_offset_ms',
    ])
    .where('api_keys.key_hash', '=', arg('keyHash')),
);

const clockOffsetQuery = prepared<{ userId: string }, { test_clock_offset_ms: number }>((db, arg) =>
  db.selectFrom('users').select('test_clock_offset_ms').where('id', '=', arg('userId')),
);

export async function testClockOffsetOf(db: Db, userId: string): Promise<number> {
  const row = await clockOffsetQuery.first(db, { userId });
  return row ? Number(row.test_clock_offset_ms) : 0;
}

const clockOffsetsQuery = prepared<{ ids: string }, { id: string; test_clock_offset_ms: number }>((db, arg) =>
  db
    .selectFrom('users')
    .select(['id', 'test_clock_offset_ms'])
    .where(inJsonArray(db, 'id', arg('ids'))),
);

export async function testClockOffsetsOf(db: Db, userIds: string[]): Promise<Map<string, number>> {
  const offsets = new Map<string, number>();
  if (userIds.length === 0) return offsets;
  const rows = await clockOffsetsQuery.all(db, { ids: JSON.stringify(userIds) });
  for (const row of rows) offsets.set(row.id, Number(row.test_clock_offset_ms));
  return offsets;
}

export async function addToTestClockOffset(db: Db, userId: string, deltaMs: number): Promise<void> {
  await writingKeys(() =>
    db
      .updateTable('users')
      .set((eb) => ({ test_clock_offset_ms: eb('test_clock_offset_ms', '+', deltaMs) }))
      .where('id', '=', userId)
      .execute(),
  );
}

export async function setApiKeyLastUsed(db: Db, id: string, at: number): Promise<void> {
  await db.updateTable('api_keys').set({ last_used_at: at }).where('id', '=', id).execute();
}

export async function apiKeysOf(db: Db, userId: string, mode: Mode) {
  return db
    .selectFrom('api_keys')
    .select([
      'id',
      'mode',
      'name',
      'hint',
      'created_by',
      'permissions',
      'created_at',
      'last_used_at',
      'revoked_at',
      'expires_at',
    ])
    .where('user_id', '=', userId)
    .where('mode', '=', mode)
    .orderBy('id', 'desc')
    .execute();
}

export async function findApiKeyOf(db: Db, userId: string, mode: Mode, id: string) {
  return db
    .selectFrom('api_keys')
    .select(['id', 'user_id', 'mode', 'name', 'permissions', 'revoked_at', 'expires_at'])
    .where('id', '=', id)
    .where('user_id', '=', userId)
    .where('mode', '=', mode)
    .executeTakeFirst();
}

export async function allBankAccountsOf(db: Db, userId: string): Promise<BankAccountRow[]> {
  return db.selectFrom('bank_accounts').selectAll().where('user_id', '=', userId).orderBy('id', 'desc').execute();
}
