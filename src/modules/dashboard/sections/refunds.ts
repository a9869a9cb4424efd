import { listReceiptsFor } from '../../receipts/receipts.service.ts';
import { stringify } from 'csv-stringify/sync';
import type { FastifyReply } from 'fastify';
import { AppError } from '../../../shared/errors.ts';
import { displayAmount } from '../../../shared/money.ts';
import {
  cancelRefund,
  getRefund,
  type ManualPayment,
  markRefundPaid,
  refundRowsFor,
  refundsRequiringAction,
  refundToPay,
} from '../../refunds/refunds.service.ts';
import { ACTION_REASON_TEXT, certainlyUnpaid, RefundStatus, type ActionReason } from '../../refunds/refunds.rules.ts';
import type { RefundRow } from '../../refunds/refunds.tables.ts';
import { authorityViewFor } from '../../refunds/refunds.authority.ts';
import { cursorOf, dateFilterProblem, dayBound, localDay, oneOf, text } from '../dashboard.format.ts';
import { batchRowsOf, csvRowsOfRefunds, MANUAL_BATCH_HEADER, REFUND_CSV_HEADER } from '../dashboard.present.ts';
import { formOf, type Kit, type Scope, type Signed } from '../dashboard.kit.ts';
import { CSV_MAX_ROWS } from './payments.ts';
import { auditTrailOf } from './audit.ts';
import { payerEmailsOf } from './payer-emails.ts';

// Refunds (docs/refunds.md): the list with its filters and CSV export, one refund's page, and the
// refunds that require action — what the merchant pays by hand, as a list and as a batch file for
// the bank, each marked as paid (who and when are kept) or cancelled (its amount is refundable
// again). Every change goes through the refunds module's service, as the API's do.

const hidden = { schema: { hide: true } };
const PAGE = 25;
/** The most refunds the requires-action list counts on the refunds page. */
const ACTION_COUNT_MAX = 100;

/** What a failure reason reads as on a page. */
export function failureText(reason: string | null): string {
  if (reason === null) return '';
  if (reason === 'cancelled_by_merchant') return 'You cancelled it instead of paying it by hand';
  return reason.replace(/_/g, ' ');
}

/** Why a refund waits for the merchant, on a page. */
export function actionReasonText(reason: string | null): string {
  return reason && reason in ACTION_REASON_TEXT ? ACTION_REASON_TEXT[reason as ActionReason] : '';
}

/** Why the payer's account is not shown, and what to do: the merchant must ask the payer. */
export function unknownPayeeText(reason: string | null): string {
  return reason === 'payer_account_unknown'
    ? 'The payer’s bank did not tell us the account: contact the payer'
    : 'We do not know the payer’s account: contact the payer';
}

export function registerRefundPages(scope: Scope, kit: Kit): void {
  registerRefundList(scope, kit);
  registerRefundsToPay(scope, kit);
  registerRefundDetail(scope, kit);
}

/** The list with its filters and pager, and its CSV export. */
function registerRefundList(scope: Scope, kit: Kit): void {
  const filtersOf = (query: Record<string, unknown>) => ({
    status: oneOf(query.status, RefundStatus),
    // Read whole, not cut to a date's length: a longer value is no date, and the page says so.
    from: text(query.from, 40),
    to: text(query.to, 40),
    after: cursorOf('refund', query.after),
  });
  const searchOf = (filters: ReturnType<typeof filtersOf>) => ({
    status: filters.status || undefined,
    created_from: dayBound(filters.from, kit.zone(), false) ?? undefined,
    created_to: dayBound(filters.to, kit.zone(), true) ?? undefined,
  });

  scope.get(
    '/dashboard/:mode/refunds',
    hidden,
    kit.guard(
      async (request, reply, signed) => {
        const filters = filtersOf(request.query);
        const [page, waiting, authority] = await Promise.all([
          refundRowsFor(signed.ctx, { ...searchOf(filters), starting_after: filters.after || undefined, limit: PAGE }),
          refundRowsFor(signed.ctx, { status: 'requires_action', limit: ACTION_COUNT_MAX }),
          authorityViewFor(signed.ctx),
        ]);
        const next = page.hasMore ? page.items[page.items.length - 1].id : null;
        return kit.render(reply, 200, 'refunds', {
          title: 'Refunds',
          ...kit.layoutOf(signed, 'refunds'),
          filters,
          dateProblem: dateFilterProblem(filters, kit.zone(), { from: 'Created from', to: 'Created to' }),
          refunds: page.items,
          next,
          statuses: RefundStatus,
          actionCount: waiting.hasMore ? `more than ${ACTION_COUNT_MAX}` : String(waiting.items.length),
          actionAny: waiting.items.length > 0,
          authority: authority.active,
        });
      },
      { permission: 'read' },
    ),
  );

  scope.get(
    '/dashboard/:mode/refunds/export.csv',
    hidden,
    kit.guard(
      async (request, reply, signed) => {
        const filters = filtersOf(request.query);
        const page = await refundRowsFor(signed.ctx, { ...searchOf(filters), limit: CSV_MAX_ROWS });
        if (page.hasMore) {
          return kit.message(
            reply,
            413,
            'Too many refunds for one file',
            `The filters match more than ${CSV_MAX_ROWS} refunds, the most one file holds. Narrow the dates and export in parts.`,
            signed,
            'refunds',
          );
        }
        const csv = stringify([REFUND_CSV_HEADER, ...csvRowsOfRefunds(page.items, kit.zone())], {
          record_delimiter: 'windows',
        });
        return sendCsv(reply, csv, `tono-${signed.mode}-refunds-${dayOf(signed, kit.zone())}.csv`);
      },
      { permission: 'read' },
    ),
  );
}

/** The refunds that require action, as a page and as a batch file for the bank. */
function registerRefundsToPay(scope: Scope, kit: Kit): void {
  scope.get(
    '/dashboard/:mode/refunds/action',
    hidden,
    kit.guard(
      async (request, reply, signed) => {
        const items = await refundsRequiringAction(signed.ctx);
        const done = text(request.query.done);
        const which = cursorOf('refund', request.query.refund);
        return kit.render(reply, 200, 'refunds-action', {
          title: 'Requires action: refunds to pay by hand',
          ...kit.layoutOf(signed, 'refunds'),
          items: items.map((item) => ({
            ...item,
            why: actionReasonText(item.refund.action_reason),
            unknown: unknownPayeeText(item.refund.action_reason),
          })),
          inBatch: items.filter((item) => item.payee && certainlyUnpaid(item.refund)).length,
          flash:
            done === 'paid'
              ? `Refund ${which} is marked as paid.`
              : done === 'cancelled'
                ? `Refund ${which} is cancelled: its amount can be refunded again.`
                : null,
        });
      },
      { permission: 'read' },
    ),
  );

  scope.get(
    '/dashboard/:mode/refunds/action.csv',
    hidden,
    kit.guard(
      async (_request, reply, signed) => {
        const items = await refundsRequiringAction(signed.ctx);
        const csv = stringify([MANUAL_BATCH_HEADER, ...batchRowsOf(items)], { record_delimiter: 'windows' });
        return sendCsv(reply, csv, `tono-${signed.mode}-refunds-to-pay-${dayOf(signed, kit.zone())}.csv`);
      },
      { permission: 'read' },
    ),
  );
}

type Verb = 'mark-paid' | 'cancel';

/** A refund that no longer requires action (done already, a second click): said in words, nothing changed. */
function cannotNow(kit: Kit, reply: FastifyReply, signed: Signed, refund: RefundRow, verb: Verb) {
  return kit.message(
    reply,
    409,
    'That cannot be done now',
    `Refund ${refund.id} is ${refund.status.replace('_', ' ')}: only a refund that requires action can be ${verb === 'cancel' ? 'cancelled' : 'marked as paid'}. Nothing was changed.`,
    signed,
    'refunds',
  );
}

/**
 * "Mark as paid" and "Cancel the refund" ask first, each on a page of its own (docs/dashboard.md):
 * marking tells the payer the refund is on its way and cannot be undone, and cancelling drops a
 * refund the payer is owed, so neither acts on a slip of one click. The page remembers where it came
 * from (the refund's page or the list), so the post leads back there.
 */
function registerActionConfirms(scope: Scope, kit: Kit): void {
  const copyOf = (verb: Verb, { refund, payee }: ManualPayment) => {
    const amount = displayAmount(refund.amount_cents);
    if (verb === 'cancel')
      return {
        title: 'Cancel this refund',
        heading: `Cancel the refund ${refund.id} of ${amount}?`,
        consequence:
          'Cancel it only if you will not pay it by hand: it is marked as failed, and its amount can be refunded again. This cannot be undone.',
        confirm: 'Yes, cancel the refund',
        confirmClass: 'danger',
      };
    const to = payee ? `${payee.accountNumber}${payee.name ? ` (${payee.name})` : ''}` : 'the payer';
    return {
      title: 'Mark this refund as paid',
      heading: `Mark the refund ${refund.id} of ${amount} as paid?`,
      consequence: `Mark it only once you have paid ${amount} from your bank to ${to}, with particulars “${refund.particulars}”, code “${refund.code}” and reference “${refund.reference}”. Tono then tells the payer, by email when it has theirs, that the refund is on its way, and records you as who paid it. This cannot be undone.`,
      confirm: 'Yes, I have paid it',
      confirmClass: 'primary',
    };
  };
  for (const verb of ['mark-paid', 'cancel'] as const)
    scope.get(
      `/dashboard/:mode/refunds/:id/${verb}`,
      hidden,
      kit.guard(
        async (request, reply, signed) => {
          // Only marking as paid names the account to pay: cancelling reads no payer's account.
          const item =
            verb === 'mark-paid'
              ? await refundToPay(signed.ctx, request.params.id)
              : { refund: await getRefund(signed.ctx, request.params.id), payee: null };
          const { refund } = item;
          if (refund.status !== 'requires_action') return cannotNow(kit, reply, signed, refund, verb);
          const fromRefund = text(request.query.back) === 'refund';
          const { title, ...copy } = copyOf(verb, item);
          return kit.render(reply, 200, 'confirm', {
            title,
            ...kit.layoutOf(signed, 'refunds'),
            ...copy,
            action: `${signed.base}/refunds/${refund.id}/${verb}`,
            fields: fromRefund ? { back: 'refund' } : {},
            back: fromRefund ? `${signed.base}/refunds/${refund.id}` : `${signed.base}/refunds/action`,
          });
        },
        { permission: 'refunds.manage' },
      ),
    );
}

/** One refund's page, and marking one that requires action as paid or cancelling it (each after confirming). */
function registerRefundDetail(scope: Scope, kit: Kit): void {
  scope.get(
    '/dashboard/:mode/refunds/:id',
    hidden,
    kit.guard(
      async (request, reply, signed) => {
        const refund = await getRefund(signed.ctx, request.params.id);
        const [creditNote] = (await listReceiptsFor(signed.ctx, { refund_id: refund.id, limit: 1 })).receipts;
        return kit.render(reply, 200, 'refund', {
          creditNote: creditNote ?? null,
          title: `Refund ${refund.id}`,
          ...kit.layoutOf(signed, 'refunds'),
          item: refund,
          audit: await auditTrailOf(signed, refund.id),
          emails: await payerEmailsOf(
            signed,
            request.query,
            { type: 'refund', id: refund.id },
            creditNote ? [{ type: 'receipt', id: creditNote.id }] : [],
          ),
          failure: failureText(refund.failure_reason),
          why: actionReasonText(refund.action_reason),
          flash: doneFlash(text(request.query.done), refund),
        });
      },
      { permission: 'read' },
    ),
  );

  registerActionConfirms(scope, kit);

  const act = (verb: Verb, run: (signed: Signed, id: string) => Promise<RefundRow>) =>
    scope.post(
      `/dashboard/:mode/refunds/:id/${verb}`,
      hidden,
      kit.guard(
        async (request, reply, signed) => {
          const id = request.params.id;
          try {
            await run(signed, id);
          } catch (error) {
            if (error instanceof AppError && error.code === 'conflict.invalid_state')
              return cannotNow(kit, reply, signed, await getRefund(signed.ctx, id), verb);
            throw error;
          }
          const back = text(formOf(request).back);
          const done = verb === 'cancel' ? 'cancelled' : 'paid';
          return reply.redirect(
            back === 'refund'
              ? `${signed.base}/refunds/${id}?done=${done}`
              : `${signed.base}/refunds/action?done=${done}&refund=${id}`,
            303,
          );
        },
        { permission: 'refunds.manage', post: true },
      ),
    );
  act('mark-paid', (signed, id) => markRefundPaid(signed.ctx, id, signed.session.member.email));
  act('cancel', (signed, id) => cancelRefund(signed.ctx, id));
}

function doneFlash(done: string, refund: RefundRow): string | null {
  if (done === 'created') {
    if (refund.status === 'requires_action')
      return `The refund of ${displayAmount(refund.amount_cents)} is recorded. Tono cannot pay it for you: pay it by hand and mark it as paid (see below).`;
    return `The refund of ${displayAmount(refund.amount_cents)} is made: it is paid to the account the payment came from, and this page shows the outcome.`;
  }
  if (done === 'paid') return 'The refund is marked as paid.';
  if (done === 'cancelled') return 'The refund is cancelled: its amount can be refunded again.';
  return null;
}

/** The day a file is of, on the mode's clock, as the merchant's calendar reads it (not the UTC date). */
const dayOf = (signed: Signed, zone: string) => localDay(signed.ctx.clock.now(), zone);

function sendCsv(reply: FastifyReply, csv: string, filename: string) {
  return reply
    .header('content-type', 'text/csv; charset=utf-8')
    .header('content-disposition', `attachment; filename="${filename}"`)
    .header('cache-control', 'no-store')
    .send(csv);
}
