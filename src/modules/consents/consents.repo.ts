import { sql, type Kysely, type Selectable } from 'kysely';
import { notFound } from '../../shared/errors.ts';
import { lockForUpdate } from '../../store/db.ts';
import type { Database, Mode, PaymentsTable } from '../../store/tables.ts';
import type { ConsentAuthorisationsTable, RecurringConsentsTable } from './consents.tables.ts';
import type { UsageAggregate, Window } from './limits.ts';

// SQL of the consents module, no rules. Executions are payments rows tagged with the consent; the
// usage sums and the idempotency lookup read them here because they are this module's questions.

export type ConsentRow = Selectable<RecurringConsentsTable>;
export type AuthorisationRow = Selectable<ConsentAuthorisationsTable>;
type PaymentRow = Selectable<PaymentsTable>;
export type Owner = { userId: string; mode: Mode };
type Db = Kysely<Database>;

/** Payments that count towards a consent's limits: done, maybe done, or being executed now. */
export const COUNTED_STATUSES = ['successful', 'unconfirmed', 'awaiting-consent'] as const;

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

export async function findConsentByTokenHash(db: Db, owner: Owner, tokenHash: string): Promise<ConsentRow | undefined> {
  return db.selectFrom('recurring_consents').selectAll().where('token_hash', '=', tokenHash)
    .where('user_id', '=', owner.userId).where('mode', '=', owner.mode).executeTakeFirst();
}

export async function findConsentOfRequest(db: Db, requestId: string): Promise<ConsentRow | undefined> {
  return db.selectFrom('recurring_consents').selectAll().where('request_id', '=', requestId).executeTakeFirst();
}

export async function lockConsent(db: Db, id: string): Promise<ConsentRow | undefined> {
  return lockForUpdate(db, db.selectFrom('recurring_consents').selectAll().where('id', '=', id)).executeTakeFirst();
}

export async function updateConsent(db: Db, id: string, changes: Partial<ConsentRow>): Promise<void> {
  await db.updateTable('recurring_consents').set(changes).where('id', '=', id).execute();
}

/** Counted payments of a consent: in total, and those created inside `window`. */
export async function usageOf(db: Db, consentId: string, window: Window): Promise<UsageAggregate> {
  const row = await db
    .selectFrom('payments')
    .where('recurring_consent_id', '=', consentId)
    .where('status', 'in', COUNTED_STATUSES)
    .select([
      sql<number>`coalesce(sum(amount_cents), 0)`.as('total_cents'),
      sql<number>`count(*)`.as('total_count'),
      sql<number>`coalesce(sum(case when created_at >= ${window.start} and created_at < ${window.end} then amount_cents else 0 end), 0)`.as('period_cents'),
      sql<number>`coalesce(sum(case when created_at >= ${window.start} and created_at < ${window.end} then 1 else 0 end), 0)`.as('period_count'),
    ])
    .executeTakeFirstOrThrow();
  return {
    total: { amount_cents: Number(row.total_cents), count: Number(row.total_count) },
    period: { amount_cents: Number(row.period_cents), count: Number(row.period_count) },
  };
}

export async function findPaymentByIdempotencyKey(db: Db, owner: Owner, key: string): Promise<PaymentRow | undefined> {
  return db.selectFrom('payments').selectAll().where('user_id', '=', owner.userId).where('mode', '=', owner.mode)
    .where('idempotency_key', '=', key).executeTakeFirst();
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
export async function cancelJob(db: Db, dedupeKey: string): Promise<void> {
  await db.deleteFrom('jobs').where('dedupe_key', '=', dedupeKey).where('locked_by', 'is', null).execute();
}
