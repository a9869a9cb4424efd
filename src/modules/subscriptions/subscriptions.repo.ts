import type { Kysely, Selectable, Updateable } from 'kysely';
import { notFound } from '../../shared/errors.ts';
import { lockForUpdate } from '../../store/db.ts';
import { inserted, insertRow, prepared, updateById } from '../../store/prepared.ts';
import type { Database } from '../../store/tables.ts';
import { consentTokenColumns, consentTokenOf } from '../../store/consent-token-rows.ts';
import { notSealed } from '../../store/seal-at-rest.ts';
import type { SubscriptionChargesTable, SubscriptionsTable } from './subscriptions.tables.ts';
import type { SealedConsentToken } from '../banks/consent-tokens.ts';
import type { Mode } from '../../shared/mode.ts';
import { countOwned, deleteOwned, holdOwned, idsOfOwned } from '../../store/owned-rows.ts';

// SQL for subscriptions and their charge slots; no rules.

export type SubscriptionRow = Selectable<SubscriptionsTable>;
export type ChargeRow = Selectable<SubscriptionChargesTable>;
export type Owner = { userId: string; mode: Mode };
type Db = Kysely<Database>;

export async function insertSubscription(db: Db, row: SubscriptionRow): Promise<void> {
  await db.insertInto('subscriptions').values(row).execute();
}

export async function findSubscription(db: Db, owner: Owner, id: string): Promise<SubscriptionRow | undefined> {
  return db
    .selectFrom('subscriptions')
    .selectAll()
    .where('id', '=', id)
    .where('user_id', '=', owner.userId)
    .where('mode', '=', owner.mode)
    .executeTakeFirst();
}

export async function getSubscription(db: Db, owner: Owner, id: string): Promise<SubscriptionRow> {
  const row = await findSubscription(db, owner, id);
  if (!row) throw notFound('subscription', id);
  return row;
}

export async function findSubscriptionByRequest(db: Db, requestId: string): Promise<SubscriptionRow | undefined> {
  return db.selectFrom('subscriptions').selectAll().where('request_id', '=', requestId).executeTakeFirst();
}

const lockSubscriptionQuery = prepared<{ id: string }, SubscriptionRow>((db, arg) =>
  lockForUpdate(db, db.selectFrom('subscriptions').selectAll().where('id', '=', arg('id'))),
);

export async function lockSubscription(db: Db, id: string): Promise<SubscriptionRow | undefined> {
  return lockSubscriptionQuery.first(db, { id });
}

export async function updateSubscription(db: Db, id: string, changes: Updateable<SubscriptionsTable>): Promise<void> {
  await updateById(db, 'subscriptions', id, changes);
}

export type SubscriptionFilters = {
  status?: string;
  merchant_identifier?: string;
  email?: string;
  request_id?: string;
  limit: number;
  starting_after?: string;
};

export async function listSubscriptions(
  db: Db,
  owner: Owner,
  filters: SubscriptionFilters,
): Promise<SubscriptionRow[]> {
  let query = db
    .selectFrom('subscriptions')
    .selectAll()
    .where('user_id', '=', owner.userId)
    .where('mode', '=', owner.mode);
  if (filters.status) query = query.where('status', '=', filters.status);
  if (filters.merchant_identifier !== undefined)
    query = query.where('merchant_identifier', '=', filters.merchant_identifier);
  if (filters.email !== undefined) query = query.where('email', '=', filters.email);
  if (filters.request_id !== undefined) query = query.where('request_id', '=', filters.request_id);
  if (filters.starting_after) query = query.where('id', '<', filters.starting_after);
  return query
    .orderBy('id', 'desc')
    .limit(filters.limit + 1)
    .execute();
}

const findChargeQuery = prepared<{ subscriptionId: string; slotDate: string }, ChargeRow>((db, arg) =>
  db
    .selectFrom('subscription_charges')
    .selectAll()
    .where('subscription_id', '=', arg('subscriptionId'))
    .where('slot_date', '=', arg('slotDate')),
);

export async function findCharge(db: Db, subscriptionId: string, slotDate: string): Promise<ChargeRow | undefined> {
  return findChargeQuery.first(db, { subscriptionId, slotDate });
}

/** Inserts the slot's charge row unless the slot already has one; returns whether it did. */
export async function insertChargeIfNew(db: Db, row: ChargeRow): Promise<boolean> {
  return inserted(await insertRow(db, 'subscription_charges', row, ['subscription_id', 'slot_date']));
}

export async function updateCharge(db: Db, id: string, changes: Updateable<SubscriptionChargesTable>): Promise<void> {
  await updateById(db, 'subscription_charges', id, changes);
}

/** The charge whose latest attempt is `paymentId` (its subscription's slots, read by their index). */
export async function findChargeOfPayment(
  db: Db,
  subscriptionId: string,
  paymentId: string,
): Promise<ChargeRow | undefined> {
  return db
    .selectFrom('subscription_charges')
    .selectAll()
    .where('subscription_id', '=', subscriptionId)
    .where('last_payment_id', '=', paymentId)
    .executeTakeFirst();
}

const findLatestChargeQuery = prepared<{ subscriptionId: string }, ChargeRow>((db, arg) =>
  db
    .selectFrom('subscription_charges')
    .selectAll()
    .where('subscription_id', '=', arg('subscriptionId'))
    .orderBy('slot_date', 'desc')
    .limit(1),
);

/**
 * The subscription's charge of the latest slot, read from the end of its slots' index whatever
 * the number of slots charged before: a charge in flight is always the latest, since no slot is
 * charged while one is (src/modules/subscriptions/subscriptions.charges.ts, `claim`).
 */
export async function findLatestCharge(db: Db, subscriptionId: string): Promise<ChargeRow | undefined> {
  return findLatestChargeQuery.first(db, { subscriptionId });
}

/**
 * Every charge handed to a bank and not yet recorded, with its subscription's owner and its
 * subscription's latest slot. Read once when a process starts, so it reads the table rather than
 * keep an index on `status`, which would stop a charge's status changes being written in place.
 */
export async function chargesInFlight(
  db: Db,
): Promise<Array<{ subscription_id: string; user_id: string; mode: string; slot_date: string; latest: string }>> {
  return db
    .selectFrom('subscription_charges as c')
    .innerJoin('subscriptions as s', 's.id', 'c.subscription_id')
    .select(['c.subscription_id', 's.user_id', 's.mode', 'c.slot_date'])
    .select((eb) =>
      eb
        .selectFrom('subscription_charges as l')
        .select((l) => l.fn.max('l.slot_date').as('latest'))
        .whereRef('l.subscription_id', '=', 'c.subscription_id')
        .as('latest'),
    )
    .where('c.status', '=', 'in_flight')
    .$narrowType<{ latest: string }>()
    .execute();
}

export async function listCharges(db: Db, subscriptionId: string): Promise<ChargeRow[]> {
  return db
    .selectFrom('subscription_charges')
    .selectAll()
    .where('subscription_id', '=', subscriptionId)
    .orderBy('slot_date')
    .execute();
}

/** Bank access tokens stored in clear before secrets were sealed at rest. */
/** A consent token's columns. */
export const bankTokenColumns = consentTokenColumns;

/** The token of a subscription row. */
export function bankTokenOf(
  row: Parameters<typeof consentTokenOf>[0] & { bank_access_token: string },
): SealedConsentToken {
  return consentTokenOf(row)!;
}

export async function sealSubscriptionAccessTokens(db: Db, seal: (secret: string) => string): Promise<void> {
  const rows = await db
    .selectFrom('subscriptions')
    .select(['id', 'bank_access_token'])
    .where(notSealed('bank_access_token'))
    .execute();
  for (const row of rows)
    await db
      .updateTable('subscriptions')
      .set({ bank_access_token: seal(row.bank_access_token) })
      .where('id', '=', row.id)
      .execute();
}

/** The subscriptions registered to a payer's email, newest first (at most 200). */
export async function subscriptionsOfEmail(db: Db, email: string): Promise<SubscriptionRow[]> {
  return db
    .selectFrom('subscriptions')
    .selectAll()
    .where('email', '=', email)
    .orderBy('id', 'desc')
    .limit(200)
    .execute();
}

export async function anySubscriptionOfEmail(db: Db, email: string): Promise<boolean> {
  return (
    (await db.selectFrom('subscriptions').select('id').where('email', '=', email).limit(1).executeTakeFirst()) !==
    undefined
  );
}

export async function findSubscriptionById(db: Db, id: string): Promise<SubscriptionRow | undefined> {
  return db.selectFrom('subscriptions').selectAll().where('id', '=', id).executeTakeFirst();
}

/** How many of an owner's subscriptions have each status (the dashboard's home). */
export async function countSubscriptionsByStatus(db: Db, owner: Owner): Promise<Record<string, number>> {
  const rows = await db
    .selectFrom('subscriptions')
    .select(['status', (eb) => eb.fn.countAll<number>().as('n')])
    .where('user_id', '=', owner.userId)
    .where('mode', '=', owner.mode)
    .groupBy('status')
    .execute();
  return Object.fromEntries(rows.map((row) => [row.status, Number(row.n)]));
}

// A merchant's test-mode subscriptions, counted, held and deleted with their charges and the rest
// of their test data (manifest.ts, TestData).

export function countTestSubscriptions(db: Db, userId: string): Promise<number> {
  return countOwned(db, 'subscriptions', { userId, mode: 'test' });
}

export function holdTestSubscriptions(db: Db, userId: string): Promise<void> {
  return holdOwned(db, 'subscriptions', { userId, mode: 'test' });
}

export async function deleteTestSubscriptions(db: Db, userId: string): Promise<number> {
  await db
    .deleteFrom('subscription_charges')
    .where('subscription_id', 'in', idsOfOwned(db, 'subscriptions', { userId, mode: 'test' }))
    .execute();
  return deleteOwned(db, 'subscriptions', { userId, mode: 'test' });
}
