import type { Kysely, Transaction, Updateable } from 'kysely';
import { recordAudit } from '../audit/audit.service.ts';
import type { JobContext, JobHandler, JobResult } from '../../jobs/worker.ts';
import { newId } from '../../shared/ids.ts';
import { iso } from '../../shared/time.ts';
import type { Database } from '../../store/tables.ts';
import { transact } from '../../store/store.ts';
import {
  followNamedPayment,
  mayResendUnderKey,
  type BankFailure,
  type SubmittedPayment,
} from '../banks/bank-connector.ts';
import { EMPTY_DETAILS, recordCustInfo, type PayerDetails } from '../customers/customers.service.ts';
import { emitEvent } from '../events/events.service.ts';
import { creditorOf, remittanceOf } from '../payments/payments.banks.ts';
import {
  auditSettledByHand,
  createPaymentRow,
  extrasOfWord,
  findPaymentById,
  holdPaymentToRecord,
  setPaymentStatus,
  type PaymentRow,
} from '../payments/payments.service.ts';
import type { BankWord } from '../payments/payments.rules.ts';
import type { AuditBy } from '../audit/audit.service.ts';
import { isComplete, slotDate } from './schedule.ts';
import { bankOf } from './subscriptions.bank.ts';
import type { SubscriptionsTable } from './subscriptions.tables.ts';
import { submitUnderConsent, type ConsentTokenHolder, rowTokenHolder } from '../banks/consent-tokens.ts';
import {
  bankTokenOf,
  chargesInFlight,
  findCharge,
  findChargeOfPayment,
  findLatestCharge,
  insertChargeIfNew,
  lockSubscription,
  updateCharge,
  updateSubscription,
  type ChargeRow,
  type SubscriptionRow,
} from './subscriptions.repo.ts';
import { isConsentGone, nextAfterSlot, retryAfterFailure, scheduleOf } from './subscriptions.rules.ts';
import { noticeChargeFailed, noticeSubscriptionEnded } from './subscriptions.notices.ts';
import { cancelInTransaction } from './subscriptions.service.ts';
import { queueChargeUnlessQueued, scheduleCharge, unscheduleCharge } from './subscriptions.schedule-jobs.ts';
import type { Mode } from '../../shared/mode.ts';
import type { Deps } from '../context.ts';

// Charging a due slot, exactly once:
// 1. claim: under the subscription's row lock, the slot's charge row (UNIQUE subscription + date)
//    and a payment for this attempt are written and committed;
// 2. the bank is called outside any transaction, with the attempt's payment id as the
//    x-idempotency-key, so a crash between the call and step 3 re-submits with the same key and
//    the bank answers with the payment it already made;
// 3. record: under the lock again, the outcome, the events, and the next job, with the job's own
//    completion, in one transaction.

type Db = Kysely<Database>;
type Trx = Transaction<Database>;
type Finish = JobContext['finishIn'];
/** `resent`: the payment was handed to the bank before and never named by it (a lost answer, a crash). */
type Attempt = { sub: SubscriptionRow; charge: ChargeRow; payment: PaymentRow; resent?: boolean };

/** The bank no longer renews the consent's access, though it still holds it authorised (consent-tokens.ts). */
const TOKEN_REFUSED = 'consent_token_refused';

/** How long to wait before asking again when the bank's answer was lost or is still pending. */
const UNKNOWN_RETRY_MS = 30_000;
const PENDING_RETRY_MS = 60_000;

const scopeOf = (row: { user_id: string; mode: Mode }) => ({ userId: row.user_id, mode: row.mode });

function payerDetailsOf(sub: SubscriptionRow): PayerDetails {
  const given = sub.payer_details ? (JSON.parse(sub.payer_details) as Partial<PayerDetails>) : {};
  return { ...EMPTY_DETAILS, ...given, email: given.email ?? sub.email };
}

/** Step 1. Returns the attempt to submit, or a job result when there is nothing to charge now. */
async function claim(
  deps: Deps,
  trx: Trx,
  subscriptionId: string,
  now: number,
  finish: Finish,
): Promise<Attempt | { done: JobResult }> {
  const sub = await lockSubscription(trx, subscriptionId);
  const latest = sub && (await findLatestCharge(trx, sub.id));
  if (sub && latest?.status === 'in_flight' && latest.last_payment_id) {
    // A crash, a lost answer or a payment pending at the bank: the same payment is followed to its
    // end, whatever happened to the subscription meanwhile (paused, resumed or cancelled): the bank
    // may have taken it (docs/subscriptions.md, "Control").
    const payment = await findPaymentById(trx, latest.last_payment_id);
    if (payment && payment.status !== 'successful' && payment.status !== 'failed') {
      const resent = payment.bank_payment_id === null;
      if (!resent || mayResendUnderKey(payment.created_at, now)) return { sub, charge: latest, payment, resent };
      // Never answered for 23 hours: the bank may now take its key for a new payment.
      await finish(trx);
      await recordOutcomeUnknown(deps, trx, { sub, charge: latest, payment }, 'no_answer', now);
      return { done: undefined };
    }
  }
  if (sub?.status !== 'active' || sub.next_slot === null || sub.next_charge_at === null) {
    await finish(trx);
    return { done: undefined };
  }
  if (sub.next_charge_at > now) return { done: { retryAt: deps.clock.now() + (sub.next_charge_at - now) } };
  const schedule = scheduleOf(sub);
  const date = slotDate(schedule.anchor, sub.next_slot);
  // The latest charge is the slot's own, or tells that the slot has none (its date is before it).
  const charge =
    latest?.slot_date === date
      ? latest
      : latest && latest.slot_date > date
        ? await findCharge(trx, sub.id, date)
        : undefined;
  if (charge && charge.status !== 'retrying' && charge.status !== 'in_flight') {
    // The slot was settled already; never charge it again. Move on from it.
    await finish(trx);
    await advance(deps, trx, sub, sub.next_slot, now);
    return { done: undefined };
  }
  const payment = await createPaymentRow(
    trx,
    {
      request: {
        id: sub.request_id,
        user_id: sub.user_id,
        mode: sub.mode,
        merchant_identifier: sub.merchant_identifier,
        reference: sub.reference,
      },
      amountCents: sub.amount_cents,
      bankId: sub.bank_id,
      channel: null,
      subscriptionId: sub.id,
    },
    now,
  );
  await recordCustInfo(trx, { userId: sub.user_id, mode: sub.mode }, payment.id, payerDetailsOf(sub), now);
  if (!charge) {
    // The slot's first attempt: its charge row is written once, already pointing at the payment.
    const fresh: ChargeRow = {
      id: newId('charge'),
      subscription_id: sub.id,
      slot: sub.next_slot,
      slot_date: date,
      charge_at: sub.next_charge_at,
      status: 'in_flight',
      attempts: 1,
      last_payment_id: payment.id,
      last_error: null,
      next_attempt_at: null,
      created_at: now,
      updated_at: now,
    };
    if (!(await insertChargeIfNew(trx, fresh))) throw new Error(`charge slot ${sub.id} ${date} taken concurrently`);
    return { sub, charge: fresh, payment };
  }
  const changes = {
    status: 'in_flight',
    attempts: charge.attempts + 1,
    last_payment_id: payment.id,
    next_attempt_at: null,
    updated_at: now,
  };
  await updateCharge(trx, charge.id, changes);
  return { sub, charge: { ...charge, ...changes }, payment };
}

/** Step 2: outside any transaction. */
async function submit(deps: Deps, db: Db, attempt: Attempt, now: number): Promise<SubmittedPayment> {
  const bank = bankOf(deps, attempt.sub);
  if (!bank)
    return {
      ok: false,
      reason: 'bank_unavailable',
      message: `bank ${attempt.sub.bank_id} is not connected`,
      unknown: true,
    };
  const trace = { payment_id: attempt.payment.id, subscription_id: attempt.sub.id };
  try {
    // Taken by the bank and left pending: asked about, never submitted again.
    const named = attempt.payment.bank_payment_id;
    if (named) return await followNamedPayment(bank, { paymentId: named, at: now, trace }, deps.log);
    // Under the consent's token, renewed first when it is known to expire, and once on a 401 (the
    // same body and key again); a renewal the bank refuses reads as the consent revoked there.
    return await submitUnderConsent(deps, bank, tokenHolderOf(deps, attempt.sub), {
      trace,
      consentId: attempt.sub.bank_consent_id,
      amountCents: attempt.payment.settled_cents,
      creditor: await creditorOf(db, {
        mode: attempt.sub.mode,
        user_id: attempt.sub.user_id,
        bank_account_id: attempt.sub.bank_account_id,
      }),
      remittance: remittanceOf(attempt.payment),
      idempotencyKey: attempt.payment.id,
      at: now,
    });
  } catch (error) {
    return {
      ok: false,
      reason: 'bank_error',
      message: error instanceof Error ? error.message : String(error),
      unknown: true,
    };
  }
}

/** Where the subscription keeps its consent's bank token, for its charges. */
function tokenHolderOf(deps: Deps, sub: SubscriptionRow): ConsentTokenHolder {
  return rowTokenHolder(deps, 'subscriptions', sub.id, bankTokenOf(sub));
}

/** The subscription moves past a settled slot: to the next slot's job, or to completion. */
async function advance(
  deps: Pick<Deps, 'clock'>,
  trx: Db,
  sub: SubscriptionRow,
  slot: number,
  now: number,
  counts: Updateable<SubscriptionsTable> = {},
): Promise<number | null> {
  const next = nextAfterSlot(scheduleOf(sub), sub.successful_count, slot);
  if (next.kind === 'complete') {
    await updateSubscription(trx, sub.id, {
      ...counts,
      status: 'completed',
      completed_at: now,
      next_slot: null,
      next_charge_at: null,
      updated_at: now,
    });
    await emitEvent(
      trx,
      scopeOf(sub),
      'subscription.completed',
      sub.id,
      {
        id: sub.id,
        user_id: sub.user_id,
        merchant_identifier: sub.merchant_identifier,
        updated_at: iso(now),
      },
      now,
    );
    await noticeSubscriptionEnded(trx, sub, 'completed', null, now);
    return null;
  }
  await updateSubscription(trx, sub.id, { ...counts, next_slot: next.slot, next_charge_at: next.at, updated_at: now });
  await scheduleCharge(trx, deps, sub, next.at);
  return next.at;
}

/**
 * Whether `charge` is the slot the active subscription's schedule is on. It is not when the
 * subscription was paused and resumed while the charge was at the bank: the resume put the schedule
 * on a new anchor with its own next slot (and job), which stays the next.
 */
function isCurrent(sub: SubscriptionRow, charge: ChargeRow): boolean {
  return (
    sub.status === 'active' &&
    sub.next_slot === charge.slot &&
    slotDate(scheduleOf(sub).anchor, charge.slot) === charge.slot_date
  );
}

/**
 * The slot an active subscription moves on from once `charge` is settled: its own, or, after a
 * pause and resume during the charge, the slot before the resumed schedule's next, so that the
 * count and the end decide whether that one is still charged.
 */
function movesOnFrom(sub: SubscriptionRow, charge: ChargeRow): number {
  return isCurrent(sub, charge) || sub.next_slot === null ? charge.slot : sub.next_slot - 1;
}

/** Step 3. */
async function record(
  deps: Deps,
  trx: Trx,
  claimed: Attempt,
  result: SubmittedPayment,
  now: number,
  finish: Finish,
): Promise<JobResult> {
  const sub = await lockSubscription(trx, claimed.sub.id);
  const charge = sub && (await findCharge(trx, sub.id, claimed.charge.slot_date));
  const payment = charge && (await findPaymentById(trx, claimed.payment.id));
  if (!sub || !charge || !payment) {
    // Deleted while the bank was asked (the merchant's test data): nothing to record.
    await finish(trx);
    return undefined;
  }
  if (
    charge.status !== 'in_flight' ||
    charge.last_payment_id !== payment.id ||
    payment.status === 'successful' ||
    payment.status === 'failed'
  ) {
    // Someone else recorded this attempt (a second process after a lease ran out).
    await finish(trx);
    return undefined;
  }
  if (!result.ok && result.unknown) return { retryAt: deps.clock.now() + UNKNOWN_RETRY_MS, error: result.message };
  // Sent again after an answer that never came: a bank that looks at the consent or its limits
  // before its keys refuses a payment it may hold, so no refusal fails it. Unless the consent is
  // gone or can no longer be used (below), the bank is asked again until it answers, or 23 hours
  // pass (claim).
  if (claimed.resent && !result.ok && !isConsentGone(result) && result.reason !== TOKEN_REFUSED)
    return { retryAt: deps.clock.now() + UNKNOWN_RETRY_MS, error: `refused when sent again: ${result.message}` };
  if (result.ok && result.outcome === 'pending') {
    if (payment.status !== 'unconfirmed')
      await setPaymentStatus(trx, payment, 'unconfirmed', now, { bank_payment_id: result.paymentId });
    return { retryAt: deps.clock.now() + PENDING_RETRY_MS, error: 'payment pending at the bank' };
  }
  await finish(trx);
  const active = sub.status === 'active';

  if (result.ok && result.outcome === 'successful') {
    await setPaymentStatus(trx, payment, 'successful', now, { bank_payment_id: result.paymentId });
    await updateCharge(trx, charge.id, { status: 'successful', last_error: null, updated_at: now });
    // Its receipt (the receipts module's) was issued and emailed as the payment became successful.
    // Paused or cancelled meanwhile: the charge counts, and nothing is scheduled.
    const counts = { successful_count: sub.successful_count + 1 };
    if (active) await advance(deps, trx, { ...sub, ...counts }, movesOnFrom(sub, charge), now, counts);
    else await updateSubscription(trx, sub.id, { ...counts, updated_at: now });
    await auditCharge(trx, { sub, charge, payment }, 'successful', null, now);
    return undefined;
  }

  if (claimed.resent && !result.ok) {
    // Sent again after an answer that never came, under a consent the payer has withdrawn since,
    // or whose access the bank no longer renews: a bank that looks at the consent before its keys
    // refuses a payment it may hold, and without a token it cannot be asked again.
    await recordOutcomeUnknown(deps, trx, { sub, charge, payment }, result.reason, now);
    return undefined;
  }
  const reason = await recordFailure(deps, trx, { sub, charge, payment }, result, now);
  await auditCharge(trx, { sub, charge, payment }, 'failed', reason, now);
  return undefined;
}

/** Each attempt's outcome, in the audit trail: a charge the service made on the merchant's behalf. */
function auditCharge(trx: Trx, { sub, charge, payment }: Attempt, status: string, reason: string | null, now: number) {
  return recordAudit(trx, {
    userId: sub.user_id,
    mode: sub.mode,
    actor: { kind: 'service', job: 'subscription.charge' },
    action: 'subscription.charge',
    objectId: sub.id,
    summary: {
      payment_id: payment.id,
      amount_cents: payment.settled_cents,
      slot_date: charge.slot_date,
      attempt: charge.attempts,
      status,
      failure_reason: reason,
    },
    at: now,
  });
}

/**
 * A charge whose payment the bank may hold but will not be asked about again under its key: never
 * answered for 23 hours, or refused on a resend because the consent is gone. The payment stays
 * unconfirmed (not failed: the payer may have paid), the slot is given up without counting, and
 * the schedule moves on; a consent that is gone ends the subscription, as a refusal does. Logged
 * for the operator, who asks the bank.
 */
async function recordOutcomeUnknown(deps: Deps, trx: Trx, { sub, charge, payment }: Attempt, why: string, now: number) {
  if (payment.status === 'awaiting-consent') await setPaymentStatus(trx, payment, 'unconfirmed', now);
  // Withdrawn at the bank: the subscription ends. Unanswered, or its access no longer renewed
  // while the bank still holds it authorised: the slot is given up and the schedule goes on.
  const gone = why !== 'no_answer' && why !== TOKEN_REFUSED;
  const status = gone || sub.status === 'cancelled' ? 'cancelled' : 'dropped';
  await updateCharge(trx, charge.id, { status, last_error: `bank_outcome_unknown: ${why}`, updated_at: now });
  if (gone && (sub.status === 'active' || sub.status === 'paused')) await cancelInTransaction(trx, sub, 'bank', now);
  else if (sub.status === 'active') await advance(deps, trx, sub, movesOnFrom(sub, charge), now);
  await auditCharge(trx, { sub, charge, payment }, 'unknown', `bank_outcome_unknown: ${why}`, now);
  deps.log.error(
    { subscription_id: sub.id, payment_id: payment.id, slot_date: charge.slot_date, reason: why },
    'a subscription charge the bank may hold is not sent again: its payment stays unconfirmed',
  );
}

/** A charge given up while its payment may be at the bank (recordOutcomeUnknown): only the bank's word settles it. */
function chargeWaitsForBankWord(charge: ChargeRow, payment: PaymentRow): boolean {
  return (
    charge.last_payment_id === payment.id &&
    (charge.status === 'dropped' || charge.status === 'cancelled') &&
    (charge.last_error?.startsWith('bank_outcome_unknown') ?? false) &&
    payment.status === 'unconfirmed' &&
    payment.bank_payment_id === null
  );
}

/** Whether a subscription's payment is one whose charge waits for the bank's word. */
export async function subscriptionPaymentWaitsForBankWord(db: Db, payment: PaymentRow): Promise<boolean> {
  if (!payment.subscription_id) return false;
  const charge = await findChargeOfPayment(db, payment.subscription_id, payment.id);
  return charge !== undefined && chargeWaitsForBankWord(charge, payment);
}

/**
 * The bank's word on a subscription charge given up while its payment may be at the bank, as an
 * operator records it. Made: the payment is successful, the charge counts, and a subscription
 * that has now had all its charges completes rather than charging one more. Not made: the payment
 * fails, counted as a failed attempt; the slot stays given up (the schedule moved on from it).
 * The audit trail names the operator. Null when the charge is not waiting for it (any more).
 */
export async function settleChargeByHand(
  deps: Pick<Deps, 'store' | 'clock'>,
  paymentId: string,
  word: BankWord,
  now: number,
  by: AuditBy,
): Promise<PaymentRow | null> {
  return deps.store.transaction(async (trx) => {
    const known = await findPaymentById(trx, paymentId);
    const sub = known?.subscription_id ? await lockSubscription(trx, known.subscription_id) : undefined;
    const payment = sub && (await holdPaymentToRecord(trx, paymentId));
    const charge = payment && (await findChargeOfPayment(trx, sub.id, payment.id));
    if (!sub || !payment || !charge || !chargeWaitsForBankWord(charge, payment)) return null;
    const settled = await setPaymentStatus(trx, payment, word.status, now, extrasOfWord(word));
    if (word.status === 'successful') {
      await updateCharge(trx, charge.id, { status: 'successful', last_error: null, updated_at: now });
      const counts = { successful_count: sub.successful_count + 1 };
      // The schedule moved on from this slot uncounted: with it counted, the subscription may have
      // had all its charges before its next slot (unless that one is at the bank already).
      const latest = await findLatestCharge(trx, sub.id);
      const endsNow =
        sub.status === 'active' &&
        sub.next_slot !== null &&
        latest?.status !== 'in_flight' &&
        isComplete(scheduleOf(sub), counts.successful_count, sub.next_slot);
      if (endsNow && sub.next_slot !== null) {
        await unscheduleCharge(trx, sub.id);
        await advance(deps, trx, { ...sub, ...counts }, sub.next_slot - 1, now, counts);
      } else await updateSubscription(trx, sub.id, { ...counts, updated_at: now });
    } else {
      await updateCharge(trx, charge.id, { last_error: word.reason, updated_at: now });
      await updateSubscription(trx, sub.id, { failed_count: sub.failed_count + 1, updated_at: now });
    }
    await auditSettledByHand(trx, payment, settled, now, by);
    return settled;
  });
}

/**
 * Step 3 for a charge the bank refused: the payment failed; the subscription ends when the payer
 * withdrew the consent, and otherwise the charge is retried on the schedule's rule or skipped.
 */
async function recordFailure(
  deps: Deps,
  trx: Trx,
  { sub, charge, payment }: Attempt,
  result: SubmittedPayment,
  now: number,
): Promise<string> {
  const active = sub.status === 'active';
  const failure: Pick<BankFailure, 'reason' | 'message' | 'bankCode'> = result.ok
    ? { reason: result.failureReason ?? 'rejected_by_bank', message: result.failureReason ?? 'rejected by the bank' }
    : result;
  await setPaymentStatus(trx, payment, 'failed', now, {
    failure_reason: failure.reason,
    ...(result.ok && { bank_payment_id: result.paymentId }),
  });
  const failedSub = { ...sub, failed_count: sub.failed_count + 1 };

  if (isConsentGone(failure)) {
    // The payer withdrew the consent at their bank: this attempt fails and the subscription ends.
    await updateCharge(trx, charge.id, { status: 'cancelled', last_error: failure.reason, updated_at: now });
    await updateSubscription(trx, sub.id, { failed_count: failedSub.failed_count, updated_at: now });
    if (active || sub.status === 'paused') await cancelInTransaction(trx, failedSub, 'bank', now);
    return failure.reason;
  }
  if (!isCurrent(sub, charge)) {
    // Paused or cancelled while the bank was asked (or paused and resumed: the resumed schedule's
    // next slot stays the next): the slot is given up, as a pause or a cancel gives up a retry.
    const status = sub.status === 'cancelled' ? 'cancelled' : 'dropped';
    await updateCharge(trx, charge.id, { status, last_error: failure.reason, updated_at: now });
    const counts = { failed_count: failedSub.failed_count };
    if (active) await advance(deps, trx, failedSub, movesOnFrom(sub, charge), now, counts);
    else await updateSubscription(trx, sub.id, { ...counts, updated_at: now });
    return failure.reason;
  }

  const schedule = scheduleOf(sub);
  const retryAt = retryAfterFailure(schedule, charge.slot, charge.attempts);
  const failed = {
    id: sub.id,
    user_id: sub.user_id,
    merchant_identifier: sub.merchant_identifier,
    last_payment_id: payment.id,
    last_error: failure.reason,
    attempts: charge.attempts,
    charge_at: iso(charge.charge_at),
    updated_at: iso(now),
  };
  if (retryAt !== null) {
    await updateCharge(trx, charge.id, {
      status: 'retrying',
      last_error: failure.reason,
      next_attempt_at: retryAt,
      updated_at: now,
    });
    await updateSubscription(trx, sub.id, {
      failed_count: failedSub.failed_count,
      next_charge_at: retryAt,
      updated_at: now,
    });
    await emitEvent(
      trx,
      scopeOf(sub),
      'subscription.charge_failed',
      sub.id,
      { ...failed, next_attempt_at: iso(retryAt) },
      now,
    );
    await noticeChargeFailed(trx, sub, payment, charge.charge_at, retryAt, now);
    await scheduleCharge(trx, deps, sub, retryAt);
    return failure.reason;
  }
  await updateCharge(trx, charge.id, { status: 'skipped', last_error: failure.reason, updated_at: now });
  await emitEvent(trx, scopeOf(sub), 'subscription.charge_failed', sub.id, failed, now);
  await noticeChargeFailed(trx, sub, payment, charge.charge_at, null, now);
  const nextAt = await advance(deps, trx, failedSub, charge.slot, now, {
    failed_count: failedSub.failed_count,
    skipped_count: sub.skipped_count + 1,
  });
  await emitEvent(
    trx,
    scopeOf(sub),
    'subscription.charge_skipped',
    sub.id,
    {
      id: sub.id,
      user_id: sub.user_id,
      merchant_identifier: sub.merchant_identifier,
      attempts: charge.attempts,
      skipped_charge_at: iso(charge.charge_at),
      next_charge_at: nextAt === null ? null : iso(nextAt),
      updated_at: iso(now),
    },
    now,
  );
  return failure.reason;
}

/** Charges one subscription's due slot (or retry): the handler of the `subscription.charge` job. */
export async function chargeDue(
  deps: Deps,
  subscriptionId: string,
  context: Pick<JobContext, 'clock' | 'db' | 'finishIn'>,
): Promise<JobResult> {
  const { clock, db, finishIn } = context;
  const claimedAt = clock.now();
  const claimed = await transact(db, (trx) => claim(deps, trx, subscriptionId, claimedAt, finishIn));
  if ('done' in claimed) return claimed.done;
  const result = await submit(deps, db, claimed, clock.now());
  return transact(db, (trx) => record(deps, trx, claimed, result, clock.now(), finishIn));
}

export function chargeSubscriptionJob(deps: Deps): JobHandler {
  return async (payload: { subscription_id: string }, context) => chargeDue(deps, payload.subscription_id, context);
}

/**
 * At start, in a process that runs workers: every charge handed to a bank and not yet recorded has
 * its subscription's job, which follows it to its end whatever the subscription's status, so a
 * payment the bank took is counted even if the charge lost its job (a pause or cancel by an older
 * version dropped it). One that is no longer its subscription's latest charge cannot be followed by
 * the job (it reads the latest): it is logged for the operator.
 */
export async function followChargesLeftInFlight(deps: Deps): Promise<void> {
  for (const charge of await chargesInFlight(deps.db)) {
    const sub = { id: charge.subscription_id, user_id: charge.user_id, mode: charge.mode };
    if (charge.slot_date !== charge.latest) {
      deps.log.error(
        { subscription_id: sub.id, slot_date: charge.slot_date },
        'a charge left in flight behind a later one is not followed: its payment stays unconfirmed; ask the bank how it ended',
      );
      continue;
    }
    await deps.store.transaction((trx) => queueChargeUnlessQueued(trx, deps, sub));
  }
}
