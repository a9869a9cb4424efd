import { sql, type Kysely, type Selectable } from 'kysely';
import { notFound } from '../../shared/errors.ts';
import { engineOf, lockForUpdate } from '../../store/db.ts';
import { prepared } from '../../store/prepared.ts';
import type { Database } from '../../store/tables.ts';
import { consentTokenColumns, consentTokenOf, replaceConsentToken } from '../../store/consent-token-rows.ts';
import { notSealed } from '../../store/seal-at-rest.ts';
import type { RecurringConsentsTable } from './consents.tables.ts';
import type { SealedConsentToken } from '../banks/consent-tokens.ts';
import type { UsageTotals, Window } from './limits.ts';
import type { Mode } from '../../shared/mode.ts';
import { countOwned, deleteOwned, holdOwned } from '../../store/owned-rows.ts';

// SQL of the consents module, no rules. Executions are payments rows tagged with the consent; the
// period sums and the idempotency lookup read them here because they are this module's questions,
// and the usage counters on the consent row are written here.

export type ConsentRow = Selectable<RecurringConsentsTable>;
export type Owner = { userId: string; mode: Mode };
type Db = Kysely<Database>;

export async function insertConsent(db: Db, row: ConsentRow): Promise<void> {
  await db.insertInto('recurring_consents').values(row).execute();
}

export async function findConsent(db: Db, owner: Owner, id: string): Promise<ConsentRow | undefined> {
  return db
    .selectFrom('recurring_consents')
    .selectAll()
    .where('id', '=', id)
    .where('user_id', '=', owner.userId)
    .where('mode', '=', owner.mode)
    .executeTakeFirst();
}

export async function getConsent(db: Db, owner: Owner, id: string): Promise<ConsentRow> {
  const row = await findConsent(db, owner, id);
  if (!row) throw notFound('recurring_consent', id);
  return row;
}

export async function findConsentById(db: Db, id: string): Promise<ConsentRow | undefined> {
  return db.selectFrom('recurring_consents').selectAll().where('id', '=', id).executeTakeFirst();
}

const findConsentByTokenHashQuery = prepared<{ tokenHash: string; userId: string; mode: Mode }, ConsentRow>((db, arg) =>
  db
    .selectFrom('recurring_consents')
    .selectAll()
    .where('token_hash', '=', arg('tokenHash'))
    .where('user_id', '=', arg('userId'))
    .where('mode', '=', arg('mode')),
);

/** The owner's consent with this token, not locked. */
export async function findConsentByTokenHash(db: Db, owner: Owner, tokenHash: string): Promise<ConsentRow | undefined> {
  return findConsentByTokenHashQuery.first(db, { tokenHash, userId: owner.userId, mode: owner.mode });
}

/**
 * The owner's consent with this token as committed, for a transaction that locks it next
 * (lockConsentAsRead): on PostgreSQL a read that goes with the other reads of the moment rather
 * than one of the transaction's round trips, since the lock reads the row again; on SQLite a read
 * in the transaction, which has the one connection to itself.
 */
export async function findConsentToLock(trx: Db, owner: Owner, tokenHash: string): Promise<ConsentRow | undefined> {
  return findConsentByTokenHashQuery.firstCommitted(trx, { tokenHash, userId: owner.userId, mode: owner.mode });
}

export async function findConsentOfRequest(db: Db, requestId: string): Promise<ConsentRow | undefined> {
  return db.selectFrom('recurring_consents').selectAll().where('request_id', '=', requestId).executeTakeFirst();
}

const lockConsentQuery = prepared<{ id: string }, ConsentRow>((db, arg) =>
  lockForUpdate(db, db.selectFrom('recurring_consents').selectAll().where('id', '=', arg('id'))),
);

export async function lockConsent(db: Db, id: string): Promise<ConsentRow | undefined> {
  return lockConsentQuery.first(db, { id });
}

/**
 * `consent`, read earlier in this transaction, locked from now to the transaction's end: read
 * again FOR UPDATE on PostgreSQL. On SQLite a transaction has the process's one connection to itself
 * from its first statement to its last, and the service is the database's one writing process
 * (store/db.ts, lockForUpdate): the row it read is the row as it stands, and is not read twice.
 */
export async function lockConsentAsRead(db: Db, consent: ConsentRow): Promise<ConsentRow | undefined> {
  return engineOf(db) === 'postgres' ? lockConsent(db, consent.id) : consent;
}

export async function updateConsent(db: Db, id: string, changes: Partial<ConsentRow>): Promise<void> {
  await db.updateTable('recurring_consents').set(changes).where('id', '=', id).execute();
}

/**
 * Counts a payment just reserved (the caller holds the consent lock): the totals go up by it and
 * the period counters now hold `window`, at `periodBefore` (its usage without the payment) plus it.
 */
const countReservedPaymentQuery = prepared<{
  id: string;
  amountCents: number;
  start: number;
  end: number;
  periodCount: number;
  periodCents: number;
}>((db, arg) =>
  db
    .updateTable('recurring_consents')
    .set((eb) => ({
      used_count: eb('used_count', '+', 1),
      used_cents: eb('used_cents', '+', arg('amountCents')),
      period_start: arg('start'),
      period_end: arg('end'),
      period_count: arg('periodCount'),
      period_cents: arg('periodCents'),
    }))
    .where('id', '=', arg('id')),
);

export async function countReservedPayment(
  db: Db,
  consentId: string,
  amountCents: number,
  window: Window,
  periodBefore: UsageTotals,
): Promise<void> {
  await countReservedPaymentQuery.later(db, {
    id: consentId,
    amountCents,
    start: window.start,
    end: window.end,
    periodCount: periodBefore.count + 1,
    periodCents: periodBefore.amount_cents + amountCents,
  });
}

/**
 * A payment of the consent stopped (`change` -1) or started (+1) counting: the totals move, and
 * the period counters too when the payment was created inside the window they hold. Relative to
 * the row as it is when the statement runs, so it is right whichever window that row holds by then.
 */
export async function shiftUsage(
  db: Db,
  consentId: string,
  payment: { amount_cents: number; created_at: number },
  change: -1 | 1,
): Promise<void> {
  const cents = change * Number(payment.amount_cents);
  const createdAt = Number(payment.created_at);
  const inWindow = sql`period_start is not null and period_start <= ${createdAt} and ${createdAt} < period_end`;
  await db
    .updateTable('recurring_consents')
    .set({
      used_count: sql<number>`used_count + ${change}`,
      used_cents: sql<number>`used_cents + ${cents}`,
      period_count: sql<number>`case when ${inWindow} then period_count + ${change} else period_count end`,
      period_cents: sql<number>`case when ${inWindow} then period_cents + ${cents} else period_cents end`,
    })
    .where('id', '=', consentId)
    .execute();
}

export type ConsentFilters = {
  status?: string;
  email?: string;
  request_id?: string;
  merchant_identifier?: string;
  limit: number;
  starting_after?: string;
};

export async function listConsents(db: Db, owner: Owner, filters: ConsentFilters): Promise<ConsentRow[]> {
  let query = db
    .selectFrom('recurring_consents')
    .selectAll()
    .where('user_id', '=', owner.userId)
    .where('mode', '=', owner.mode);
  if (filters.status) query = query.where('status', '=', filters.status);
  if (filters.email !== undefined) query = query.where('email', '=', filters.email);
  if (filters.request_id !== undefined) query = query.where('request_id', '=', filters.request_id);
  if (filters.merchant_identifier !== undefined)
    query = query.where('merchant_identifier', '=', filters.merchant_identifier);
  if (filters.starting_after) query = query.where('id', '<', filters.starting_after);
  return query
    .orderBy('id', 'desc')
    .limit(filters.limit + 1)
    .execute();
}

/** A consent token's columns. */
export const bankTokenColumns = consentTokenColumns;

/** The token of a consent row. */
export function bankTokenOf(
  row: Parameters<typeof consentTokenOf>[0] & { bank_access_token: string },
): SealedConsentToken {
  return consentTokenOf(row)!;
}

/** Replaces the consent's bank token with `next`, only over the access token `previousAccess` (sealed); true when it did. */
export function replaceConsentBankToken(
  db: Db,
  id: string,
  previousAccess: string,
  next: SealedConsentToken,
): Promise<boolean> {
  return replaceConsentToken(db, 'recurring_consents', id, previousAccess, next);
}

/** Bank access tokens stored in clear before secrets were sealed at rest. */
export async function sealConsentAccessTokens(db: Db, seal: (secret: string) => string): Promise<void> {
  const rows = await db
    .selectFrom('recurring_consents')
    .select(['id', 'bank_access_token'])
    .where(notSealed('bank_access_token'))
    .execute();
  for (const row of rows)
    await db
      .updateTable('recurring_consents')
      .set({ bank_access_token: seal(row.bank_access_token) })
      .where('id', '=', row.id)
      .execute();
}

/** The consents registered to a payer's email, newest first (at most 200). */
export async function consentsOfEmail(db: Db, email: string): Promise<ConsentRow[]> {
  return db
    .selectFrom('recurring_consents')
    .selectAll()
    .where('email', '=', email)
    .orderBy('id', 'desc')
    .limit(200)
    .execute();
}

export async function anyConsentOfEmail(db: Db, email: string): Promise<boolean> {
  return (
    (await db.selectFrom('recurring_consents').select('id').where('email', '=', email).limit(1).executeTakeFirst()) !==
    undefined
  );
}

/** How many of an owner's recurring consents have each status (the dashboard's home). */
export async function countConsentsByStatus(db: Db, owner: Owner): Promise<Record<string, number>> {
  const rows = await db
    .selectFrom('recurring_consents')
    .select(['status', (eb) => eb.fn.countAll<number>().as('n')])
    .where('user_id', '=', owner.userId)
    .where('mode', '=', owner.mode)
    .groupBy('status')
    .execute();
  return Object.fromEntries(rows.map((row) => [row.status, Number(row.n)]));
}

// A merchant's test-mode recurring consents, counted, held and deleted with the rest of their test
// data (manifest.ts, TestData).

export function countTestConsents(db: Db, userId: string): Promise<number> {
  return countOwned(db, 'recurring_consents', { userId, mode: 'test' });
}

export function holdTestConsents(db: Db, userId: string): Promise<void> {
  return holdOwned(db, 'recurring_consents', { userId, mode: 'test' });
}

export function deleteTestConsents(db: Db, userId: string): Promise<number> {
  return deleteOwned(db, 'recurring_consents', { userId, mode: 'test' });
}
