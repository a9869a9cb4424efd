import { localIsoWithOffset } from '../../shared/zone.ts';
import type { PaymentObject } from '../payments/payments.present.ts';
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

export type HistoryStep = { status: string; at: string; eventId: string };

/** A payment's statuses in order, read from the events sent about it (payment.created, then each status_updated). */
export function statusHistory(events: EventEnvelope[]): HistoryStep[] {
  return events
    .filter((e) => e.type === 'payment.created' || e.type === 'payment.status_updated')
    .map((e) => ({ status: String((e.data as { status: string }).status), at: e.created_at, eventId: e.id }))
    .sort((a, b) => (a.at < b.at ? -1 : a.at > b.at ? 1 : a.eventId < b.eventId ? -1 : 1));
}
