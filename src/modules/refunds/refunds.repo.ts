import { sql } from 'kysely';
import type { Mode } from '../../shared/mode.ts';
import { lockForUpdate, type Db } from '../../store/db.ts';
import { countOwned, deleteOwned, holdOwned } from '../../store/owned-rows.ts';
import { consentTokenColumns } from '../../store/consent-token-rows.ts';
import { insertRow, updateById } from '../../store/prepared.ts';
import type { RefundAuthorityRow, RefundRow } from './refunds.tables.ts';

export type Owner = { userId: string; mode: Mode };

export async function insertRefund(db: Db, row: RefundRow): Promise<void> {
  await insertRow(db, 'refunds', row);
}

export async function findRefund(db: Db, owner: Owner, id: string): Promise<RefundRow | undefined> {
  return db
    .selectFrom('refunds')
    .selectAll()
    .where('id', '=', id)
    .where('user_id', '=', owner.userId)
    .where('mode', '=', owner.mode)
    .executeTakeFirst();
}

export async function findRefundById(db: Db, id: string): Promise<RefundRow | undefined> {
  return db.selectFrom('refunds').selectAll().where('id', '=', id).executeTakeFirst();
}

export async function lockRefund(db: Db, id: string): Promise<RefundRow | undefined> {
  return lockForUpdate(db, db.selectFrom('refunds').selectAll().where('id', '=', id)).executeTakeFirst();
}

export async function updateRefund(db: Db, id: string, changes: Partial<RefundRow>): Promise<void> {
  await updateById(db, 'refunds', id, changes);
}

/** Updates the refund only while it is pending; whether it did. */
export async function updateRefundIfPending(db: Db, id: string, changes: Partial<RefundRow>): Promise<boolean> {
  const result = await updateById(db, 'refunds', id, changes, { status: 'pending' });
  return Number(result.numAffectedRows ?? 0) > 0;
}

export type RefundFilters = {
  limit: number;
  starting_after?: string;
  payment_id?: string;
  status?: string;
  created_from?: number;
  created_to?: number;
};

/** The owner's refunds, newest first, one more than `limit` (pageOf tells whether there are more). */
export async function listRefunds(db: Db, owner: Owner, filters: RefundFilters): Promise<RefundRow[]> {
  let query = db.selectFrom('refunds').selectAll().where('user_id', '=', owner.userId).where('mode', '=', owner.mode);
  if (filters.payment_id !== undefined) query = query.where('payment_id', '=', filters.payment_id);
  if (filters.status) query = query.where('status', '=', filters.status);
  if (filters.starting_after) query = query.where('id', '<', filters.starting_after);
  if (filters.created_from !== undefined) query = query.where('created_at', '>=', filters.created_from);
  if (filters.created_to !== undefined) query = query.where('created_at', '<', filters.created_to);
  return query
    .orderBy('id', 'desc')
    .limit(filters.limit + 1)
    .execute();
}

/** Refunds of these payments, oldest first (the payment pages list them in order). */
export async function refundsOfPayments(db: Db, paymentIds: readonly string[]): Promise<RefundRow[]> {
  if (paymentIds.length === 0) return [];
  return db.selectFrom('refunds').selectAll().where('payment_id', 'in', paymentIds).orderBy('id').execute();
}

/** What the authority's refunds use of its period limit in `window`: its counter, if it counts that window. */
export function authorityUsage(authority: RefundAuthorityRow, window: { start: number; end: number }): number {
  return authority.period_start === window.start ? authority.period_used_cents : 0;
}

/** Counts a refund of `cents` in `window` on the authority (the caller holds its row). */
export async function countOnAuthority(
  db: Db,
  authority: RefundAuthorityRow,
  window: { start: number; end: number },
  cents: number,
): Promise<void> {
  await updateById(db, 'refund_authorities', authority.id, {
    period_start: window.start,
    period_end: window.end,
    period_used_cents: authorityUsage(authority, window) + cents,
  });
}

/** Takes a refund made at `createdAt` off the authority's counter, if it is in the window counted. */
export async function uncountOnAuthority(db: Db, authorityId: string, createdAt: number, cents: number): Promise<void> {
  await db
    .updateTable('refund_authorities')
    .set((eb) => ({ period_used_cents: eb('period_used_cents', '-', cents) }))
    .where('id', '=', authorityId)
    .where('period_start', '<=', createdAt)
    .where('period_end', '>', createdAt)
    .execute();
}

export async function insertAuthority(db: Db, row: RefundAuthorityRow): Promise<boolean> {
  const result = await db
    .insertInto('refund_authorities')
    .values(row)
    // The index's own predicate, as a literal: a bound parameter would not match the partial index.
    .onConflict((oc) => oc.columns(['user_id', 'mode']).where(sql<boolean>`status = 'active'`).doNothing())
    .returning('id')
    .executeTakeFirst();
  return result !== undefined;
}

export async function findActiveAuthority(db: Db, owner: Owner): Promise<RefundAuthorityRow | undefined> {
  return db
    .selectFrom('refund_authorities')
    .selectAll()
    .where('user_id', '=', owner.userId)
    .where('mode', '=', owner.mode)
    .where('status', '=', 'active')
    .executeTakeFirst();
}

export async function lockActiveAuthority(db: Db, owner: Owner): Promise<RefundAuthorityRow | undefined> {
  return lockForUpdate(
    db,
    db
      .selectFrom('refund_authorities')
      .selectAll()
      .where('user_id', '=', owner.userId)
      .where('mode', '=', owner.mode)
      .where('status', '=', 'active'),
  ).executeTakeFirst();
}

export async function findAuthorityById(db: Db, id: string): Promise<RefundAuthorityRow | undefined> {
  return db.selectFrom('refund_authorities').selectAll().where('id', '=', id).executeTakeFirst();
}

export async function findAuthorityByState(db: Db, state: string): Promise<RefundAuthorityRow | undefined> {
  return db.selectFrom('refund_authorities').selectAll().where('auth_state', '=', state).executeTakeFirst();
}

export async function lockAuthority(db: Db, id: string): Promise<RefundAuthorityRow | undefined> {
  return lockForUpdate(db, db.selectFrom('refund_authorities').selectAll().where('id', '=', id)).executeTakeFirst();
}

export async function updateAuthority(db: Db, id: string, changes: Partial<RefundAuthorityRow>): Promise<boolean> {
  const result = await updateById(db, 'refund_authorities', id, changes);
  return Number(result.numAffectedRows ?? 0) > 0;
}

/** Updates the authority only while it has `status`; whether it did (a second return from the bank changes nothing). */
export async function updateAuthorityIfStatus(
  db: Db,
  id: string,
  status: string,
  changes: Partial<RefundAuthorityRow>,
): Promise<boolean> {
  const result = await updateById(db, 'refund_authorities', id, changes, { status });
  return Number(result.numAffectedRows ?? 0) > 0;
}

/** The owner's authorities, newest first (the active one, those awaiting approval, and past ones). */
export async function listAuthorities(db: Db, owner: Owner, limit = 20): Promise<RefundAuthorityRow[]> {
  return db
    .selectFrom('refund_authorities')
    .selectAll()
    .where('user_id', '=', owner.userId)
    .where('mode', '=', owner.mode)
    .orderBy('id', 'desc')
    .limit(limit)
    .execute();
}

export const countTestRefunds = (db: Db, userId: string) => countOwned(db, 'refunds', { userId, mode: 'test' });
export const holdTestRefunds = (db: Db, userId: string) => holdOwned(db, 'refunds', { userId, mode: 'test' });
export const deleteTestRefunds = (db: Db, userId: string) => deleteOwned(db, 'refunds', { userId, mode: 'test' });

/**
 * The owner's refunds that left the merchant's account in [from, to) and did not fail, oldest
 * first, at most `limit` (the reconciliation's candidates for money out).
 */
export async function refundsSentBetween(
  db: Db,
  owner: Owner,
  window: { from: number; to: number },
  limit: number,
): Promise<RefundRow[]> {
  return db
    .selectFrom('refunds')
    .selectAll()
    .where('user_id', '=', owner.userId)
    .where('mode', '=', owner.mode)
    .where('status', '!=', 'failed')
    .where('sent_at', '>=', window.from)
    .where('sent_at', '<', window.to)
    .orderBy('sent_at')
    .orderBy('id')
    .limit(limit)
    .execute();
}

/** The columns of a consent token. */
export const authorityTokenColumns = consentTokenColumns;
