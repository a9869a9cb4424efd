import type { Kysely } from 'kysely';
import { idempotent, type Reply } from '../../http/idempotency.ts';
import { invalidState, notFound } from '../../shared/errors.ts';
import { newId } from '../../shared/ids.ts';
import { pageOf } from '../../shared/pagination.ts';
import { iso, isoOrNull } from '../../shared/time.ts';
import type { Database } from '../../store/tables.ts';
import { transact } from '../../store/store.ts';
import { emitEvent } from '../events/events.service.ts';
import { recordAudit, recordAuditFor } from '../audit/audit.service.ts';
import type { SubscriptionOptions } from '../requests/requests.rules.ts';
import { buildSchedule, resumeSchedule } from './schedule.ts';
import { revokeAtBank } from './subscriptions.bank.ts';
import { presentSubscription, type SubscriptionObject } from './subscriptions.present.ts';
import { sealConsentTokens } from '../banks/consent-tokens.ts';
import {
  bankTokenColumns,
  countSubscriptionsByStatus,
  findLatestCharge,
  findSubscriptionById,
  getSubscription,
  insertSubscription,
  listCharges,
  listSubscriptions,
  lockSubscription,
  updateCharge,
  updateSubscription,
  type SubscriptionRow,
} from './subscriptions.repo.ts';
import { allows, firstCharge, scheduleOf, storedParts, type CancelledBy } from './subscriptions.rules.ts';
import { noticeChargeReceipt, noticeSubscriptionEnded, noticeSubscriptionSetUp } from './subscriptions.notices.ts';
import type { PaymentRow } from '../payments/payments.tables.ts';
import { clockOf } from '../merchants/merchants.clock.ts';
import { scheduleCharge, unscheduleCharge } from './subscriptions.schedule-jobs.ts';
import type { Mode } from '../../shared/mode.ts';
import type { Actor, Ctx, Deps, Origin } from '../context.ts';
import type { RequestRow } from '../requests/requests.tables.ts';

// Subscription use cases: authorisation, pause, resume, cancellation (by merchant, payer or bank)
// and reading. Each state change and its event share one transaction.

type Db = Kysely<Database>;
const owner = (ctx: Ctx) => ({ userId: ctx.merchant.id, mode: ctx.mode });
const scopeOf = (row: { user_id: string; mode: Mode }) => ({ userId: row.user_id, mode: row.mode });
const lifecycleData = (row: SubscriptionRow, now: number) => ({
  id: row.id,
  user_id: row.user_id,
  merchant_identifier: row.merchant_identifier,
  updated_at: iso(now),
});

export type Authorisation = {
  request: Pick<
    RequestRow,
    'id' | 'user_id' | 'mode' | 'message' | 'merchant_identifier' | 'reference' | 'bank_account_id'
  >;
  options: SubscriptionOptions;
  email: string;
  customerId: string | null;
  /** What the payer gave at checkout, recorded as cust_info on each charge's payment. */
  payerDetails: Record<string, unknown> | null;
  bankId: string;
  bankConsentId: string;
  bankAccessToken: string;
  /** The refresh token and the access token's expiry (real time), when the bank gave them. */
  bankRefreshToken?: string | null;
  bankTokenExpiresAt?: number | null;
  /** The subscription's clock time of authorisation (the merchant's test clock in test mode). */
  authorisedAt: number;
};

/**
 * The payer approved at their bank: the subscription (`active`) with `subscription.created` and its
 * first charge scheduled, in the caller's transaction.
 */
export async function createSubscription(trx: Db, deps: Deps, input: Authorisation): Promise<SubscriptionRow> {
  const { request, options, authorisedAt } = input;
  const schedule = buildSchedule(options, authorisedAt, deps.config.serviceTimeZone);
  const first = firstCharge(schedule, 0);
  const row: SubscriptionRow = {
    id: newId('subscription'),
    user_id: request.user_id,
    mode: request.mode,
    request_id: request.id,
    customer_id: input.customerId,
    email: input.email,
    description: request.message,
    merchant_identifier: request.merchant_identifier,
    reference: request.reference,
    bank_account_id: request.bank_account_id,
    payer_details: input.payerDetails ? JSON.stringify(input.payerDetails) : null,
    status: first.kind === 'charge' ? 'active' : 'completed',
    amount_cents: options.amount_cents,
    period: options.period,
    start_at: options.start_at,
    end_at: options.end_at,
    total_count: options.total_count,
    ...storedParts(schedule),
    next_slot: first.kind === 'charge' ? first.slot : null,
    next_charge_at: first.kind === 'charge' ? first.at : null,
    successful_count: 0,
    failed_count: 0,
    skipped_count: 0,
    bank_id: input.bankId,
    bank_consent_id: input.bankConsentId,
    ...bankTokenColumns(
      sealConsentTokens(deps.secrets, {
        accessToken: input.bankAccessToken,
        refreshToken: input.bankRefreshToken ?? null,
        expiresAt: input.bankTokenExpiresAt ?? null,
      }),
    ),
    cancelled_by: null,
    paused_at: null,
    resumed_at: null,
    cancelled_at: null,
    completed_at: first.kind === 'charge' ? null : authorisedAt,
    created_at: authorisedAt,
    updated_at: authorisedAt,
  };
  await insertSubscription(trx, row);
  await emitEvent(
    trx,
    scopeOf(row),
    'subscription.created',
    row.id,
    {
      id: row.id,
      request_id: row.request_id,
      user_id: row.user_id,
      merchant_identifier: row.merchant_identifier,
      created_at: iso(authorisedAt),
    },
    authorisedAt,
  );
  if (first.kind === 'charge') await scheduleCharge(trx, deps, row, first.at);
  await noticeSubscriptionSetUp(trx, row, authorisedAt);
  return row;
}

type Change = { row: SubscriptionRow; revoke: boolean };

/** Runs a transition under the row lock with the subscription's clock; returns the new row. */
async function transition(
  deps: Deps,
  db: Db,
  id: string,
  work: (trx: Db, row: SubscriptionRow, now: number) => Promise<Change>,
  audit: { action: string; actor: Actor; origin?: Origin },
): Promise<SubscriptionRow> {
  const change = await transact(db, async (trx) => {
    const row = (await lockSubscription(trx, id))!;
    const now = (await clockOf(deps, row, trx)).now();
    const change = await work(trx, row, now);
    if (change.row !== row)
      await recordAudit(trx, {
        userId: row.user_id,
        mode: row.mode,
        actor: audit.actor,
        origin: audit.origin,
        action: audit.action,
        objectId: row.id,
        summary: { status: { from: row.status, to: change.row.status } },
        at: now,
      });
    return change;
  });
  if (change.revoke) await revokeAtBank(deps, change.row);
  return change.row;
}

/**
 * Stops a subscription's charging for a pause or a cancel, from its latest charge (a charge in
 * flight or being retried is always the latest: no slot is charged while another is open). The
 * job is dropped, unless a charge was handed to the bank and not yet recorded: its job follows that
 * payment to its end whatever the status (the bank may take it), counts it, and then schedules
 * nothing while the subscription is not active. A slot being retried is given up as `giveUp`.
 */
async function stopCharging(trx: Db, id: string, giveUp: 'dropped' | 'cancelled', now: number): Promise<void> {
  const latest = await findLatestCharge(trx, id);
  if (latest?.status !== 'in_flight') await unscheduleCharge(trx, id);
  if (latest?.status === 'retrying')
    await updateCharge(trx, latest.id, { status: giveUp, next_attempt_at: null, updated_at: now });
}

async function pauseWork(trx: Db, row: SubscriptionRow, now: number): Promise<Change> {
  if (!allows('pause', row.status)) throw invalidState('subscription', row.status, 'pause');
  // Pending retries are dropped: the slot being retried is given up.
  await stopCharging(trx, row.id, 'dropped', now);
  const changes = { status: 'paused', paused_at: now, next_charge_at: null, updated_at: now };
  await updateSubscription(trx, row.id, changes);
  await emitEvent(trx, scopeOf(row), 'subscription.paused', row.id, lifecycleData(row, now), now);
  return { row: { ...row, ...changes }, revoke: false };
}

function resumeWork(deps: Deps) {
  return async (trx: Db, row: SubscriptionRow, now: number): Promise<Change> => {
    if (!allows('resume', row.status)) throw invalidState('subscription', row.status, 'resume');
    const schedule = resumeSchedule(scheduleOf(row), now);
    const first = firstCharge(schedule, row.successful_count);
    const changes = {
      ...storedParts(schedule),
      status: first.kind === 'charge' ? 'active' : 'completed',
      resumed_at: now,
      next_slot: first.kind === 'charge' ? first.slot : null,
      next_charge_at: first.kind === 'charge' ? first.at : null,
      completed_at: first.kind === 'charge' ? null : now,
      updated_at: now,
    };
    await updateSubscription(trx, row.id, changes);
    await emitEvent(trx, scopeOf(row), 'subscription.resumed', row.id, lifecycleData(row, now), now);
    if (first.kind === 'charge') await scheduleCharge(trx, deps, row, first.at);
    else {
      await emitEvent(trx, scopeOf(row), 'subscription.completed', row.id, lifecycleData(row, now), now);
      await noticeSubscriptionEnded(trx, { ...row, ...changes }, 'completed', null, now);
    }
    return { row: { ...row, ...changes }, revoke: false };
  };
}

/** Ends a subscription (merchant, payer or bank), with `subscription.cancelled`, in the caller's transaction. */
export async function cancelInTransaction(
  trx: Db,
  row: SubscriptionRow,
  by: CancelledBy,
  now: number,
): Promise<SubscriptionRow> {
  if (!allows('cancel', row.status)) throw invalidState('subscription', row.status, 'cancel');
  await stopCharging(trx, row.id, 'cancelled', now);
  const changes = { status: 'cancelled', cancelled_by: by, cancelled_at: now, next_charge_at: null, updated_at: now };
  await updateSubscription(trx, row.id, changes);
  await emitEvent(trx, scopeOf(row), 'subscription.cancelled', row.id, lifecycleData(row, now), now);
  await noticeSubscriptionEnded(trx, { ...row, ...changes }, 'cancelled', by, now);
  return { ...row, ...changes };
}

/** A cancel repeated (after a timeout, say) answers with the subscription as it is, and does nothing again. */
const cancelWork =
  (by: CancelledBy) =>
  async (trx: Db, row: SubscriptionRow, now: number): Promise<Change> =>
    row.status === 'cancelled'
      ? { row, revoke: false }
      : { row: await cancelInTransaction(trx, row, by, now), revoke: by !== 'bank' };

type Action = 'pause' | 'resume' | 'cancel';

async function act(
  ctx: Ctx,
  id: string,
  action: Action,
  idempotencyKey: string | undefined,
): Promise<Reply<{ subscription: SubscriptionObject }>> {
  const work = action === 'pause' ? pauseWork : action === 'resume' ? resumeWork(ctx.deps) : cancelWork('merchant');
  let revoke: SubscriptionRow | null = null;
  const method = action === 'cancel' ? 'PUT' : 'POST';
  const reply = await idempotent(
    ctx,
    idempotencyKey,
    `${method} /v1/subscriptions/${id}/${action}`,
    {},
    200,
    async (trx) => {
      await getSubscription(trx, owner(ctx), id);
      const locked = (await lockSubscription(trx, id))!;
      const change = await work(trx, locked, ctx.clock.now());
      if (change.revoke) revoke = change.row;
      if (change.row !== locked)
        await recordAuditFor(trx, ctx, `subscription.${action}`, id, {
          status: { from: locked.status, to: change.row.status },
        });
      return { subscription: presentSubscription(change.row) };
    },
  );
  if (revoke) await revokeAtBank(ctx.deps, revoke);
  return reply;
}

export const pauseSubscription = (ctx: Ctx, id: string, key?: string) => act(ctx, id, 'pause', key);
export const resumeSubscription = (ctx: Ctx, id: string, key?: string) => act(ctx, id, 'resume', key);
export const cancelSubscription = (ctx: Ctx, id: string, key?: string) => act(ctx, id, 'cancel', key);

/**
 * The payer cancelled in the service's customer dashboard: `subscription.cancelled` at once and
 * the consent revoked at the bank. `payerEmail` must be the subscription's.
 */
export async function cancelSubscriptionByPayer(
  deps: Deps,
  id: string,
  payerEmail: string,
  who: { actor: Actor; origin?: Origin },
): Promise<SubscriptionRow> {
  const row = await findSubscriptionById(deps.db, id);
  // Another payer's subscription is as unknown as a missing one.
  if (!row || row.email !== payerEmail.trim().toLowerCase()) throw notFound('subscription', id);
  return transition(deps, deps.db, id, cancelWork('payer'), { action: 'subscription.cancel', ...who });
}

export async function retrieveSubscription(ctx: Ctx, id: string) {
  return { subscription: presentSubscription(await getSubscription(ctx.db, owner(ctx), id)) };
}

/** The sandbox bank's consent behind one of the caller's subscriptions (the test helpers' bank hooks). */
export async function bankConsentOfSubscription(ctx: Ctx, id: string): Promise<string> {
  return (await getSubscription(ctx.db, owner(ctx), id)).bank_consent_id;
}

export async function listSubscriptionsFor(
  ctx: Ctx,
  query: {
    status?: string;
    merchant_identifier?: string;
    email?: string;
    request_id?: string;
    limit?: number;
    starting_after?: string;
  },
) {
  const limit = query.limit ?? 100;
  const email = query.email?.trim().toLowerCase();
  const { items, hasMore } = pageOf(await listSubscriptions(ctx.db, owner(ctx), { ...query, email, limit }), limit);
  return { subscriptions: items.map(presentSubscription), has_more: hasMore };
}

/** How many of the caller's subscriptions have each status. */
export async function subscriptionCountsFor(ctx: Ctx): Promise<Record<string, number>> {
  return countSubscriptionsByStatus(ctx.db, { userId: ctx.merchant.id, mode: ctx.mode });
}

/** A subscription's charges, each slot with its attempts and retry (the dashboard's detail page). */
export async function subscriptionChargesFor(ctx: Ctx, id: string) {
  const row = await getSubscription(ctx.db, owner(ctx), id);
  const charges = await listCharges(ctx.db, row.id);
  return charges.map((charge) => ({
    slot: charge.slot,
    date: charge.slot_date,
    charge_at: iso(Number(charge.charge_at)),
    status: charge.status,
    attempts: charge.attempts,
    last_payment_id: charge.last_payment_id,
    last_error: charge.last_error,
    next_attempt_at: isoOrNull(charge.next_attempt_at == null ? null : Number(charge.next_attempt_at)),
  }));
}

/**
 * Emails the payer the plain receipt of a successful charge, in `trx`: what the receipts module
 * asks for when the merchant has no tax settings (docs/receipts.md).
 */
export async function sendPlainChargeReceipt(trx: Db, payment: PaymentRow, now: number): Promise<void> {
  if (!payment.subscription_id) return;
  const subscription = await findSubscriptionById(trx, payment.subscription_id);
  if (subscription) await noticeChargeReceipt(trx, subscription, payment, now);
}

/** The payer's email and what the subscription is for, for mail about one of its payments (a refund). */
export async function payerOfSubscription(db: Db, id: string): Promise<{ email: string; title: string } | null> {
  const subscription = await findSubscriptionById(db, id);
  return subscription ? { email: subscription.email, title: subscription.description } : null;
}
