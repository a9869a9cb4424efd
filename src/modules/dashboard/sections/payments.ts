import { stringify } from 'csv-stringify/sync';
import { retrievePayment, searchPaymentsFor } from '../../payments/payments.service.ts';
import { PaymentStatus } from '../../payments/payments.rules.ts';
import { listEventsFor } from '../../events/events.service.ts';
import { refundsOfPayment } from '../../refunds/refunds.service.ts';
import { listReceiptsFor } from '../../receipts/receipts.service.ts';
import { dateFilterProblem, dayBound, localDay, text, oneOf, cursorOf } from '../dashboard.format.ts';
import { csvRowsOfPayments, statusHistory, CSV_HEADER } from '../dashboard.present.ts';
import type { Kit, Scope } from '../dashboard.kit.ts';
import { remainingOf } from './payment-refund.ts';
import { auditTrailOf } from './audit.ts';
import { payerEmailsOf } from './payer-emails.ts';

// Payments: a list with filters and search, a detail page with the statement lines, the status
// history, its refunds (and the way to make one) and the events sent, and a CSV export of the
// filtered list for reconciliation.

const hidden = { schema: { hide: true } };
const PAGE = 25;
/** The most rows one export holds; past it the page says to narrow the dates. */
export const CSV_MAX_ROWS = 50_000;

const filtersOf = (query: Record<string, unknown>) => ({
  status: oneOf(query.status, PaymentStatus),
  q: text(query.q, 200),
  // Read whole, not cut to a date's length: a longer value is no date, and the page says so.
  from: text(query.from, 40),
  to: text(query.to, 40),
  after: cursorOf('payment', query.after),
});

/** The date inputs as the filter form labels them, for the message about a date it cannot read. */
const DATE_LABELS = { from: 'Created from', to: 'Created to' };

export function registerPaymentPages(scope: Scope, kit: Kit): void {
  const searchOf = (filters: ReturnType<typeof filtersOf>) => ({
    status: filters.status || undefined,
    search: filters.q || undefined,
    createdFrom: dayBound(filters.from, kit.zone(), false),
    createdBefore: dayBound(filters.to, kit.zone(), true),
  });

  scope.get(
    '/dashboard/:mode/payments',
    hidden,
    kit.guard(
      async (request, reply, signed) => {
        const filters = filtersOf(request.query);
        const page = await searchPaymentsFor(signed.ctx, {
          ...searchOf(filters),
          starting_after: filters.after || undefined,
          limit: PAGE,
        });
        const next = page.has_more ? page.payments[page.payments.length - 1].id : null;
        return kit.render(reply, 200, 'payments', {
          title: 'Payments',
          ...kit.layoutOf(signed, 'payments'),
          filters,
          dateProblem: dateFilterProblem(filters, kit.zone(), DATE_LABELS),
          payments: page.payments,
          next,
          statuses: PaymentStatus,
        });
      },
      { permission: 'read' },
    ),
  );

  scope.get(
    '/dashboard/:mode/payments/export.csv',
    hidden,
    kit.guard(
      async (request, reply, signed) => {
        const filters = filtersOf(request.query);
        const page = await searchPaymentsFor(signed.ctx, { ...searchOf(filters), limit: CSV_MAX_ROWS });
        if (page.has_more) {
          return kit.message(
            reply,
            413,
            'Too many payments for one file',
            `The filters match more than ${CSV_MAX_ROWS} payments, the most one file holds. Narrow the dates and export in parts.`,
            signed,
            'payments',
          );
        }
        const csv = stringify([CSV_HEADER, ...csvRowsOfPayments(page.payments, kit.zone())], {
          record_delimiter: 'windows',
        });
        // The merchant's day, as the rows' times are: in UTC it is still yesterday for half a NZ morning.
        const day = localDay(signed.ctx.clock.now(), kit.zone());
        return reply
          .header('content-type', 'text/csv; charset=utf-8')
          .header('content-disposition', `attachment; filename="tono-${signed.mode}-payments-${day}.csv"`)
          .header('cache-control', 'no-store')
          .send(csv);
      },
      { permission: 'read' },
    ),
  );

  registerPaymentDetail(scope, kit);
}

/** One payment's page: its status history, refunds, receipts, the emails about it, its events and history. */
function registerPaymentDetail(scope: Scope, kit: Kit): void {
  scope.get(
    '/dashboard/:mode/payments/:id',
    hidden,
    kit.guard(
      async (request, reply, signed) => {
        const { payment } = await retrievePayment(signed.ctx, request.params.id);
        const [events, refunds, receipts] = await Promise.all([
          listEventsFor(signed.ctx, { object_id: payment.id, limit: 100 }).then((page) => page.events),
          refundsOfPayment(signed.ctx, payment.id),
          listReceiptsFor(signed.ctx, { payment_id: payment.id, limit: 100 }).then((page) => page.receipts.reverse()),
        ]);
        return kit.render(reply, 200, 'payment', {
          title: `Payment ${payment.id}`,
          ...kit.layoutOf(signed, 'payments'),
          item: payment,
          audit: await auditTrailOf(signed, payment.id),
          events,
          refunds,
          receipts,
          emails: await payerEmailsOf(
            signed,
            request.query,
            { type: 'payment', id: payment.id },
            receipts.map(receiptRef),
          ),
          refundable: payment.status === 'successful' && remainingOf(payment) > 0,
          history: statusHistory(events),
          flash: text(request.query.done) === 'charged' ? chargedFlash(payment.status, payment.failure_reason) : null,
        });
      },
      { permission: 'read' },
    ),
  );
}

/** A payment's emails are its receipts'. */
const receiptRef = (receipt: { id: string }) => ({ type: 'receipt', id: receipt.id });

/** The outcome of a charge made from a consent's page, as the payment page opens after it. */
function chargedFlash(status: string, failureReason: string | null): string {
  if (status === 'successful') return 'Charged: the payment was successful.';
  if (status === 'failed')
    return `The bank refused the payment${failureReason ? ` (${failureReason})` : ''}: nothing was taken.`;
  return 'Charged: the bank has not confirmed the payment yet; this page shows the outcome when it does.';
}
