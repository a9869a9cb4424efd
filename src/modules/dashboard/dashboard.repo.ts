import type { Kysely, Selectable } from 'kysely';
import type { Database } from '../../store/tables.ts';
import { lockForUpdate } from '../../store/db.ts';
import type { DashboardResetsTable, DashboardSessionsTable } from './dashboard.tables.ts';

type Db = Kysely<Database>;
export type DashboardSessionRow = Selectable<DashboardSessionsTable>;

export async function insertSession(db: Db, row: DashboardSessionRow): Promise<void> {
  await db.insertInto('dashboard_sessions').values(row).execute();
}

export async function findSession(db: Db, idHash: string): Promise<DashboardSessionRow | undefined> {
  return db.selectFrom('dashboard_sessions').selectAll().where('id_hash', '=', idHash).executeTakeFirst();
}

export async function touchSession(db: Db, idHash: string, now: number): Promise<void> {
  await db.updateTable('dashboard_sessions').set({ last_seen_at: now }).where('id_hash', '=', idHash).execute();
}

export async function endSessionRow(db: Db, idHash: string, now: number): Promise<void> {
  await db
    .updateTable('dashboard_sessions')
    .set({ ended_at: now })
    .where('id_hash', '=', idHash)
    .where('ended_at', 'is', null)
    .execute();
}

/** Ends every live session of one team member. */
export async function endSessionRowsOfMember(db: Db, memberId: string, now: number): Promise<void> {
  await db
    .updateTable('dashboard_sessions')
    .set({ ended_at: now })
    .where('member_id', '=', memberId)
    .where('ended_at', 'is', null)
    .execute();
}

export async function endSessionRowsOf(db: Db, userId: string, now: number): Promise<void> {
  await db
    .updateTable('dashboard_sessions')
    .set({ ended_at: now })
    .where('user_id', '=', userId)
    .where('ended_at', 'is', null)
    .execute();
}

/** Sessions of a team member still live at `now`, newest first. */
export async function liveSessionRowsOf(
  db: Db,
  memberId: string,
  now: number,
  idleMs: number,
): Promise<DashboardSessionRow[]> {
  return db
    .selectFrom('dashboard_sessions')
    .selectAll()
    .where('member_id', '=', memberId)
    .where('ended_at', 'is', null)
    .where('expires_at', '>', now)
    .where('last_seen_at', '>', now - idleMs)
    .orderBy('created_at', 'desc')
    .limit(50)
    .execute();
}

/** Ends the member's live session whose hash starts with `ref`; false when there is none. */
export async function endSessionByRef(db: Db, memberId: string, ref: string, now: number): Promise<boolean> {
  const result = await db
    .updateTable('dashboard_sessions')
    .set({ ended_at: now })
    .where('member_id', '=', memberId)
    .where('id_hash', 'like', `${ref}%`)
    .where('ended_at', 'is', null)
    .executeTakeFirst();
  return Number(result.numUpdatedRows) > 0;
}

export async function insertReset(db: Db, row: Selectable<DashboardResetsTable>): Promise<void> {
  await db.insertInto('dashboard_resets').values(row).execute();
}

export async function findReset(db: Db, tokenHash: string): Promise<Selectable<DashboardResetsTable> | undefined> {
  return db.selectFrom('dashboard_resets').selectAll().where('token_hash', '=', tokenHash).executeTakeFirst();
}

/** Spends an unused reset token, atomically; false when it was spent already. */
export async function spendReset(db: Db, tokenHash: string, now: number): Promise<boolean> {
  const spent = await db
    .updateTable('dashboard_resets')
    .set({ used_at: now })
    .where('token_hash', '=', tokenHash)
    .where('used_at', 'is', null)
    .executeTakeFirst();
  return Number(spent.numUpdatedRows) > 0;
}

export async function setShownOnce(db: Db, idHash: string, sealed: string | null): Promise<void> {
  await db.updateTable('dashboard_sessions').set({ shown_once_sealed: sealed }).where('id_hash', '=', idHash).execute();
}

export async function shownOnceOf(db: Db, idHash: string): Promise<string | null> {
  const row = await db
    .selectFrom('dashboard_sessions')
    .select('shown_once_sealed')
    .where('id_hash', '=', idHash)
    .executeTakeFirst();
  return row?.shown_once_sealed ?? null;
}

export async function lockShownOnce(db: Db, idHash: string): Promise<string | null> {
  const row = await lockForUpdate(
    db,
    db.selectFrom('dashboard_sessions').select('shown_once_sealed').where('id_hash', '=', idHash),
  ).executeTakeFirst();
  return row?.shown_once_sealed ?? null;
}
