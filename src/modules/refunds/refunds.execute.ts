import { backoffDelayMs, type Backoff } from '../../jobs/backoff.ts';
import { recordAudit } from '../audit/audit.service.ts';
import type { JobHandler } from '../../jobs/worker.ts';
import type { Deps } from '../context.ts';
import { failureReasonOf } from '../consents/execute.service.ts';
import { payerAccountOfPayment } from '../payments/payments.service.ts';
import { connectorFor } from '../payments/payments.banks.ts';
import { followNamedPayment, mayResendUnderKey } from '../banks/bank-connector.ts';
import { submitUnderConsent } from '../banks/consent-tokens.ts';
import { endAuthorityAtBank, findAuthorityById, readyAuthority, type ReadyAuthority } from './refunds.authority.ts';
import { noticeRefundArrived } from './refunds.notices.ts';
import * as repo from './refunds.repo.ts';
import type { ActionReason } from './refunds.rules.ts';
import { EXECUTE_REFUND_JOB, setRefundStatus } from './refunds.service.ts';
import type { Clock } from '../../shared/time.ts';
import type { Db } from '../../store/db.ts';
import type { RefundRow } from './refunds.tables.ts';

// Carries a pending refund out at the merchant's bank (docs/refunds.md): the payer's account (kept
// for the payment, or read from the payer's bank now), then a payment under the merchant's refund
// authority to it, with the refund's id as the bank's x-idempotency-key. The first sending is
// recorded before the call: an answer that is unknown (a timeout, a crash) is never followed by a
// fresh payment, only by the same key under the same authority, even one ended since, and the bank
// answers with the one payment it holds for it. One the bank has taken but not settled is asked
// about until it has.
//
// The job runs on the refund's clock (real time live, the merchant's test clock in test mode): every
// time the refund records, and every time the bank is told, is that clock's, as for payments. Only
// when to run again is real time, as every job's due time is.

/** 10 s doubling to 10 minutes. */
const REFUND_BACKOFF: Backoff = { baseMs: 10_000, maxMs: 10 * 60_000, jitter: false };

type Step = { retryAt: number; error: string } | undefined;

export function executeRefundJob(deps: Deps): JobHandler {
  return async (payload: { refund_id: string }, { job, clock }): Promise<Step> => {
    const refund = await repo.findRefundById(deps.db, payload.refund_id);
    if (refund?.status !== 'pending') return;
    const retry = (error: string): Step => ({
      retryAt: deps.clock.now() + backoffDelayMs(job.attempts, REFUND_BACKOFF),
      error,
    });

    // One the bank already holds is only followed there, whatever its authority is now.
    if (refund.bank_payment_id) return followAtBank(deps, clock, refund, refund.bank_payment_id, retry);

    // Sent before, it may be at the bank: only the same key under the same authority may ask.
    const sentBefore = refund.submitted_at !== null;
    const payer = await payerAccountOfPayment(deps, refund.payment_id);
    if ('retry' in payer) return retry(`the payer's bank: ${payer.retry}`);
    if ('refused' in payer)
      return requireAction(deps, clock, refund, sentBefore ? 'bank_outcome_unknown' : 'payer_account_unknown');

    const authority = refund.authority_id ? await findAuthorityById(deps.db, refund.authority_id) : undefined;
    if (sentBefore && !mayResendUnderKey(refund.submitted_at!, clock.now()))
      return requireAction(deps, clock, refund, 'bank_outcome_unknown');
    if (!authority || (!sentBefore && authority.status !== 'active'))
      return requireAction(deps, clock, refund, 'no_refund_authority');
    let ready: ReadyAuthority;
    try {
      ready = await readyAuthority(deps, authority, clock);
    } catch (error) {
      return retry((error as Error).message);
    }
    const connector = connectorFor(deps, authority.bank_id, authority.mode);
    if (!connector) return retry('the merchant’s bank is not connected');
    if (!sentBefore && !(await markSubmitted(deps, clock, refund.id))) return;

    // Under the authority's token, renewed first when it is known to expire, and once on a 401
    // (the same body and key again); a renewal the bank refuses is the authority ended at the bank.
    const result = await submitUnderConsent(deps, connector, ready.token, {
      trace: { refund_id: refund.id, payment_id: refund.payment_id },
      consentId: ready.authority.bank_consent_id!,
      amountCents: refund.settled_cents,
      creditor: { name: (payer.found.name ?? 'Payer').slice(0, 70), accountNumber: payer.found.identification },
      remittance: { particulars: refund.particulars, code: refund.code, reference: refund.reference },
      idempotencyKey: refund.id,
      at: clock.now(),
    });
    if (result.ok) {
      if (result.outcome === 'successful') {
        await record(deps, clock, refund.id, { status: 'successful', bank_payment_id: result.paymentId });
        return;
      }
      if (result.outcome === 'failed') {
        await record(deps, clock, refund.id, {
          status: 'failed',
          bank_payment_id: result.paymentId,
          failure_reason: result.failureReason ?? 'declined',
        });
        return;
      }
      await record(deps, clock, refund.id, { status: 'pending', bank_payment_id: result.paymentId });
      return retry('taken by the bank, not settled yet');
    }
    if (result.unknown) return retry(result.message);
    // A consent whose access the bank no longer renews is as good as ended for refunds: the
    // merchant approves a new authority either way (docs/refunds.md).
    if (
      result.reason === 'consent_revoked' ||
      result.reason === 'consent_expired' ||
      result.reason === 'consent_token_refused'
    ) {
      await deps.store.transaction((trx) => endAuthorityAtBank(trx, authority.id, clock.now()));
      // A bank answers a key it holds with its payment, but one that looks at the consent first
      // would refuse it all the same: the merchant checks its account rather than pay twice.
      return requireAction(deps, clock, refund, sentBefore ? 'bank_outcome_unknown' : 'no_refund_authority');
    }
    // Sent before, a refusal may be of the repeat of a refund the bank made (a bank that checks
    // its consent or limits before its keys): asked again until it answers, or 23 hours pass.
    if (sentBefore) return retry(`refused when sent again: ${result.message}`);
    await record(deps, clock, refund.id, { status: 'failed', failure_reason: failureReasonOf(result) });
  };
}

/**
 * A refund the bank has taken (it gave a payment id) but not settled: asks the bank how it ended,
 * until it has. The payment was made under the authority as it was then, and the bank settles it
 * whether or not the authority has since been turned off or replaced, so the authority's state is
 * not looked at: moving it to requires_action would have the merchant pay it again by hand. The
 * bank's status is asked as the service's client, without the authority's consent token.
 */
async function followAtBank(
  deps: Deps,
  clock: Clock,
  refund: RefundRow,
  bankPaymentId: string,
  retry: (error: string) => Step,
): Promise<Step> {
  // Its authority's row stays when the authority ends: it names the bank the payment is at.
  const authority = refund.authority_id ? await findAuthorityById(deps.db, refund.authority_id) : undefined;
  const connector = authority && connectorFor(deps, authority.bank_id, authority.mode);
  if (!connector) return retry('the merchant’s bank is not connected');
  const status = await followNamedPayment(
    connector,
    { paymentId: bankPaymentId, at: clock.now(), trace: { refund_id: refund.id } },
    deps.log,
  );
  if (!status.ok) return retry(status.message);
  if (status.outcome === 'pending') return retry('still pending at the bank');
  await record(
    deps,
    clock,
    refund.id,
    status.outcome === 'successful'
      ? { status: 'successful' }
      : { status: 'failed', failure_reason: status.failureReason ?? 'rejected_by_bank' },
  );
  return undefined;
}

/** Records the first sending, before the bank is called; false when the refund is no longer pending. */
async function markSubmitted(deps: Deps, clock: Clock, refundId: string): Promise<boolean> {
  return repo.updateRefundIfPending(deps.db, refundId, { submitted_at: clock.now() });
}

type Outcome = {
  status: 'successful' | 'failed' | 'pending';
  bank_payment_id?: string;
  failure_reason?: string;
};

/** Records what the bank said, once: under the refund's lock, and only while it is still pending. */
async function record(deps: Deps, clock: Clock, refundId: string, outcome: Outcome): Promise<void> {
  await deps.store.transaction(async (trx) => {
    const refund = await repo.lockRefund(trx, refundId);
    if (refund?.status !== 'pending') return;
    const now = clock.now();
    const accepted = outcome.status !== 'failed';
    const after = await setRefundStatus(
      trx,
      deps,
      refund,
      {
        status: outcome.status,
        ...(outcome.bank_payment_id !== undefined && { bank_payment_id: outcome.bank_payment_id }),
        ...(outcome.failure_reason !== undefined && { failure_reason: outcome.failure_reason }),
        ...(accepted && refund.sent_at === null && { sent_at: now }),
      },
      now,
    );
    if (outcome.status === 'successful') await noticeRefundArrived(trx, deps, after, now);
    await auditPayout(trx, refund, outcome.status, now, { failure_reason: outcome.failure_reason ?? null });
  });
}

/** A payout's step, in the audit trail: the service moves the merchant's money. */
function auditPayout(trx: Db, refund: RefundRow, status: string, now: number, extra: Record<string, unknown> = {}) {
  return recordAudit(trx, {
    userId: refund.user_id,
    mode: refund.mode,
    actor: { kind: 'service', job: EXECUTE_REFUND_JOB },
    action: 'refund.execute',
    objectId: refund.id,
    summary: { status: { from: refund.status, to: status }, amount_cents: refund.amount_cents, ...extra },
    at: now,
  });
}

/** The merchant must pay it by hand: it stays counted against the payment, and no longer against the authority. */
async function requireAction(deps: Deps, clock: Clock, refund: RefundRow, reason: ActionReason): Promise<Step> {
  await deps.store.transaction(async (trx) => {
    const locked = await repo.lockRefund(trx, refund.id);
    if (locked?.status !== 'pending') return;
    const now = clock.now();
    await setRefundStatus(
      trx,
      deps,
      locked,
      { status: 'requires_action', action_reason: reason, authority_id: null },
      now,
    );
    await auditPayout(trx, locked, 'requires_action', now, { action_reason: reason });
  });
  return undefined;
}
