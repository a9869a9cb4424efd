import { centsToDecimal } from '../../shared/money.ts';
import { localIsoWithOffset } from '../../shared/zone.ts';
import type { PaymentObject } from '../payments/payments.present.ts';
import type { RefundRow } from '../refunds/refunds.tables.ts';
import { certainlyUnpaid } from '../refunds/refunds.rules.ts';
import type { EventEnvelope } from '../events/events.builders.ts';

// Pure shaping of what the pages and the CSV show, kept apart from I/O so it can be tested alone.

export const CSV_HEADER = [
  'id',
  'date',
  'amount',
  'requested_amount',
  'status',
  'particulars',
  'code',
  'reference',
  'request',
  'merchant_identifier',
  'payer_email',
];

/**
 * A cell a spreadsheet would run as a formula (=, +, -, @, tab, carriage return first) is written
 * with a leading apostrophe, so text a payer typed can never become one.
 */
export function spreadsheetSafe(value: string): string {
  return /^[=+\-@\t\r]/.test(value) ? `'${value}` : value;
}

/**
 * One CSV row per payment, in the API's values: amounts "12.50" without the currency; times local,
 * as the pages show them, with their offset (2026-11-27T19:01:00+13:00), so a spreadsheet sorts
 * them and nobody reads UTC as local.
 */
export function csvRowsOfPayments(payments: PaymentObject[], zone: string): string[][] {
  return payments.map((p) =>
    [
      p.id,
      localIsoWithOffset(Date.parse(p.created_at), zone),
      p.amount.value.replace(/ NZD$/, ''),
      p.requested_amount.value.replace(/ NZD$/, ''),
      p.status,
      p.pcr.particulars,
      p.pcr.code,
      p.pcr.reference,
      p.request_id,
      p.merchant_identifier ?? '',
      p.cust_info?.email ?? '',
    ].map(spreadsheetSafe),
  );
}

/** The refunds export's columns. */
export const REFUND_CSV_HEADER = [
  'refund_id',
  'payment_id',
  'created',
  'amount',
  'status',
  'reason',
  'failure_reason',
  'action_reason',
  'completed',
];

/** One CSV row per refund: the amount as "5.00" (of the payment's requested amount), times local with their offset. */
export function csvRowsOfRefunds(refunds: RefundRow[], zone: string): string[][] {
  return refunds.map((r) =>
    [
      r.id,
      r.payment_id,
      localIsoWithOffset(r.created_at, zone),
      centsToDecimal(r.amount_cents),
      r.status,
      r.reason ?? '',
      r.failure_reason ?? '',
      r.action_reason ?? '',
      r.completed_at === null ? '' : localIsoWithOffset(r.completed_at, zone),
    ].map(spreadsheetSafe),
  );
}

/** The columns of the batch of refunds to pay by hand, as a bank's bulk-payment upload reads them. */
export const MANUAL_BATCH_HEADER = [
  'Payee account',
  'Payee name',
  'Amount',
  'Particulars',
  'Code',
  'Reference',
  'Refund id',
];

/** One row per refund whose payer's account is known (the others cannot be paid from a file): amounts "12.50". */
export function batchRowsOf(
  items: Array<{ refund: RefundRow; payee: { accountNumber: string; name: string | null } | null }>,
): string[][] {
  return items.flatMap(({ refund, payee }) =>
    payee && certainlyUnpaid(refund)
      ? [
          [
            payee.accountNumber,
            payee.name ?? '',
            centsToDecimal(refund.amount_cents),
            refund.particulars,
            refund.code,
            refund.reference,
            refund.id,
          ].map(spreadsheetSafe),
        ]
      : [],
  );
}

export type HistoryStep = { status: string; at: string; eventId: string };

/** A payment's statuses in order, read from the events sent about it (payment.created, then each status_updated). */
export function statusHistory(events: EventEnvelope[]): HistoryStep[] {
  return events
    .filter((e) => e.type === 'payment.created' || e.type === 'payment.status_updated')
    .map((e) => ({ status: String((e.data as { status: string }).status), at: e.created_at, eventId: e.id }))
    .sort((a, b) => (a.at < b.at ? -1 : a.at > b.at ? 1 : a.eventId < b.eventId ? -1 : 1));
}

const PAGE_OF_KIND: Record<string, string> = {
  request: 'requests',
  payment: 'payments',
  customer: 'customers',
  subscription: 'subscriptions',
  recurring: 'recurring-consents',
  webhook: 'webhooks',
  refund: 'refunds',
};

/** The dashboard page of the object an event is about (`payments/payment_…`), by its id's kind; null for a kind with no page. */
export function objectPathOf(id: unknown): string | null {
  const match = typeof id === 'string' ? /^([a-z]+)_[0-9A-Z]{26}$/.exec(id) : null;
  const section = match ? PAGE_OF_KIND[match[1]] : undefined;
  return section ? `${section}/${id}` : null;
}

/** What a delivery state reads as in a badge. */
export function deliveryStateLabel(state: string): string {
  return state === 'no_endpoint' ? 'no endpoint' : state;
}

/** An endpoint's failed attempts over a window: "3 of 12 attempts failed (25%)", "none of 12 attempts failed", "no attempts". */
export function failureRateText(failed: number, attempts: number): string {
  if (attempts === 0) return 'no attempts';
  const of = `of ${attempts} attempt${attempts === 1 ? '' : 's'} failed`;
  if (failed === 0) return `none ${of}`;
  const percent = (failed / attempts) * 100;
  const shown = percent < 1 ? '<1' : String(Math.round(percent));
  return `${failed} ${of} (${shown}%)`;
}

/** How an endpoint's newest attempted delivery stands, as a badge reads: the delivery's status in the dashboard's words. */
export function lastDeliveryLabel(status: 'pending' | 'succeeded' | 'failed' | 'cancelled'): string {
  return status === 'succeeded' ? 'delivered' : status === 'pending' ? 'retrying' : status;
}
