import { idempotent, type Reply } from '../../http/idempotency.ts';
import { recordAuditFor } from '../audit/audit.service.ts';
import { enqueue } from '../../jobs/queue.ts';
import { invalidParam, invalidState, notFound, type AppError } from '../../shared/errors.ts';
import { newId } from '../../shared/ids.ts';
import { AMOUNT_FORM, formatAmount, parseAmount } from '../../shared/money.ts';
import { pageOf } from '../../shared/pagination.ts';
import { iso } from '../../shared/time.ts';
import type { Db } from '../../store/db.ts';
import { periodWindow } from '../consents/limits.ts';
import type { Ctx, Deps } from '../context.ts';
import { emitEvent } from '../events/events.service.ts';
import { clockIdOf } from '../merchants/merchants.clock.ts';
import {
  countRefunded,
  findPaymentById,
  holdPaymentToRefund,
  keptPayerAccountsOf,
  type PaymentRow,
} from '../payments/payments.service.ts';
import { settledCents } from '../payments/payments.rules.ts';
import { ensureTestAuthority } from './refunds.authority.ts';
import { noticeRefundSent } from './refunds.notices.ts';
import { presentRefund } from './refunds.present.ts';
import * as repo from './refunds.repo.ts';
import {
  authorityRefusal,
  authorityRefusalError,
  exceedsRefundableError,
  refundAmountOf,
  refundStatementText,
  type ActionReason,
  type RefundPeriod,
  type RefundStatus,
} from './refunds.rules.ts';
import type { CreateRefundBody, ListRefundsQuery } from './refunds.schemas.ts';
import type { RefundAuthorityRow, RefundRow } from './refunds.tables.ts';

// Refunds (docs/refunds.md). Creating one is one transaction: the payment is held (row-locked) so
// refunds of it queue, what remains refundable is checked and the refund counted against it, the
// merchant's refund authority (if any) is held the same way for its limits, and the refund, its
// refund.created and the job that carries it out are written. The bank is never called inside it.
// A refund that fails gives its amount back to the payment in the transaction that records it.

export const EXECUTE_REFUND_JOB = 'refund.execute';

declare module '../../jobs/queue.ts' {
  interface JobPayloads {
    'refund.execute': { refund_id: string };
  }
}

const ownerOf = (ctx: { merchant: { id: string }; mode: Ctx['mode'] }) => ({
  userId: ctx.merchant.id,
  mode: ctx.mode,
});

export async function createRefund(
  ctx: Ctx,
  body: CreateRefundBody,
  idempotencyKey?: string,
): Promise<Reply<{ refund: ReturnType<typeof presentRefund> }>> {
  let cents: number | null = null;
  if (body.amount !== undefined) {
    cents = parseAmount(body.amount);
    if (cents === null) throw invalidParam('amount', `amount must be ${AMOUNT_FORM}`);
    if (cents === 0) throw invalidParam('amount', 'amount must be more than 0.00 NZD');
  }
  const reason = body.reason?.trim() || null;
  return idempotent(ctx, idempotencyKey, 'POST /v1/refunds', body, 201, async (trx) => {
    const owner = ownerOf(ctx);
    const payment = await holdPaymentToRefund(trx, owner, body.payment_id);
    const authority = await holdAuthority(trx, ctx);
    const now = ctx.clock.now();
    const checked = checkRefund(payment, authority, cents, now, ctx.deps.config.serviceTimeZone);
    if ('refusal' in checked) throw checked.refusal;
    const amount = checked;
    if (authority && checked.window) await repo.countOnAuthority(trx, authority, checked.window, amount.cents);
    await countRefunded(trx, payment.id, amount.cents);
    const row = newRefundRow(payment, amount.cents, reason, authority?.id ?? null, now);
    if (!authority) {
      row.status = 'requires_action';
      row.action_reason = 'no_refund_authority' satisfies ActionReason;
    }
    await repo.insertRefund(trx, row);
    await emitEvent(
      trx,
      owner,
      'refund.created',
      row.id,
      {
        id: row.id,
        payment_id: row.payment_id,
        request_id: row.request_id,
        user_id: row.user_id,
        amount: formatAmount(row.amount_cents),
        status: row.status as 'pending' | 'requires_action',
        created_at: iso(now),
      },
      now,
    );
    if (row.status === 'pending') await queueExecution(trx, row, ctx.deps.clock.now());
    await recordAuditFor(trx, ctx, 'refund.create', row.id, {
      payment_id: row.payment_id,
      amount_cents: row.amount_cents,
      status: row.status,
      reason,
    });
    return { refund: presentRefund(row) };
  });
}

/**
 * The caller's active refund authority, held (row-locked) for the rest of the transaction; in test
 * mode, the sandbox one is made first if the merchant never had one, so it exists from the start.
 */
async function holdAuthority(trx: Db, ctx: Ctx): Promise<RefundAuthorityRow | undefined> {
  const owner = ownerOf(ctx);
  const held = await repo.lockActiveAuthority(trx, owner);
  if (held || owner.mode !== 'test') return held;
  await ensureTestAuthority(ctx.deps, owner, ctx.merchant.name, trx);
  return repo.lockActiveAuthority(trx, owner);
}

type Checked = { refusal: AppError } | { cents: number; window: { start: number; end: number } | null };

/**
 * What a refund of `cents` (null: everything that remains) of this payment meets now: its refusal
 * (the payment's status, what remains refundable, the authority's limits), or the amount and, with
 * an authority, the limit period it counts in.
 */
function checkRefund(
  payment: PaymentRow,
  authority: RefundAuthorityRow | undefined,
  cents: number | null,
  now: number,
  zone: string,
): Checked {
  if (payment.status !== 'successful') return { refusal: invalidState('payment', payment.status, 'refund') };
  const amount = refundAmountOf(payment, cents);
  if (!amount.ok) return { refusal: exceedsRefundableError(amount.refundable) };
  if (!authority) return { cents: amount.cents, window: null };
  const period = authority.period as RefundPeriod;
  const window = periodWindow(period, now, zone);
  const limits = {
    period,
    max_per_refund_cents: authority.max_per_refund_cents,
    max_per_period_cents: authority.max_per_period_cents,
  };
  const refusal = authorityRefusal(limits, repo.authorityUsage(authority, window), amount.cents);
  return refusal ? { refusal: authorityRefusalError(refusal, period) } : { cents: amount.cents, window };
}

/**
 * What a refund of `cents` of one of the caller's payments would meet now, without counting
 * anything: the refusal POST /v1/refunds would give, or null (the dashboard's review). The refund
 * checks again with the payment and the authority held.
 */
export async function refusalOfRefund(ctx: Ctx, paymentId: string, cents: number): Promise<AppError | null> {
  const owner = ownerOf(ctx);
  const payment = await findPaymentById(ctx.db, paymentId);
  if (!payment || payment.user_id !== owner.userId || payment.mode !== owner.mode) throw notFound('payment', paymentId);
  const authority = await repo.findActiveAuthority(ctx.db, owner);
  const checked = checkRefund(payment, authority, cents, ctx.clock.now(), ctx.deps.config.serviceTimeZone);
  return 'refusal' in checked ? checked.refusal : null;
}

function newRefundRow(
  payment: PaymentRow,
  cents: number,
  reason: string | null,
  authorityId: string | null,
  now: number,
): RefundRow {
  const text = refundStatementText(payment);
  return {
    id: newId('refund'),
    user_id: payment.user_id,
    mode: payment.mode,
    payment_id: payment.id,
    request_id: payment.request_id,
    status: 'pending',
    amount_cents: cents,
    settled_cents: settledCents(payment.mode, cents),
    reason,
    failure_reason: null,
    action_reason: null,
    particulars: text.particulars,
    code: text.code,
    reference: text.reference,
    authority_id: authorityId,
    bank_payment_id: null,
    submitted_at: null,
    sent_at: null,
    paid_by: null,
    created_at: now,
    updated_at: now,
    completed_at: null,
  };
}

/**
 * Queues the job that carries a refund out at the bank, due at `runAt` (real time). It follows the
 * refund's clock: in test mode the merchant's test clock, so the refund's times are on that clock,
 * an advance runs it, and deleting the test data takes it away with the refund.
 */
export async function queueExecution(
  trx: Db,
  refund: Pick<RefundRow, 'id' | 'user_id' | 'mode'>,
  runAt: number,
): Promise<void> {
  await enqueue(
    trx,
    {
      kind: EXECUTE_REFUND_JOB,
      runAt,
      clockId: clockIdOf(refund),
      payload: { refund_id: refund.id },
      dedupeKey: `${EXECUTE_REFUND_JOB}:${refund.id}`,
    },
    runAt,
  );
}

export async function retrieveRefund(ctx: Ctx, id: string) {
  return { refund: presentRefund(await getRefund(ctx, id)) };
}

export async function getRefund(ctx: Ctx, id: string): Promise<RefundRow> {
  const row = await repo.findRefund(ctx.db, ownerOf(ctx), id);
  if (!row) throw notFound('refund', id);
  return row;
}

export async function listRefundsFor(ctx: Ctx, query: ListRefundsQuery) {
  const limit = query.limit ?? 100;
  const rows = await repo.listRefunds(ctx.db, ownerOf(ctx), { ...query, limit });
  const { items, hasMore } = pageOf(rows, limit);
  return { refunds: items.map(presentRefund), has_more: hasMore };
}

/** The refunds of one of the caller's payments, oldest first (the payment's page). */
export async function refundsOfPayment(ctx: Ctx, paymentId: string): Promise<RefundRow[]> {
  const rows = await repo.refundsOfPayments(ctx.db, [paymentId]);
  return rows.filter((row) => row.user_id === ctx.merchant.id && row.mode === ctx.mode);
}

/** Refunds of these payments, for pages that list payments with their refunds (the payer's). */
export function refundsOfPayments(db: Db, paymentIds: readonly string[]): Promise<RefundRow[]> {
  return repo.refundsOfPayments(db, paymentIds);
}

/** A merchant's refunds sent in [from, to) that did not fail, oldest first (what reconciliation matches money out to). */
export function refundsSentBetween(
  db: Db,
  owner: { userId: string; mode: Ctx['mode'] },
  window: { from: number; to: number },
  limit: number,
): Promise<RefundRow[]> {
  return repo.refundsSentBetween(db, owner, window, limit);
}

/** A merchant's refund by id, or undefined (reconciliation's manual match checks the owner). */
export function findOwnRefund(db: Db, owner: { userId: string; mode: Ctx['mode'] }, id: string) {
  return repo.findRefund(db, owner, id);
}

/** Rows for the dashboard's lists and CSV: newest first, filtered as the API's list is. */
export async function refundRowsFor(
  ctx: Ctx,
  filters: Omit<repo.RefundFilters, 'limit'> & { limit?: number },
): Promise<{ items: RefundRow[]; hasMore: boolean }> {
  const limit = filters.limit ?? 50;
  return pageOf(await repo.listRefunds(ctx.db, ownerOf(ctx), { ...filters, limit }), limit);
}

/** What the merchant pays by hand for a refund that requires action: the payer's account when it is known. */
export type ManualPayment = {
  refund: RefundRow;
  /** The payer's account and name, shown only for a refund that requires action; null when the bank never said. */
  payee: { accountNumber: string; name: string | null } | null;
};

/** The caller's refunds that require action, oldest first, each with the account to pay (the dashboard's list and its CSV). */
export async function refundsRequiringAction(ctx: Ctx, limit = 5000): Promise<ManualPayment[]> {
  const rows = await repo.listRefunds(ctx.db, ownerOf(ctx), { status: 'requires_action', limit });
  return withPayees(ctx, rows.slice(0, limit).reverse());
}

/** One of the merchant's refunds with the payer's account to pay it to, when it is kept. */
export async function refundToPay(ctx: Ctx, id: string): Promise<ManualPayment> {
  const [item] = await withPayees(ctx, [await getRefund(ctx, id)]);
  return item;
}

async function withPayees(ctx: Ctx, refunds: RefundRow[]): Promise<ManualPayment[]> {
  const accounts = await keptPayerAccountsOf(
    ctx.deps,
    refunds.map((refund) => refund.payment_id),
  );
  return refunds.map((refund) => {
    const account = accounts.get(refund.payment_id);
    return { refund, payee: account ? { accountNumber: account.identification, name: account.name } : null };
  });
}

type StatusChange = {
  status: RefundStatus;
  failure_reason?: string | null;
  action_reason?: ActionReason | null;
  bank_payment_id?: string | null;
  sent_at?: number | null;
  paid_by?: string | null;
  authority_id?: string | null;
};

/**
 * Moves a refund to a new status with refund.status_updated, in the caller's transaction (which
 * holds the refund's row). A failed refund gives its amount back to the payment; one that leaves
 * the merchant's account (sent_at set) tells the payer.
 */
export async function setRefundStatus(trx: Db, deps: Deps, refund: RefundRow, change: StatusChange, now: number) {
  const changes: Partial<RefundRow> = { ...change, updated_at: now };
  if (change.status === 'successful' || change.status === 'failed') changes.completed_at = now;
  if (change.status === 'failed') {
    await holdPaymentToRefund(trx, { userId: refund.user_id, mode: refund.mode }, refund.payment_id);
    await countRefunded(trx, refund.payment_id, -refund.amount_cents);
  }
  // A refund the authority will not pay (it failed, or the merchant pays it by hand) stops counting against it.
  if ((change.status === 'failed' || change.status === 'requires_action') && refund.authority_id)
    await repo.uncountOnAuthority(trx, refund.authority_id, refund.created_at, refund.amount_cents);
  await repo.updateRefund(trx, refund.id, changes);
  const after: RefundRow = { ...refund, ...changes };
  if (change.status !== refund.status) {
    await emitEvent(
      trx,
      { userId: refund.user_id, mode: refund.mode },
      'refund.status_updated',
      refund.id,
      {
        id: refund.id,
        payment_id: refund.payment_id,
        request_id: refund.request_id,
        user_id: refund.user_id,
        status: change.status,
        failure_reason: after.failure_reason,
        action_reason: after.action_reason,
        updated_at: iso(now),
      },
      now,
    );
  }
  if (after.sent_at !== null && refund.sent_at === null) await noticeRefundSent(trx, deps, after, now);
  return after;
}

/**
 * The merchant paid a refund that required action by hand: it is successful, recorded with who
 * (the dashboard user's email) and when. Only a refund that requires action can be marked.
 */
export async function markRefundPaid(ctx: Ctx, id: string, by: string): Promise<RefundRow> {
  return ctx.deps.store.transaction(async (trx) => {
    const refund = await repo.lockRefund(trx, id);
    if (!refund || refund.user_id !== ctx.merchant.id || refund.mode !== ctx.mode) throw notFound('refund', id);
    if (refund.status !== 'requires_action') throw invalidState('refund', refund.status, 'mark as paid');
    const now = ctx.clock.now();
    const after = await setRefundStatus(
      trx,
      ctx.deps,
      refund,
      { status: 'successful', paid_by: by, sent_at: now },
      now,
    );
    await recordAuditFor(trx, ctx, 'refund.mark_paid', id, { status: { from: refund.status, to: 'successful' } });
    return after;
  });
}

/** The merchant will not pay a refund that required action: it fails, and its amount is refundable again. */
export async function cancelRefund(ctx: Ctx, id: string): Promise<RefundRow> {
  return ctx.deps.store.transaction(async (trx) => {
    const refund = await repo.lockRefund(trx, id);
    if (!refund || refund.user_id !== ctx.merchant.id || refund.mode !== ctx.mode) throw notFound('refund', id);
    if (refund.status !== 'requires_action') throw invalidState('refund', refund.status, 'cancel');
    const now = ctx.clock.now();
    const after = await setRefundStatus(
      trx,
      ctx.deps,
      refund,
      { status: 'failed', failure_reason: 'cancelled_by_merchant' },
      now,
    );
    await recordAuditFor(trx, ctx, 'refund.cancel', id, { status: { from: refund.status, to: 'failed' } });
    return after;
  });
}

/** A refund by id alone, for another module writing in the refund's own transaction (its credit note). */
export function refundById(db: Db, id: string): Promise<RefundRow | undefined> {
  return repo.findRefundById(db, id);
}

export { presentRefund };
export type { RefundRow };
