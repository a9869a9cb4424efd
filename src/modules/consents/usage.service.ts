import type { Kysely } from 'kysely';
import type { Database } from '../../store/tables.ts';
import type { PaymentRow } from '../payments/payments.service.ts';
import { countReservedPayment, shiftUsage, type ConsentRow } from './consents.repo.ts';
import { sumPaymentsOfConsent } from '../payments/payments.service.ts';
import { COUNTED_STATUSES } from './consents.rules.ts';
import { countedChange, periodUsageOf, totalUsageOf } from './consents.rules.ts';
import type { UsageAggregate, UsageTotals, Window } from './limits.ts';

// A consent's usage lives in counters on its row, so a limit check reads that row instead of
// summing every payment the consent ever made. The counters stay exact because every change to
// what counts goes through this file, in the transaction that makes the change:
// - reserving an execution counts the new in-flight payment (countReservation), under the consent lock;
// - recording an execution's outcome un-counts it when it failed (followStatusChange).
// Payments of a consent change status nowhere else: they are created only by an execution, and
// the payments module's sweeper and reconciler are only ever enqueued for checkout payments.

type Db = Kysely<Database>;

/**
 * Usage for the calendar `window`: totals from the counters; the period from the counters when
 * they hold this window, otherwise summed from that window's payments (once per new window, as
 * the next reservation stores it). `reserving` is the payment being reserved, written already but
 * not counted yet: the sum leaves it out, as the counters do.
 */
export async function usageOf(
  db: Db,
  consent: ConsentRow,
  window: Window,
  reserving?: string,
): Promise<UsageAggregate> {
  const total = totalUsageOf(consent);
  const period =
    periodUsageOf(consent, window) ?? (await sumPaymentsOfConsent(db, consent.id, window, COUNTED_STATUSES, reserving));
  return { total, period };
}

/**
 * Counts a payment reserved in `window`, in the reserving transaction with the consent locked;
 * `periodBefore` is the window's usage read under that lock. The counters then hold this window.
 */
export async function countReservation(
  trx: Db,
  consentId: string,
  amountCents: number,
  window: Window,
  periodBefore: UsageTotals,
): Promise<void> {
  await countReservedPayment(trx, consentId, amountCents, window, periodBefore);
}

/**
 * Keeps the counters in step with a payment moving from its current status to `to`, in the
 * transaction that moves it. Nothing for payments outside recurring consents.
 */
export async function followStatusChange(
  trx: Db,
  payment: Pick<PaymentRow, 'recurring_consent_id' | 'status' | 'amount_cents' | 'created_at'>,
  to: string,
): Promise<void> {
  if (!payment.recurring_consent_id) return;
  const change = countedChange(payment.status, to);
  if (change !== 0) await shiftUsage(trx, payment.recurring_consent_id, payment, change);
}
