import type { Kysely, Selectable } from 'kysely';
import type { Database } from '../../store/tables.ts';
import type { PayerCodesTable, PayerSessionsTable } from './payer.tables.ts';

type Db = Kysely<Database>;
export type PayerCodeRow = Selectable<PayerCodesTable>;
export type PayerSessionRow = Selectable<PayerSessionsTable>;

export async function insertCode(db: Db, row: PayerCodeRow): Promise<void> {
  await db.insertInto('payer_codes').values(row).execute();
}

/** The email's code that can still be checked: not used, not dead, not expired, with a try left. */
export async function liveCodeOf(db: Db, email: string, now: number): Promise<PayerCodeRow | undefined> {
  return db
    .selectFrom('payer_codes')
    .selectAll()
    .where('email', '=', email)
    .where('dead_at', 'is', null)
    .where('used_at', 'is', null)
    .where('expires_at', '>', now)
    .where('tries_left', '>', 0)
    .orderBy('created_at', 'desc')
    .limit(1)
    .executeTakeFirst();
}

/** Spends one try of an unused code, atomically; false when none was left. */
export async function spendTry(db: Db, codeId: string): Promise<boolean> {
  const spent = await db
    .updateTable('payer_codes')
    .set((eb) => ({ tries_left: eb('tries_left', '-', 1) }))
    .where('id', '=', codeId)
    .where('tries_left', '>', 0)
    .where('used_at', 'is', null)
    .executeTakeFirst();
  return Number(spent.numUpdatedRows) > 0;
}

export async function extendCode(db: Db, codeId: string, expiresAt: number): Promise<void> {
  await db.updateTable('payer_codes').set({ expires_at: expiresAt }).where('id', '=', codeId).execute();
}

/** The email's code used at or after `since` by the browser whose pre-session token hashes to `usedWith`. */
export async function codeUsedBy(
  db: Db,
  email: string,
  usedWith: string,
  since: number,
): Promise<PayerCodeRow | undefined> {
  return db
    .selectFrom('payer_codes')
    .selectAll()
    .where('email', '=', email)
    .where('used_with', '=', usedWith)
    .where('used_at', '>=', since)
    .orderBy('created_at', 'desc')
    .limit(1)
    .executeTakeFirst();
}

export async function markCode(
  db: Db,
  codeId: string,
  change: { dead_at: number } | { used_at: number; used_with: string },
): Promise<void> {
  await db.updateTable('payer_codes').set(change).where('id', '=', codeId).execute();
}

export async function insertSession(db: Db, row: PayerSessionRow): Promise<void> {
  await db.insertInto('payer_sessions').values(row).execute();
}

export async function findSession(db: Db, idHash: string): Promise<PayerSessionRow | undefined> {
  return db.selectFrom('payer_sessions').selectAll().where('id_hash', '=', idHash).executeTakeFirst();
}

export async function touchSession(db: Db, idHash: string, now: number): Promise<void> {
  await db.updateTable('payer_sessions').set({ last_seen_at: now }).where('id_hash', '=', idHash).execute();
}

export async function endSessionRow(db: Db, idHash: string, now: number): Promise<void> {
  await db
    .updateTable('payer_sessions')
    .set({ ended_at: now })
    .where('id_hash', '=', idHash)
    .where('ended_at', 'is', null)
    .execute();
}
