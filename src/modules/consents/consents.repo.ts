import { sql, type Kysely, type Selectable } from 'kysely';
import { notFound } from '../../shared/errors.ts';
import { lockForUpdate } from '../../store/db.ts';
import { prepared } from '../../store/prepared.ts';
import type { Database, Mode, PaymentsTable } from '../../store/tables.ts';
import type { ConsentAuthorisationsTable, RecurringConsentsTable } from './consents.tables.ts';
import { COUNTED_STATUSES } from './consents.rules.ts';
import type { UsageTotals, Window } from './limits.ts';

// SQL of the consents module, no rules. Executions are payments rows tagged with the consent; the
// period sums and the idempotency lookup read them here because they are this module's questions,
// and the usage counters on the consent row are written here.

export type ConsentRow = Selectable<RecurringConsentsTable>;
export type AuthorisationRow = Selectable<ConsentAuthorisationsTable>;
type PaymentRow = Selectable<PaymentsTable>;
export type Owner = { userId: string; mode: Mode };
type Db = Kysely<Database>;

export async function insertConsent(db: Db, row: ConsentRow): Promise<void> {
  await db.insertInto('recurring_consents').values(row).execute();
}

export async function findConsent(db: Db, owner: Owner, id: string): Promise<ConsentRow | undefined> {
  return db.selectFrom('recurring_consents').selectAll().where('id', '=', id).where('user_id', '=', owner.userId).where('mode', '=', owner.mode).executeTakeFirst();
}

export async function getConsent(db: Db, owner: Owner, id: string): Promise<ConsentRow> {
  const row = await findConsent(db, owner, id);
  if (!row) throw notFound('recurring_consent', id);
  return row;
}

export async function findConsentById(db: Db, id: string): Promise<ConsentRow | undefined> {
  return db.selectFrom('recurring_consents').selectAll().where('id', '=', id).executeTakeFirst();
}

const lockConsentByTokenHashQuery = prepared<{ tokenHash: string; userId: string; mode: Mode }, ConsentRow>((db, arg) =>
  lockForUpdate(db, db.selectFrom('recurring_consents').selectAll().where('token_hash', '=', arg('tokenHash'))
    .where('user_id', '=', arg('userId')).where('mode', '=', arg('mode'))));

/** The owner's consent with this token, locked for the caller's transaction. */
export async function lockConsentByTokenHash(db: Db, owner: Owner, tokenHash: string): Promise<ConsentRow | undefined> {
  return lockConsentByTokenHashQuery.first(db, { tokenHash, userId: owner.userId, mode: owner.mode });
}

export async function findConsentOfRequest(db: Db, requestId: string): Promise<ConsentRow | undefined> {
  return db.selectFrom('recurring_consents').selectAll().where('request_id', '=', requestId).executeTakeFirst();
}

const lockConsentQuery = prepared<{ id: string }, ConsentRow>((db, arg) =>
  lockForUpdate(db, db.selectFrom('recurring_consents').selectAll().where('id', '=', arg('id'))));

export async function lockConsent(db: Db, id: string): Promise<ConsentRow | undefined> {
  return lockConsentQuery.first(db, { id });
}

export async function updateConsent(db: Db, id: string, changes: Partial<ConsentRow>): Promise<void> {
  await db.updateTable('recurring_consents').set(changes).where('id', '=', id).execute();
}

/**
 * Counted payments of a consent created inside `window`. The index on (recurring_consent_id,
 * created_at) limits the scan to that window's payments, however old the consent.
 */
export async function sumPeriodUsage(db: Db, consentId: string, window: Window): Promise<UsageTotals> {
  const row = await db
    .selectFrom('payments')
    .where('recurring_consent_id', '=', consentId)
    .where('created_at', '>=', window.start)
    .where('created_at', '<', window.end)
    .where('status', 'in', COUNTED_STATUSES)
    .select([sql<number>`coalesce(sum(amount_cents), 0)`.as('cents'), sql<number>`count(*)`.as('count')])
    .executeTakeFirstOrThrow();
  return { amount_cents: Number(row.cents), count: Number(row.count) };
}

/**
 * Counts a payment just reserved (the caller holds the consent lock): the totals go up by it and
 * the period counters now hold `window`, at `periodBefore` (its usage without the payment) plus it.
 */
const countReservedPaymentQuery = prepared<{ id: string; amountCents: number; start: number; end: number; periodCount: number; periodCents: number }>((db, arg) =>
  db.updateTable('recurring_consents')
    .set((eb) => ({
      used_count: eb('used_count', '+', 1),
      used_cents: eb('used_cents', '+', arg('amountCents')),
      period_start: arg('start'),
      period_end: arg('end'),
      period_count: arg('periodCount'),
      period_cents: arg('periodCents'),
    }))
    .where('id', '=', arg('id')));

export async function countReservedPayment(db: Db, consentId: string, amountCents: number, window: Window, periodBefore: UsageTotals): Promise<void> {
  await countReservedPaymentQuery.run(db, {
    id: consentId, amountCents, start: window.start, end: window.end, periodCount: periodBefore.count + 1, periodCents: periodBefore.amount_cents + amountCents,
  });
}

/**
 * A payment of the consent stopped (`change` -1) or started (+1) counting: the totals move, and
 * the period counters too when the payment was created inside the window they hold. Relative to
 * the row as it is when the statement runs, so it is right whichever window that row holds by then.
 */
export async function shiftUsage(db: Db, consentId: string, payment: { amount_cents: number; created_at: number }, change: -1 | 1): Promise<void> {
  const cents = change * Number(payment.amount_cents);
  const createdAt = Number(payment.created_at);
  const inWindow = sql`period_start is not null and period_start <= ${createdAt} and ${createdAt} < period_end`;
  await db.updateTable('recurring_consents')
    .set({
      used_count: sql<number>`used_count + ${change}`,
      used_cents: sql<number>`used_cents + ${cents}`,
      period_count: sql<number>`case when ${inWindow} then period_count + ${change} else period_count end`,
      period_cents: sql<number>`case when ${inWindow} then period_cents + ${cents} else period_cents end`,
    })
    .where('id', '=', consentId)
    .execute();
}

const paymentByIdempotencyKeyQuery = prepared<{ userId: string; mode: Mode; key: string }, PaymentRow>((db, arg) =>
  db.selectFrom('payments').selectAll().where('user_id', '=', arg('userId')).where('mode', '=', arg('mode')).where('idempotency_key', '=', arg('key')));

export async function findPaymentByIdempotencyKey(db: Db, owner: Owner, key: string): Promise<PaymentRow | undefined> {
  return paymentByIdempotencyKeyQuery.first(db, { userId: owner.userId, mode: owner.mode, key });
}

export type ConsentFilters = { status?: string; email?: string; request_id?: string; merchant_identifier?: string; limit: number; starting_after?: string };

export async function listConsents(db: Db, owner: Owner, filters: ConsentFilters): Promise<ConsentRow[]> {
  let query = db.selectFrom('recurring_consents').selectAll().where('user_id', '=', owner.userId).where('mode', '=', owner.mode);
  if (filters.status) query = query.where('status', '=', filters.status);
  if (filters.email) query = query.where('email', '=', filters.email);
  if (filters.request_id) query = query.where('request_id', '=', filters.request_id);
  if (filters.merchant_identifier) query = query.where('merchant_identifier', '=', filters.merchant_identifier);
  if (filters.starting_after) query = query.where('id', '<', filters.starting_after);
  return query.orderBy('id', 'desc').limit(filters.limit + 1).execute();
}

export async function insertAuthorisation(db: Db, row: AuthorisationRow): Promise<void> {
  await db.insertInto('consent_authorisations').values(row).execute();
}

export async function findAuthorisation(db: Db, state: string): Promise<AuthorisationRow | undefined> {
  return db.selectFrom('consent_authorisations').selectAll().where('state', '=', state).executeTakeFirst();
}

/** Marks a pending authorisation done; false when another return already did (or it never existed). */
export async function closeAuthorisation(db: Db, state: string, outcome: string, now: number): Promise<boolean> {
  const result = await db.updateTable('consent_authorisations').set({ outcome, completed_at: now })
    .where('state', '=', state).where('outcome', 'is', null).executeTakeFirst();
  return Number(result.numUpdatedRows) === 1;
}

export async function setAuthorisationBankConsent(db: Db, state: string, bankConsentId: string): Promise<void> {
  await db.updateTable('consent_authorisations').set({ bank_consent_id: bankConsentId }).where('state', '=', state).execute();
}

/** Removes this module's pending job with that dedupe key (its work is done another way). */
const cancelJobQuery = prepared<{ dedupeKey: string }>((db, arg) =>
  db.deleteFrom('jobs').where('dedupe_key', '=', arg('dedupeKey')).where('locked_by', 'is', null));

export async function cancelJob(db: Db, dedupeKey: string): Promise<void> {
  await cancelJobQuery.run(db, { dedupeKey });
}

/** How many of an owner's recurring consents have each status (the dashboard's home). */
export async function countConsentsByStatus(db: Db, owner: Owner): Promise<Record<string, number>> {
  const rows = await db.selectFrom('recurring_consents').select(['status', (eb) => eb.fn.countAll<number>().as('n')])
    .where('user_id', '=', owner.userId).where('mode', '=', owner.mode).groupBy('status').execute();
  return Object.fromEntries(rows.map((row) => [row.status, Number(row.n)]));
}
