import type { Kysely } from 'kysely';
import type { Database } from './tables.ts';

// An enduring bank consent's token, kept sealed in the same three columns on each table that holds
// one (recurring consents, subscriptions, refund authorities: docs/banks.md, "Consent tokens that
// expire"), read and replaced by table name, as owned-rows.ts counts and deletes: each module on
// its own table only.

/** The token as stored: sealed access and refresh tokens, and the access token's expiry (epoch ms). */
export type StoredConsentToken = { access: string; refresh: string | null; expiresAt: number | null };

/** The tables whose rows hold a consent token. */
export type ConsentTokenTable = {
  [T in keyof Database]: Database[T] extends {
    bank_access_token: unknown;
    bank_refresh_token: unknown;
    bank_token_expires_at: unknown;
  }
    ? T
    : never;
}[keyof Database];

type TokenColumns = {
  bank_access_token: string | null;
  bank_refresh_token: string | null;
  bank_token_expires_at: number | string | null;
};

/** The columns a token is written to. */
export function consentTokenColumns(token: StoredConsentToken) {
  return {
    bank_access_token: token.access,
    bank_refresh_token: token.refresh,
    bank_token_expires_at: token.expiresAt,
  };
}

/** The token of a row; null when the row holds none (a refund authority not approved yet). */
export function consentTokenOf(row: TokenColumns): StoredConsentToken | null {
  if (!row.bank_access_token) return null;
  return {
    access: row.bank_access_token,
    refresh: row.bank_refresh_token,
    expiresAt: row.bank_token_expires_at === null ? null : Number(row.bank_token_expires_at),
  };
}

/** The row's token as stored now; null when the row is gone or holds none. */
export async function findConsentToken(
  db: Kysely<any>,
  table: ConsentTokenTable,
  id: string,
): Promise<StoredConsentToken | null> {
  const row = await db
    .selectFrom(table)
    .select(['bank_access_token', 'bank_refresh_token', 'bank_token_expires_at'])
    .where('id', '=', id)
    .executeTakeFirst();
  return row ? consentTokenOf(row as TokenColumns) : null;
}

/** Replaces the row's token with `next`, only over the sealed access token `previousAccess`; true when it did. */
export async function replaceConsentToken(
  db: Kysely<any>,
  table: ConsentTokenTable,
  id: string,
  previousAccess: string,
  next: StoredConsentToken,
): Promise<boolean> {
  const result = await db
    .updateTable(table)
    .set(consentTokenColumns(next))
    .where('id', '=', id)
    .where('bank_access_token', '=', previousAccess)
    .executeTakeFirst();
  return Number(result.numUpdatedRows) > 0;
}
