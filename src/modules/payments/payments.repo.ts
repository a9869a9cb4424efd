import { sql, type Kysely } from 'kysely';
import { notFound } from '../../shared/errors.ts';
import { engineOf, failUnlessWritten, lockForUpdate, notWritten } from '../../store/db.ts';
import {
  inserted,
  insertLater,
  insertRow,
  prepared,
  preparedOfShape,
  updateById,
  type Arg,
} from '../../store/prepared.ts';
import type { Database } from '../../store/tables.ts';
import type { Mode } from '../../shared/mode.ts';
import type { PaymentRow } from './payments.tables.ts';
import { containsText } from '../../store/search.ts';
import { countOwned, deleteOwned, holdOwned } from '../../store/owned-rows.ts';

export type Owner = { userId: string; mode: Mode };
type Db = Kysely<Database>;

/** Inserts the payment unless its particulars are taken already (then false, and nothing written). */
export async function insertPaymentIfParticularsFree(db: Db, row: PaymentRow): Promise<boolean> {
  return inserted(await insertRow(db, 'payments', row, 'particulars'));
}

/**
 * Inserts the payment without waiting for the answer inside a PostgreSQL transaction (insertLater):
 * a clash of its particulars, or of its idempotency key, fails the transaction at its next awaited
 * statement (isParticularsClash tells the first).
 */
export async function insertPaymentLater(db: Db, row: PaymentRow): Promise<void> {
  await insertLater(db, 'payments', row);
}

/** Whether a statement failed because a payment's particulars were taken already (the unique index). */
export function isParticularsClash(error: unknown): boolean {
  const e = error as { code?: string; constraint?: string; message?: string } | null;
  if (e?.code === '23505') return e.constraint === 'payments_particulars_key';
  return /UNIQUE constraint failed: payments\.particulars/.test(e?.message ?? '');
}

export async function findPayment(db: Db, owner: Owner, id: string): Promise<PaymentRow | undefined> {
  return db
    .selectFrom('payments')
    .selectAll()
    .where('id', '=', id)
    .where('user_id', '=', owner.userId)
    .where('mode', '=', owner.mode)
    .executeTakeFirst();
}

export async function getPayment(db: Db, owner: Owner, id: string): Promise<PaymentRow> {
  const row = await findPayment(db, owner, id);
  if (!row) throw notFound('payment', id);
  return row;
}

const findPaymentByIdQuery = prepared<{ id: string }, PaymentRow>((db, arg) =>
  db.selectFrom('payments').selectAll().where('id', '=', arg('id')),
);

export async function findPaymentById(db: Db, id: string): Promise<PaymentRow | undefined> {
  return findPaymentByIdQuery.first(db, { id });
}

/** A request's newest payment awaiting the payer's consent at a bank that has made the consent. */
export async function findAwaitingPaymentOfRequest(db: Db, requestId: string): Promise<PaymentRow | undefined> {
  return db
    .selectFrom('payments')
    .selectAll()
    .where('request_id', '=', requestId)
    .where('status', '=', 'awaiting-consent')
    .where('bank_consent_id', 'is not', null)
    .orderBy('id', 'desc')
    .limit(1)
    .executeTakeFirst();
}

export async function findPaymentByState(db: Db, state: string): Promise<PaymentRow | undefined> {
  return db.selectFrom('payments').selectAll().where('auth_state', '=', state).executeTakeFirst();
}

const lockPaymentQuery = prepared<{ id: string }, PaymentRow>((db, arg) =>
  lockForUpdate(db, db.selectFrom('payments').selectAll().where('id', '=', arg('id'))),
);

export async function lockPayment(db: Db, id: string): Promise<PaymentRow | undefined> {
  return lockPaymentQuery.first(db, { id });
}

export async function updatePayment(db: Db, id: string, changes: Partial<PaymentRow>): Promise<void> {
  await updateById(db, 'payments', id, changes);
}

/** Adds `deltaCents` to what is refunded of the payment (the caller holds its row). */
export async function addRefunded(db: Db, id: string, deltaCents: number): Promise<void> {
  await db
    .updateTable('payments')
    .set((eb) => ({ refunded_cents: eb('refunded_cents', '+', deltaCents) }))
    .where('id', '=', id)
    .execute();
}

/** Updates the payment only while it has `status`; whether it did. */
export async function updatePaymentIfStatus(
  db: Db,
  id: string,
  status: string,
  changes: Partial<PaymentRow>,
): Promise<boolean> {
  return Number((await updateById(db, 'payments', id, changes, { status })).numAffectedRows ?? 0) > 0;
}

/** The update per set of columns and guard, prepared (as updateById's are): it runs on every successful charge. */
function takingEnduringAccountQuery(columns: readonly string[], guarded: boolean) {
  return preparedOfShape<Record<string, unknown>, { payer_account_sealed: string | null }>(
    `payments: update ${columns.join(',')} taking the enduring account if ${guarded}`,
    (db, arg) => paymentUpdate(db, arg, columns, { guarded, takingEnduringAccount: true }),
  );
}

/** An update of these columns of a payment by id, guarded by its status or not, and the payer account it ends with. */
function paymentUpdate(
  db: Db,
  arg: Arg<Record<string, unknown>>,
  columns: readonly string[],
  options: { guarded: boolean; takingEnduringAccount: boolean },
) {
  let update = db
    .updateTable('payments')
    .set((eb) => ({
      ...Object.fromEntries(columns.map((column) => [column, arg(column)])),
      ...(options.takingEnduringAccount && {
        payer_account_sealed: eb
          .selectFrom('enduring_payer_accounts')
          .select('payer_account_sealed')
          .where('enduring_id', '=', arg('where enduring_id') as string),
      }),
    }))
    .where('id', '=', arg('where id') as string);
  if (options.guarded) update = update.where('status', '=', arg('where status') as string);
  return update.returning('payer_account_sealed');
}

/** PostgreSQL: movePaymentOrFail's statement, per set of columns. */
function moveOrFailQuery(columns: readonly string[], takingEnduringAccount: boolean) {
  return preparedOfShape<Record<string, unknown>, { written: number }>(
    `payments: move ${columns.join(',')} or fail, taking the enduring account ${takingEnduringAccount}`,
    (db, arg) =>
      failUnlessWritten(
        db,
        () => paymentUpdate(db, arg, columns, { guarded: true, takingEnduringAccount }),
        (rows) => (takingEnduringAccount ? rows.where('payer_account_sealed', 'is not', null) : rows),
      ),
  );
}

/**
 * Updates the payment while it still has `status`, in the caller's transaction, and with `enduringId`
 * gives it the payer account kept for that consent (as updatePaymentTakingEnduringAccount does).
 * The transaction fails (isNotWritten) when the payment no longer has `status`, or, with
 * `enduringId`, when no account is kept for the consent. On PostgreSQL the update is not waited
 * for: it goes out with the transaction's next awaited statement, whose answer carries the failure.
 */
export async function movePaymentOrFail(
  db: Db,
  id: string,
  status: string,
  changes: Partial<PaymentRow>,
  enduringId: string | null,
): Promise<void> {
  if (engineOf(db) === 'postgres') {
    const columns = columnsOf(changes);
    await moveOrFailQuery(columns, enduringId !== null).later(db, {
      ...changes,
      'where id': id,
      'where status': status,
      'where enduring_id': enduringId,
    });
    return;
  }
  if (enduringId === null) {
    if (!(await updatePaymentIfStatus(db, id, status, changes))) throw notWritten(`payment ${id} moved`);
    return;
  }
  const updated = await updatePaymentTakingEnduringAccount(db, id, changes, enduringId, status);
  if (!updated) throw notWritten(`payment ${id} moved`);
  if (!updated.payerAccountSealed) throw notWritten(`no payer account is kept for ${enduringId}`);
}

/** The columns `changes` sets, but the payer account, which the enduring consent's gives. */
function columnsOf(changes: Partial<PaymentRow>): string[] {
  return Object.keys(changes).filter(
    (column) => column !== 'payer_account_sealed' && (changes as Record<string, unknown>)[column] !== undefined,
  );
}

/**
 * Updates the payment as updatePayment does (with `onlyIfStatus`, only while it has that status)
 * and, in the same statement, gives it the payer account kept for its enduring consent: no read
 * first. Null when the guard stopped the update; else the account the payment now holds, null
 * when none is kept.
 */
export async function updatePaymentTakingEnduringAccount(
  db: Db,
  id: string,
  changes: Partial<PaymentRow>,
  enduringId: string,
  onlyIfStatus: string | null,
): Promise<{ payerAccountSealed: string | null } | null> {
  const row = await takingEnduringAccountQuery(columnsOf(changes), onlyIfStatus !== null).first(db, {
    ...changes,
    'where id': id,
    'where enduring_id': enduringId,
    'where status': onlyIfStatus,
  });
  return row ? { payerAccountSealed: row.payer_account_sealed } : null;
}

/**
 * Payments under recurring consents still awaiting the bank's answer (reserved, not yet recorded),
 * oldest first: through the (status, updated_at) index of payments awaiting it (migration 0043; the
 * status a literal, so that SQLite can take it).
 */
/** Unconfirmed payments without the bank's id, oldest first (no index: an operator's occasional scan). */
export function unconfirmedPaymentsNeverNamed(db: Db, limit: number): Promise<PaymentRow[]> {
  return db
    .selectFrom('payments')
    .selectAll()
    .where('status', '=', 'unconfirmed')
    .where('bank_payment_id', 'is', null)
    .orderBy('created_at')
    .orderBy('id')
    .limit(limit)
    .execute();
}

export async function executionsInFlight(
  db: Db,
  limit: number,
): Promise<Array<Pick<PaymentRow, 'id' | 'user_id' | 'mode' | 'updated_at'>>> {
  return db
    .selectFrom('payments')
    .select(['id', 'user_id', 'mode', 'updated_at'])
    .where('status', '=', sql.lit('awaiting-consent'))
    .where('recurring_consent_id', 'is not', null)
    .orderBy('updated_at')
    .limit(limit)
    .execute();
}

const enduringPayerAccountQuery = prepared<{ enduringId: string }, { payer_account_sealed: string }>((db, arg) =>
  db.selectFrom('enduring_payer_accounts').select('payer_account_sealed').where('enduring_id', '=', arg('enduringId')),
);

/** The sealed payer account kept for an enduring consent (a recurring consent's or a subscription's id), if any. */
export async function enduringPayerAccount(db: Db, enduringId: string): Promise<string | undefined> {
  return (await enduringPayerAccountQuery.first(db, { enduringId }))?.payer_account_sealed;
}

/** The sealed payer accounts of these payments, with the enduring consent each was made under. */
export async function payerAccountsOfPayments(db: Db, ids: readonly string[]) {
  if (ids.length === 0) return [];
  return db
    .selectFrom('payments')
    .select(['id', 'payer_account_sealed', 'recurring_consent_id', 'subscription_id'])
    .where('id', 'in', ids)
    .execute();
}

/** The sealed payer accounts kept for these enduring consents, by enduring id. */
export async function enduringPayerAccounts(db: Db, enduringIds: readonly string[]): Promise<Map<string, string>> {
  if (enduringIds.length === 0) return new Map();
  const rows = await db
    .selectFrom('enduring_payer_accounts')
    .select(['enduring_id', 'payer_account_sealed'])
    .where('enduring_id', 'in', enduringIds)
    .execute();
  return new Map(rows.map((row) => [row.enduring_id, row.payer_account_sealed]));
}

/** Keeps the sealed payer account of an enduring consent, unless one is kept already. */
export async function keepEnduringPayerAccount(db: Db, enduringId: string, sealed: string, now: number): Promise<void> {
  await insertRow(
    db,
    'enduring_payer_accounts',
    { enduring_id: enduringId, payer_account_sealed: sealed, created_at: now },
    'enduring_id',
  );
}

export type PaymentFilters = {
  status?: string;
  request_id?: string;
  merchant_identifier?: string;
  limit: number;
  starting_after?: string;
};

export async function listPayments(db: Db, owner: Owner, filters: PaymentFilters): Promise<PaymentRow[]> {
  let query = db.selectFrom('payments').selectAll().where('user_id', '=', owner.userId).where('mode', '=', owner.mode);
  if (filters.status) query = query.where('status', '=', filters.status);
  if (filters.request_id !== undefined) query = query.where('request_id', '=', filters.request_id);
  if (filters.merchant_identifier !== undefined)
    query = query.where('merchant_identifier', '=', filters.merchant_identifier);
  if (filters.starting_after) query = query.where('id', '<', filters.starting_after);
  return query
    .orderBy('id', 'desc')
    .limit(filters.limit + 1)
    .execute();
}

/**
 * Amount and count of a recurring consent's payments with one of `statuses`, created inside
 * [start, end). The index on (recurring_consent_id, created_at) limits the scan to that window.
 */
export async function sumPaymentsOfConsent(
  db: Db,
  consentId: string,
  window: { start: number; end: number },
  statuses: readonly string[],
  exceptPaymentId?: string,
) {
  let query = db
    .selectFrom('payments')
    .where('recurring_consent_id', '=', consentId)
    .where('created_at', '>=', window.start)
    .where('created_at', '<', window.end)
    .where('status', 'in', statuses);
  if (exceptPaymentId !== undefined) query = query.where('id', '!=', exceptPaymentId);
  const row = await query
    .select([sql<number>`coalesce(sum(amount_cents), 0)`.as('cents'), sql<number>`count(*)`.as('count')])
    .executeTakeFirstOrThrow();
  return { amount_cents: Number(row.cents), count: Number(row.count) };
}

const paymentByIdempotencyKeyQuery = prepared<{ userId: string; mode: Mode; key: string }, PaymentRow>((db, arg) =>
  db
    .selectFrom('payments')
    .selectAll()
    .where('user_id', '=', arg('userId'))
    .where('mode', '=', arg('mode'))
    .where('idempotency_key', '=', arg('key')),
);

/** The payment a merchant's execution with this idempotency key created, if any. */
export async function findPaymentByIdempotencyKey(
  db: Db,
  owner: { userId: string; mode: Mode },
  key: string,
): Promise<PaymentRow | undefined> {
  return paymentByIdempotencyKeyQuery.first(db, { userId: owner.userId, mode: owner.mode, key });
}

/** A subscription's charge payments, newest first (the payments table's subscription_id index). */
export async function listPaymentsOfSubscription(
  db: Db,
  owner: { userId: string; mode: Mode },
  subscriptionId: string,
  page: { limit?: number; starting_after?: string },
) {
  let query = db
    .selectFrom('payments')
    .selectAll()
    .where('subscription_id', '=', subscriptionId)
    .where('user_id', '=', owner.userId)
    .where('mode', '=', owner.mode);
  if (page.starting_after) query = query.where('id', '<', page.starting_after);
  query = query.orderBy('id', 'desc');
  return page.limit === undefined ? query.execute() : query.limit(page.limit + 1).execute();
}

/** The newest payments taken under a recurring consent or a subscription, newest first. */
export async function paymentsUnder(
  db: Db,
  under: { recurringConsentId: string } | { subscriptionId: string },
  limit = 50,
): Promise<PaymentRow[]> {
  const query = db.selectFrom('payments').selectAll();
  const filtered =
    'recurringConsentId' in under
      ? query.where('recurring_consent_id', '=', under.recurringConsentId)
      : query.where('subscription_id', '=', under.subscriptionId);
  return filtered.orderBy('id', 'desc').limit(limit).execute();
}

export type PaymentSearch = {
  status?: string;
  search?: string;
  createdFrom?: number | null;
  createdBefore?: number | null;
  limit: number;
  starting_after?: string;
  /** Payments the search also matches by something another module holds (the payer's email). */
  alsoIds?: string[];
  /** Only these payments (a customer's). */
  onlyIds?: string[];
};

/**
 * The dashboard's list: status, a date range, and a search of id, particulars, code, reference,
 * request id, merchant_identifier and the payer's email (found by the customers module: `alsoIds`).
 */
export async function searchPayments(db: Db, owner: Owner, filters: PaymentSearch): Promise<PaymentRow[]> {
  let query = db.selectFrom('payments').selectAll().where('user_id', '=', owner.userId).where('mode', '=', owner.mode);
  if (filters.status) query = query.where('status', '=', filters.status);
  if (filters.createdFrom != null) query = query.where('created_at', '>=', filters.createdFrom);
  if (filters.createdBefore != null) query = query.where('created_at', '<', filters.createdBefore);
  const search = filters.search?.trim();
  if (search) {
    query = query.where((eb) =>
      eb.or([
        eb('id', '=', search),
        eb('request_id', '=', search),
        containsText('particulars', search),
        containsText('code', search),
        containsText('reference', search),
        containsText('merchant_identifier', search),
        ...(filters.alsoIds?.length ? [eb('id', 'in', filters.alsoIds)] : []),
      ]),
    );
  }
  if (filters.onlyIds)
    query = filters.onlyIds.length ? query.where('id', 'in', filters.onlyIds) : query.where(sql<boolean>`1 = 0`);
  if (filters.starting_after) query = query.where('id', '<', filters.starting_after);
  return query
    .orderBy('id', 'desc')
    .limit(filters.limit + 1)
    .execute();
}

/** Ids of this owner's requests that have a payment whose particulars contain the text. */
export async function requestIdsByParticulars(db: Db, owner: Owner, search: string): Promise<string[]> {
  const rows = await db
    .selectFrom('payments')
    .select('request_id')
    .distinct()
    .where('user_id', '=', owner.userId)
    .where('mode', '=', owner.mode)
    .where(containsText('particulars', search))
    .limit(200)
    .execute();
  return rows.map((row) => row.request_id);
}

/** Status, amount and times of an owner's payments created since a time (the dashboard's home). */
export async function paymentActivitySince(db: Db, owner: Owner, since: number) {
  return db
    .selectFrom('payments')
    .select(['status', 'amount_cents', 'created_at', 'completed_at'])
    .where('user_id', '=', owner.userId)
    .where('mode', '=', owner.mode)
    .where('created_at', '>=', since)
    .execute();
}

// A merchant's test-mode payments, counted, held and deleted with the rest of their test data
// (manifest.ts, TestData); with them the payer accounts kept for their enduring consents.

export function countTestPayments(db: Db, userId: string): Promise<number> {
  return countOwned(db, 'payments', { userId, mode: 'test' });
}

export function holdTestPayments(db: Db, userId: string): Promise<void> {
  return holdOwned(db, 'payments', { userId, mode: 'test' });
}

export async function deleteTestPayments(db: Db, userId: string): Promise<number> {
  // Every kept payer account was read for a payment under its consent, so the payments name them all.
  const enduringIds = (column: 'recurring_consent_id' | 'subscription_id') =>
    db
      .selectFrom('payments')
      .select(column)
      .where('user_id', '=', userId)
      .where('mode', '=', 'test')
      .where(column, 'is not', null);
  await db
    .deleteFrom('enduring_payer_accounts')
    .where((eb) =>
      eb.or([
        eb('enduring_id', 'in', enduringIds('recurring_consent_id')),
        eb('enduring_id', 'in', enduringIds('subscription_id')),
      ]),
    )
    .execute();
  return deleteOwned(db, 'payments', { userId, mode: 'test' });
}

/**
 * The owner's successful payments completed in [from, to), oldest first, at most `limit` (the
 * reconciliation's candidates and its money not seen).
 */
export async function successfulPaymentsCompletedBetween(
  db: Db,
  owner: Owner,
  window: { from: number; to: number },
  limit: number,
): Promise<PaymentRow[]> {
  return db
    .selectFrom('payments')
    .selectAll()
    .where('user_id', '=', owner.userId)
    .where('mode', '=', owner.mode)
    .where('status', '=', 'successful')
    .where('completed_at', '>=', window.from)
    .where('completed_at', '<', window.to)
    .orderBy('completed_at')
    .orderBy('id')
    .limit(limit)
    .execute();
}
