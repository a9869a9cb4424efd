import { AppError, invalidParam, invalidState } from '../../shared/errors.ts';
import { enqueue } from '../../jobs/queue.ts';
import { recordCustInfo, recordCustomerOfPayment, type PayerDetails } from '../customers/customers.service.ts';
import {
  holdRequestToPay,
  markRequestPaid,
  notePaymentAtBank,
  releasePaymentAtBank,
} from '../requests/requests.service.ts';
import { bankReturnUrl, connectorFor, creditorOf, remittanceOf } from './payments.banks.ts';
import { findPaymentById, findPaymentByState, lockPayment, updatePayment } from './payments.repo.ts';
import {
  ABANDON_AFTER_MS,
  effectiveStatus,
  failsAtCallback,
  isFinal,
  missingDetails,
  paymentAmount,
  waitsForBankWord,
  type BankWord,
  type FinalStatus,
} from './payments.rules.ts';
import {
  auditSettledByHand,
  createPaymentRow,
  extrasOfWord,
  newAuthState,
  setPaymentStatus,
} from './payments.service.ts';
import type { AuditBy } from '../audit/audit.service.ts';
import type { Db } from '../../store/db.ts';
import { clockIdOf, clockOf } from '../merchants/merchants.clock.ts';
import type { Deps } from '../context.ts';
import type { RequestRow } from '../requests/requests.tables.ts';
import type { PaymentRow } from './payments.tables.ts';
import type { BankConnector } from '../banks/bank-connector.ts';

// One-off payments at the hosted page (and the test helper, which walks the same path):
// pick a bank → payment awaiting-consent + single consent at the bank → payer authorises there →
// back at /pay/return: exchange the code, claim the request, execute, record the outcome.
// Bank calls never happen inside a transaction; every state change and its event share one.

export const SWEEP_PAYMENT_JOB = 'payment.sweep';
export const RECONCILE_PAYMENT_JOB = 'payment.reconcile';

declare module '../../jobs/queue.ts' {
  interface JobPayloads {
    'payment.sweep': { payment_id: string };
    'payment.reconcile': { payment_id: string };
  }
}

export type StartPaymentInput = {
  /** The payer's amount for dynamic requests; ignored for fixed ones. */
  amountCents: number | null;
  bankId: string;
  details: PayerDetails | null;
  channel: 'page' | 'embed' | 'api';
};

export type StartPaymentResult =
  | { ok: true; payment: PaymentRow; redirectUrl: string }
  | { ok: false; payment: PaymentRow; message: string };

/** Why a request cannot take a new payment now, or null when it can. */
export function notPayable(request: RequestRow, now: number): AppError | null {
  const status = effectiveStatus(request, now);
  if (status !== 'active') return invalidState('request', status, 'pay');
  return null;
}

export async function startOneOffPayment(
  deps: Deps,
  request: RequestRow,
  input: StartPaymentInput,
): Promise<StartPaymentResult> {
  if (request.kind !== 'payment') throw invalidState('request', request.kind, 'pay a one-off payment on');
  const amount = paymentAmount(
    { fixedCents: request.amount_cents, minCents: request.min_payment_cents, maxCents: request.max_payment_cents },
    input.amountCents,
  );
  if (!amount.ok) throw invalidParam('amount', amount.message);
  const missing = missingDetails(request, input.details);
  if (missing.length > 0)
    throw new AppError(
      `bad_request.missing_param.cust_info.${missing[0]}`,
      `cust_info.${missing[0]} is required by this request`,
      { field: `cust_info.${missing[0]}` },
    );
  const connector = connectorFor(deps, input.bankId, request.mode);
  if (!connector) throw invalidParam('bank', 'Choose one of the banks offered for this request');
  const clock = await clockOf(deps, request);

  const payment = await deps.store.transaction(async (trx) => {
    const locked = (await holdRequestToPay(trx, request.id))!;
    const now = clock.now();
    const problem = notPayable(locked, now);
    if (problem) throw problem;
    const row = await createPaymentRow(
      trx,
      {
        request: locked,
        amountCents: amount.cents,
        bankId: input.bankId,
        channel: input.channel,
        authState: newAuthState(),
      },
      now,
    );
    if (input.details) await recordCustInfo(trx, { userId: row.user_id, mode: row.mode }, row.id, input.details, now);
    await enqueue(
      trx,
      {
        kind: SWEEP_PAYMENT_JOB,
        runAt: deps.clock.now() + ABANDON_AFTER_MS,
        clockId: clockIdOf(row),
        payload: { payment_id: row.id },
        dedupeKey: `${SWEEP_PAYMENT_JOB}:${row.id}`,
      },
      deps.clock.now(),
    );
    return row;
  });

  const consent = await connector.createSingleConsent({
    trace: { payment_id: payment.id },
    amountCents: payment.settled_cents,
    creditor: await creditorOf(deps.db, request),
    remittance: remittanceOf(payment),
    idempotencyKey: payment.id,
    at: clock.now(),
  });
  if (!consent.ok) {
    const failed = await finishPayment(deps, payment.id, 'failed', clock.now(), {
      failure_reason: `bank_unavailable: ${consent.message}`,
    });
    return { ok: false, payment: failed ?? payment, message: consent.message };
  }
  await updatePayment(deps.db, payment.id, { bank_consent_id: consent.consentId });
  const redirectUrl = connector.authoriseUrl({
    consentId: consent.consentId,
    redirectUri: bankReturnUrl(deps),
    state: payment.auth_state!,
  });
  return { ok: true, payment: { ...payment, bank_consent_id: consent.consentId }, redirectUrl };
}

export type ReturnInput = { state: string; code?: string | null; error?: string | null };

/**
 * The payer is back from the bank. Returns the payment in its new (or, on a repeated return,
 * current) state; null when the state belongs to no payment.
 */
export async function completeOneOffReturn(deps: Deps, input: ReturnInput): Promise<PaymentRow | null> {
  const payment = await findPaymentByState(deps.db, input.state);
  if (!payment) return null;
  if (payment.status !== 'awaiting-consent' || payment.submitted_at !== null) return payment;
  const clock = await clockOf(deps, payment);
  // What this return records, or the payment as it stands when another return got there first.
  const finish = async (
    status: FinalStatus,
    extra: Parameters<typeof setPaymentStatus>[4] = {},
    only: FinishOnly = 'any',
  ) =>
    (await finishPayment(deps, payment.id, status, clock.now(), extra, only)) ??
    (await findPaymentById(deps.db, payment.id)) ??
    payment;
  // Before this return claims the payment, a second return of the same state (a reload while the
  // bank is slow) may have claimed it and be paying it: a refusal here (its code already spent)
  // must not fail a payment the bank may be making.
  const refuse = (status: FinalStatus, failure_reason: string) => finish(status, { failure_reason }, 'unclaimed');

  if (input.error || !input.code)
    return refuse('cancelled', `declined_at_bank${input.error ? `: ${input.error.slice(0, 100)}` : ''}`);
  const connector = connectorFor(deps, payment.bank_id, payment.mode);
  if (!connector) return refuse('failed', 'bank_unavailable: the bank is no longer connected');
  const token = await connector.exchangeCode({ code: input.code, redirectUri: bankReturnUrl(deps) });
  if (!token.ok) return refuse('failed', `authorisation_failed: ${token.message}`);
  if (payment.bank_consent_id && token.consentId !== payment.bank_consent_id) {
    return refuse('failed', 'authorisation_failed: the bank returned a different consent');
  }
  if (failsAtCallback(payment.mode as 'live' | 'test', payment.amount_cents)) {
    return refuse('failed', 'test_amount_67_80: test-mode payments of 67.80 NZD fail at the callback');
  }

  const claim = await claimExecution(deps, payment.id, clock.now(), {
    bank_consent_id: token.consentId,
    submission_token_sealed: deps.secrets.seal(token.accessToken),
  });
  if (claim.kind === 'gone') return claim.payment ?? payment;
  if (claim.kind === 'refused') return refuse('cancelled', claim.reason);

  const submitted = await submitOneOff(deps, connector, payment, claim.request, {
    consentId: token.consentId,
    accessToken: token.accessToken,
    at: clock.now(),
  });
  if (submitted.ok) {
    if (submitted.outcome === 'successful') return finish('successful', { bank_payment_id: submitted.paymentId });
    if (submitted.outcome === 'failed')
      return finish('failed', {
        bank_payment_id: submitted.paymentId,
        failure_reason: submitted.failureReason ?? 'rejected_by_bank',
      });
    return (await markUnconfirmed(deps, payment.id, clock.now(), submitted.paymentId)) ?? payment;
  }
  if (submitted.unknown) return (await markUnconfirmed(deps, payment.id, clock.now(), null)) ?? payment;
  return finish('failed', { failure_reason: `${submitted.reason}: ${submitted.message}` });
}

/**
 * Submits the payment the payer approved, with its id as the bank's idempotency key: submitted
 * again after a lost answer, the bank names the payment it already made rather than make another.
 */
export async function submitOneOff(
  deps: Deps,
  connector: BankConnector,
  payment: PaymentRow,
  request: RequestRow,
  authority: { consentId: string; accessToken: string; at: number },
) {
  return connector.submitPayment({
    trace: { payment_id: payment.id },
    consentId: authority.consentId,
    accessToken: authority.accessToken,
    amountCents: payment.settled_cents,
    creditor: await creditorOf(deps.db, request),
    remittance: remittanceOf(payment),
    idempotencyKey: payment.id,
    at: authority.at,
  });
}

type Claim =
  | { kind: 'claimed'; request: RequestRow }
  | { kind: 'refused'; reason: string }
  /** Claimed or settled by another return; null when the merchant's test data was deleted meanwhile. */
  | { kind: 'gone'; payment: PaymentRow | null };

/**
 * Claims the right to execute, atomically: the request row is locked, so of two payers approving
 * a single request at once exactly one claims it; the other is refused and never executed.
 */
async function claimExecution(
  deps: Deps,
  paymentId: string,
  now: number,
  submission: Pick<PaymentRow, 'bank_consent_id' | 'submission_token_sealed'>,
): Promise<Claim> {
  return deps.store.transaction(async (trx) => {
    // Lock order everywhere: the payment, then its request.
    const payment = await lockPayment(trx, paymentId);
    // The merchant's test data, deleted while the payer was at the bank: nothing to pay.
    const request = payment && (await holdRequestToPay(trx, payment.request_id));
    if (!payment || !request) return { kind: 'gone', payment: payment ?? null };
    if (payment.status !== 'awaiting-consent' || payment.submitted_at !== null) return { kind: 'gone', payment };
    const status = effectiveStatus(request, now);
    if (status !== 'active')
      return { kind: 'refused', reason: status === 'paid' ? 'request_already_paid' : `request_${status}` };
    // A single request's payment already at the bank holds it (notePaymentAtBank); a successful one made it paid.
    if (request.type === 'single' && request.payment_at_bank !== null) {
      return { kind: 'refused', reason: 'request_already_paid' };
    }
    // The token is kept until the bank names the payment: submitted again after a crash, under the
    // same key, the bank says what it did (payments.jobs.ts, the reconciler).
    await updatePayment(trx, payment.id, { submitted_at: now, ...submission });
    if (request.type === 'single') await notePaymentAtBank(trx, request.id, payment.id);
    return { kind: 'claimed', request };
  });
}

/** `unclaimed`: only a payment no return has claimed for the bank yet (submitted_at null). */
export type FinishOnly = 'any' | 'unclaimed';

/**
 * Records a payment's outcome: its status and event; on success a single request becomes paid
 * and the payer's details update the merchant's customer. A payment already final, or claimed
 * when `only` is 'unclaimed', is left alone (returns null).
 */
export async function finishPayment(
  deps: Deps,
  paymentId: string,
  status: FinalStatus,
  now: number,
  extra: Parameters<typeof setPaymentStatus>[4] = {},
  only: FinishOnly = 'any',
): Promise<PaymentRow | null> {
  return deps.store.transaction(async (trx) => {
    const payment = await lockPayment(trx, paymentId);
    // Gone (the merchant's test data, deleted while the bank was asked), final, or already so.
    if (!payment || isFinal(payment.status) || payment.status === status) return null;
    if (only === 'unclaimed' && payment.submitted_at !== null) return null;
    return finishLocked(trx, payment, status, now, extra);
  });
}

/** A payment's end, locked: its request paid or let go, and its customer recorded. */
async function finishLocked(
  trx: Db,
  payment: PaymentRow,
  status: FinalStatus,
  now: number,
  extra: Parameters<typeof setPaymentStatus>[4],
): Promise<PaymentRow> {
  // Claimed, it held its request at the bank (notePaymentAtBank): it lets go whatever the outcome.
  const claimed = payment.submitted_at !== null;
  const request = status === 'successful' || claimed ? await holdRequestToPay(trx, payment.request_id) : undefined;
  const updated = await setPaymentStatus(trx, payment, status, now, extra);
  if (status === 'successful') {
    if (request && request.type === 'single' && request.status === 'active' && request.kind === 'payment')
      await markRequestPaid(trx, request, now);
    // The request's own cust_info is the merchant's word: it replaces what the customer has.
    const given = request?.cust_info ? (JSON.parse(request.cust_info) as Partial<PayerDetails>) : null;
    await recordCustomerOfPayment(trx, { userId: payment.user_id, mode: payment.mode }, payment.id, now, given);
  } else if (request) {
    await releasePaymentAtBank(trx, request, payment.id);
  }
  return updated;
}

/**
 * The bank's word on a one-off payment it never named (waitsForBankWord), as an operator records
 * it: the payment ends as any does, and the audit trail names the operator. Null when the payment
 * is not waiting for it (any more).
 */
export async function settleOneOffByHand(
  deps: Pick<Deps, 'store'>,
  paymentId: string,
  word: BankWord,
  now: number,
  by: AuditBy,
): Promise<PaymentRow | null> {
  return deps.store.transaction(async (trx) => {
    const payment = await lockPayment(trx, paymentId);
    if (!payment || payment.recurring_consent_id || payment.subscription_id || !waitsForBankWord(payment, now))
      return null;
    const settled = await finishLocked(trx, payment, word.status, now, extrasOfWord(word));
    await auditSettledByHand(trx, payment, settled, now, by);
    return settled;
  });
}

/** The bank took the payment but has not confirmed it: unconfirmed, and the reconciler polls. */
async function markUnconfirmed(
  deps: Deps,
  paymentId: string,
  now: number,
  bankPaymentId: string | null,
): Promise<PaymentRow | null> {
  return deps.store.transaction(async (trx) => {
    const payment = await lockPayment(trx, paymentId);
    // Gone with the merchant's test data while the bank was asked: nothing to follow.
    if (payment?.status !== 'awaiting-consent') return payment ?? null;
    const updated = await setPaymentStatus(trx, payment, 'unconfirmed', now, { bank_payment_id: bankPaymentId });
    await enqueue(
      trx,
      {
        kind: RECONCILE_PAYMENT_JOB,
        runAt: deps.clock.now() + RECONCILE_FIRST_MS,
        clockId: clockIdOf(payment),
        payload: { payment_id: payment.id },
        dedupeKey: `${RECONCILE_PAYMENT_JOB}:${payment.id}`,
      },
      deps.clock.now(),
    );
    return updated;
  });
}

export const RECONCILE_FIRST_MS = 10_000;
