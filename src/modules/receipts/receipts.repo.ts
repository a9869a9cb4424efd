import type { Mode } from '../../shared/mode.ts';
import type { Db } from '../../store/db.ts';
import { countOwned, deleteOwned, holdOwned } from '../../store/owned-rows.ts';
import { insertRow, prepared } from '../../store/prepared.ts';
import type { DocumentKind } from './receipts.rules.ts';
import type { ReceiptRow, TaxSettingsRow } from './receipts.tables.ts';

export type Owner = { userId: string; mode: Mode };

// Read as every payment succeeds, to know whether the merchant issues receipts: prepared.
const taxSettingsQuery = prepared<{ user_id: string }, TaxSettingsRow>((db, arg) =>
  db.selectFrom('tax_settings').selectAll().where('user_id', '=', arg('user_id')),
);

export function findTaxSettings(db: Db, userId: string): Promise<TaxSettingsRow | undefined> {
  return taxSettingsQuery.first(db, { user_id: userId });
}

/**
 * The merchant's settings as committed, from inside a transaction that did not change them: on
 * PostgreSQL with the other reads of the moment rather than as a round trip of the transaction's.
 */
export function findCommittedTaxSettings(trx: Db, userId: string): Promise<TaxSettingsRow | undefined> {
  return taxSettingsQuery.firstCommitted(trx, { user_id: userId });
}

/** Writes the merchant's settings, keeping when they were first made. */
export async function saveTaxSettings(db: Db, row: TaxSettingsRow): Promise<void> {
  await db
    .insertInto('tax_settings')
    .values(row)
    .onConflict((oc) =>
      oc.column('user_id').doUpdateSet({
        legal_name: row.legal_name,
        gst_number: row.gst_number,
        prices_include_gst: row.prices_include_gst,
        issue_tax_invoices: row.issue_tax_invoices,
        email_receipts: row.email_receipts,
        updated_at: row.updated_at,
      }),
    )
    .execute();
}

/**
 * The next number of a kind of document, counted in the caller's transaction: the counter row is
 * made if missing and moved by one, and its row lock (PostgreSQL; SQLite's writers take turns)
 * holds every other issuer of the merchant's mode and kind until this transaction ends, so numbers
 * have no gaps (a transaction that rolls back takes its number back with it) and no duplicates.
 */
export async function nextNumber(db: Db, owner: Owner, kind: DocumentKind): Promise<number> {
  await db
    .insertInto('receipt_counters')
    .values({ user_id: owner.userId, mode: owner.mode, kind, last_number: 0 })
    .onConflict((oc) => oc.columns(['user_id', 'mode', 'kind']).doNothing())
    .execute();
  const row = await db
    .updateTable('receipt_counters')
    .set((eb) => ({ last_number: eb('last_number', '+', 1) }))
    .where('user_id', '=', owner.userId)
    .where('mode', '=', owner.mode)
    .where('kind', '=', kind)
    .returning('last_number')
    .executeTakeFirstOrThrow();
  return Number(row.last_number);
}

export async function insertReceipt(db: Db, row: ReceiptRow): Promise<void> {
  await insertRow(db, 'receipts', row);
}

export function findReceiptOfPayment(db: Db, paymentId: string): Promise<ReceiptRow | undefined> {
  return db
    .selectFrom('receipts')
    .selectAll()
    .where('payment_id', '=', paymentId)
    .where('kind', '=', 'receipt')
    .executeTakeFirst();
}

/**
 * What a payment's credit notes credited so far, in cents. Read after the credit note counter is
 * moved (nextNumber), whose lock holds every other issuer of the merchant's credit notes: each
 * statement of a PostgreSQL transaction at READ COMMITTED sees what committed before it, so two
 * refunds of one payment never both read the same sum.
 */
export async function creditedSoFar(db: Db, paymentId: string): Promise<number> {
  const row = await db
    .selectFrom('receipts')
    .select((eb) => eb.fn.sum<number | string | null>('total_cents').as('cents'))
    .where('payment_id', '=', paymentId)
    .where('kind', '=', 'credit_note')
    .executeTakeFirst();
  return Number(row?.cents ?? 0);
}

export function findCreditNoteOfRefund(db: Db, refundId: string): Promise<ReceiptRow | undefined> {
  return db.selectFrom('receipts').selectAll().where('refund_id', '=', refundId).executeTakeFirst();
}

export function findReceipt(db: Db, owner: Owner, id: string): Promise<ReceiptRow | undefined> {
  return db
    .selectFrom('receipts')
    .selectAll()
    .where('id', '=', id)
    .where('user_id', '=', owner.userId)
    .where('mode', '=', owner.mode)
    .executeTakeFirst();
}

export function findReceiptById(db: Db, id: string): Promise<ReceiptRow | undefined> {
  return db.selectFrom('receipts').selectAll().where('id', '=', id).executeTakeFirst();
}

export type ReceiptFilters = {
  limit: number;
  starting_after?: string;
  payment_id?: string;
  refund_id?: string;
  kind?: string;
};

export function listReceipts(db: Db, owner: Owner, filters: ReceiptFilters): Promise<ReceiptRow[]> {
  let query = db.selectFrom('receipts').selectAll().where('user_id', '=', owner.userId).where('mode', '=', owner.mode);
  if (filters.payment_id !== undefined) query = query.where('payment_id', '=', filters.payment_id);
  if (filters.refund_id !== undefined) query = query.where('refund_id', '=', filters.refund_id);
  if (filters.kind) query = query.where('kind', '=', filters.kind);
  if (filters.starting_after) query = query.where('id', '<', filters.starting_after);
  return query
    .orderBy('id', 'desc')
    .limit(filters.limit + 1)
    .execute();
}

/** The documents of these payments, oldest first. */
export function receiptsOfPayments(db: Db, paymentIds: readonly string[]): Promise<ReceiptRow[]> {
  if (paymentIds.length === 0) return Promise.resolve([]);
  return db.selectFrom('receipts').selectAll().where('payment_id', 'in', paymentIds).orderBy('id').execute();
}

const testOwner = (userId: string): Owner => ({ userId, mode: 'test' });
export const countTestReceipts = (db: Db, userId: string) => countOwned(db, 'receipts', testOwner(userId));
export const holdTestReceipts = (db: Db, userId: string) => holdOwned(db, 'receipts', testOwner(userId));
/** Test documents go, and their numbering starts again at 1. */
export async function deleteTestReceipts(db: Db, userId: string): Promise<number> {
  const deleted = await deleteOwned(db, 'receipts', testOwner(userId));
  await deleteOwned(db, 'receipt_counters', testOwner(userId));
  return deleted;
}
