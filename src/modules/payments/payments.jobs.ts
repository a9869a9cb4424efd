import { backoffDelayMs, type Backoff } from '../../jobs/backoff.ts';
import type { JobHandler } from '../../jobs/worker.ts';
import { transact } from '../../store/store.ts';
import { followNamedPayment } from '../banks/bank-connector.ts';
import { connectorFor } from './payments.banks.ts';
import { findPaymentById, lockPayment, updatePaymentIfStatus } from './payments.repo.ts';
import { ABANDON_AFTER_MS, waitsForBankWord } from './payments.rules.ts';
import { finishPayment, RECONCILE_PAYMENT_JOB, submitOneOff } from './one-off.service.ts';
import { findRequestById } from '../requests/requests.service.ts';
import { payerAccountOfPayment, setPaymentStatus } from './payments.service.ts';
import { enqueue } from '../../jobs/queue.ts';
import type { Deps } from '../context.ts';
import { clockIdOf } from '../merchants/merchants.clock.ts';

const RECONCILE_BACKOFF: Backoff = { baseMs: 10_000, maxMs: 10 * 60_000, jitter: false };

/** Retry delays: 10 s, 20 s, 40 s … capped at 10 minutes. */
export function reconcileDelay(attempts: number): number {
  return backoffDelayMs(attempts, RECONCILE_BACKOFF);
}

/**
 * Sweeper: a payment still awaiting consent 30 minutes after it started was abandoned → cancelled.
 * One that was claimed for execution but never recorded (a crash mid-call) is unconfirmed instead,
 * and the reconciler asks the bank.
 */
export function sweepPaymentJob(deps: Deps): JobHandler {
  return async (payload: { payment_id: string }, { db, clock, finishIn }) => {
    const now = clock.now();
    return transact(db, async (trx) => {
      const payment = await lockPayment(trx, payload.payment_id);
      if (payment && payment.status === 'awaiting-consent') {
        const due = payment.created_at + ABANDON_AFTER_MS;
        if (due > now) return { retryAt: deps.clock.now() + (due - now) };
        if (payment.submitted_at === null) {
          await setPaymentStatus(trx, payment, 'cancelled', now, {
            failure_reason: 'abandoned: not authorised at the bank within 30 minutes',
          });
        } else {
          await setPaymentStatus(trx, payment, 'unconfirmed', now);
          await enqueue(
            trx,
            {
              kind: RECONCILE_PAYMENT_JOB,
              runAt: deps.clock.now(),
              clockId: clockIdOf(payment),
              payload: { payment_id: payment.id },
              dedupeKey: `${RECONCILE_PAYMENT_JOB}:${payment.id}`,
            },
            deps.clock.now(),
          );
        }
      }
      await finishIn(trx);
    });
  };
}

/** Reconciler: asks the bank about an unconfirmed payment until it is successful or failed. */
export function reconcilePaymentJob(deps: Deps): JobHandler {
  return async (payload: { payment_id: string }, { clock, job }) => {
    const payment = await findPaymentById(deps.db, payload.payment_id);
    if (payment?.status !== 'unconfirmed') return;
    const connector = connectorFor(deps, payment.bank_id, payment.mode);
    const retry = (error: string) => ({ retryAt: deps.clock.now() + reconcileDelay(job.attempts), error });
    if (!connector) return retry('bank not connected');
    if (waitsForBankWord(payment, clock.now())) {
      // The bank may now take its key for a new payment: it stays unconfirmed, holding its
      // request, until someone has the bank's word (docs/configuration.md, "Payments the bank never answered").
      deps.log.error(
        { payment_id: payment.id, request_id: payment.request_id },
        'a payment the bank never named for 23 hours is not asked about again: it stays unconfirmed',
      );
      return;
    }
    if (!payment.bank_payment_id) {
      if (!payment.bank_consent_id) return retry('no bank consent recorded');
      // The process that submitted it died before recording the bank's answer. The same
      // submission, under the same key, names the payment the bank made, or makes the one the
      // payer approved.
      if (payment.submission_token_sealed) {
        const request = await findRequestById(deps.db, payment.request_id);
        if (!request) return retry('the payment has no request');
        const submitted = await submitOneOff(deps, connector, payment, request, {
          consentId: payment.bank_consent_id,
          accessToken: deps.secrets.open(payment.submission_token_sealed),
          at: clock.now(),
        });
        if (submitted.ok) {
          if (submitted.outcome === 'pending') {
            await recordBankPaymentId(deps.db, payment.id, submitted.paymentId);
            return retry('still pending at the bank');
          }
          await finishPayment(
            deps,
            payment.id,
            submitted.outcome,
            clock.now(),
            submitted.outcome === 'failed'
              ? { bank_payment_id: submitted.paymentId, failure_reason: submitted.failureReason ?? 'rejected_by_bank' }
              : { bank_payment_id: submitted.paymentId },
          );
          return;
        }
        if (submitted.unknown) return retry(`submitted again: ${submitted.message}`);
      }
      // Refused, or submitted before tokens were kept: an unused consent means nothing was executed.
      const consent = await connector.getConsent({
        consentId: payment.bank_consent_id,
        kind: 'single',
        at: clock.now(),
        trace: { payment_id: payment.id },
      });
      if (!consent.ok) return retry(consent.message);
      if (consent.status === 'Consumed') return retry('consent consumed; payment id unknown');
      await finishPayment(deps, payment.id, 'failed', clock.now(), {
        failure_reason: 'not_executed: the bank did not take the payment',
      });
      return;
    }
    // `at`: the sandbox bank settles delayed payments by the caller's (test) clock.
    const status = await followNamedPayment(
      connector,
      { paymentId: payment.bank_payment_id, at: clock.now(), trace: { payment_id: payment.id } },
      deps.log,
    );
    if (!status.ok) return retry(status.message);
    if (status.outcome === 'pending') return retry('still pending at the bank');
    await finishPayment(
      deps,
      payment.id,
      status.outcome,
      clock.now(),
      status.outcome === 'failed' ? { failure_reason: status.failureReason ?? 'rejected_by_bank' } : {},
    );
  };
}

/** The bank has named an unconfirmed payment: its id is kept, and the token it was submitted with is no longer needed. */
async function recordBankPaymentId(db: Deps['db'], paymentId: string, bankPaymentId: string): Promise<void> {
  await updatePaymentIfStatus(db, paymentId, 'unconfirmed', {
    bank_payment_id: bankPaymentId,
    submission_token_sealed: null,
  });
}

/**
 * The payer's account of a successful payment, as the bank releases it (GET debtor-account), kept
 * sealed for refunds (payerAccountOfPayment). A bank that refuses is left alone; one that cannot be
 * reached is asked again.
 */
export function payerAccountJob(deps: Deps): JobHandler {
  return async (payload: { payment_id: string }, { job }) => {
    const found = await payerAccountOfPayment(deps, payload.payment_id);
    if ('retry' in found) return { retryAt: deps.clock.now() + reconcileDelay(job.attempts), error: found.retry };
  };
}
