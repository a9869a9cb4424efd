import { THIS_PERIOD, type LimitPeriod } from '../../consents/limits.ts';
import { supportRefundLimit } from '../../team/team.service.ts';
import { can, ROLE_LABELS } from '../../team/team.permissions.ts';
import type { AppError } from '../../../shared/errors.ts';
import { displayAmount, parseAmount } from '../../../shared/money.ts';
import { retrievePayment } from '../../payments/payments.service.ts';
import { authorityViewFor } from '../../refunds/refunds.authority.ts';
import { REASON_MAX_LENGTH, refundableCents, refundStatementText } from '../../refunds/refunds.rules.ts';
import { createRefund, refusalOfRefund } from '../../refunds/refunds.service.ts';
import { text } from '../dashboard.format.ts';
import {
  amountText,
  confirmationKeyOf,
  formKeyOf,
  isSentBeforeWithOtherValues,
  newConfirmationKey,
  SENT_BEFORE,
} from '../dashboard.forms.ts';
import { formOf, problemOf, type Kit, type Scope, type Signed } from '../dashboard.kit.ts';

// Refunding a payment from its page: the amount (what remains, to start with) and a reason, then a
// confirmation that says what the payer's statement shows and what remains after, then one refund
// per form. The form carries an idempotency key made when its page was shown (the GET), through the
// review to the confirmation, so a double submit, a reload, or Back (which posts the review again)
// and resubmit answers with the first refund instead of a second one.

const hidden = { schema: { hide: true } };

type RefundValues = { amount: string; reason: string };
type PaymentView = Awaited<ReturnType<typeof retrievePayment>>['payment'];

const centsOf = (value: string) => parseAmount(value) ?? 0;

/** What remains refundable of a payment (in the terms of its requested amount). */
export function remainingOf(payment: PaymentView): number {
  return refundableCents({
    amount_cents: centsOf(payment.requested_amount.value),
    refunded_cents: centsOf(payment.amount_refunded.value),
  });
}

/** Why this payment cannot be refunded now, in the page's words; null when it can. */
function notRefundable(payment: PaymentView): string | null {
  if (payment.status !== 'successful')
    return `Only a successful payment can be refunded; this one is ${payment.status}.`;
  if (remainingOf(payment) === 0) return 'This payment has been refunded in full: nothing remains to refund.';
  return null;
}

/** A refusal of the refunds service in plain words (the amounts as the page shows them). */
export function refundProblemText(error: AppError): string {
  const amount = (param: unknown) => displayAmount(centsOf((param as { value?: string } | undefined)?.value ?? ''));
  switch (error.code) {
    case 'refund_rejected.exceeds_refundable':
      return centsOf((error.params.refundable as { value: string }).value) === 0
        ? 'This payment has been refunded in full: nothing remains to refund.'
        : `You can refund at most ${amount(error.params.refundable)} of this payment.`;
    case 'refund_rejected.max_per_refund':
      return `Your refund authority allows at most ${amount(error.params.limit)} for one refund. Refund less, or change the limits on the refund authority page.`;
    case 'refund_rejected.max_per_period': {
      const period = THIS_PERIOD[error.params.period as LimitPeriod] ?? 'this period';
      return `Your refund authority has ${amount(error.params.remaining)} left ${period}, of ${amount(error.params.limit)}. Refund less, or change the limits on the refund authority page.`;
    }
    case 'conflict.invalid_state':
      return `Only a successful payment can be refunded; this one is ${String(error.params.status ?? 'not')}.`;
    default:
      return error.message.endsWith('.') ? error.message : `${error.message}.`;
  }
}

function valuesOf(form: Record<string, unknown>): RefundValues {
  return { amount: text(form.amount, 30), reason: text(form.reason, 500) };
}

/** Typed with cents beyond the second decimal (0.105): money, but not an amount a bank can pay. */
const hasPartCents = (typed: string) => /^\$?[\d,]*\.\d{3,}$/.test(typed.trim());

/** What is wrong with the typed amount or reason, in the form's words; null when both are fine. */
function problemOfValues(values: RefundValues): string | null {
  if (hasPartCents(values.amount))
    return `“Amount (NZD)” can have at most two decimals (whole cents), and ${values.amount} has more. Enter dollars and cents, such as 5.00.`;
  const cents = values.amount ? parseAmount(amountText(values.amount)) : null;
  if (cents === null || cents === 0)
    return '“Amount (NZD)” must be an amount of money more than $0.00. Enter dollars and cents, such as 5.00.';
  if (values.reason.length > REASON_MAX_LENGTH)
    return `“Reason” can be at most ${REASON_MAX_LENGTH} characters; it has ${values.reason.length}.`;
  return null;
}

export function registerPaymentRefund(scope: Scope, kit: Kit): void {
  const formPage = refundFormPage(kit);

  scope.get(
    '/dashboard/:mode/payments/:id/refund',
    hidden,
    kit.guard(
      async (request, reply, signed) => {
        // Go back from the confirmation keeps what was typed, and the form's key.
        const typed = text(request.query.amount) ? valuesOf(request.query) : null;
        const key = formKeyOf(request.query) ?? newConfirmationKey();
        return kit.render(reply, 200, 'payment-refund', await formPage(signed, request.params.id, typed, null, key));
      },
      { permission: 'refunds.create' },
    ),
  );
  registerRefundReview(scope, kit, formPage);
  registerRefundConfirm(scope, kit, formPage);
}

type FormPage = ReturnType<typeof refundFormPage>;

/** The refund form of a payment: what was paid, refunded and remains, the amount (what remains) and a reason. */
function refundFormPage(kit: Kit) {
  return async (signed: Signed, id: string, values: RefundValues | null, error: string | null, key: string) => {
    const { payment } = await retrievePayment(signed.ctx, id);
    const remaining = remainingOf(payment);
    return {
      title: 'Refund this payment',
      ...kit.layoutOf(signed, 'payments'),
      item: payment,
      remaining,
      refunded: centsOf(payment.amount_refunded.value),
      cannot: notRefundable(payment),
      values: values ?? { amount: (remaining / 100).toFixed(2), reason: '' },
      reasonMax: REASON_MAX_LENGTH,
      error,
      key,
    };
  };
}

/**
 * A role that refunds only up to the team's limit (support, docs/team.md): the sentence refusing an
 * amount over it, or null. Checked at the review and again at the confirmation, which can be posted alone.
 */
async function overRefundLimit(signed: Signed, cents: number): Promise<string | null> {
  const role = signed.session.member.role;
  if (can(role, 'refunds.any_amount')) return null;
  const limit = await supportRefundLimit(signed.ctx.db, signed.ctx.merchant.id);
  if (cents <= limit) return null;
  return `As ${ROLE_LABELS[role]} you can refund at most ${displayAmount(limit)} at once. Nothing was refunded. An owner or an admin can refund more, or raise the limit on the Team page.`;
}

/** "Review the refund": the typed values and the payment checked, then the confirmation with its idempotency key. */
function registerRefundReview(scope: Scope, kit: Kit, formPage: FormPage): void {
  scope.post(
    '/dashboard/:mode/payments/:id/refund',
    hidden,
    kit.guard(
      async (request, reply, signed) => {
        const id = request.params.id;
        const form = formOf(request);
        const values = valuesOf(form);
        // The key the form page made (a page from before keys: one made now).
        const key = formKeyOf(form) ?? newConfirmationKey();
        const again = async (status: number, message: string) =>
          kit.render(reply, status, 'payment-refund', await formPage(signed, id, values, message, key));
        const typed = problemOfValues(values);
        if (typed) return again(400, typed);
        const cents = parseAmount(amountText(values.amount))!;
        const limited = await overRefundLimit(signed, cents);
        if (limited) return again(400, limited);
        const { payment } = await retrievePayment(signed.ctx, id);
        const cannot = notRefundable(payment);
        if (cannot) return again(409, `${cannot} Nothing was refunded.`);
        const refusal = await refusalOfRefund(signed.ctx, id, cents);
        if (refusal) return again(refusal.status, `${refundProblemText(refusal)} Nothing was refunded.`);
        const remaining = remainingOf(payment);
        const { active } = await authorityViewFor(signed.ctx);
        return kit.render(reply, 200, 'refund-confirm', {
          title: 'Confirm the refund',
          ...kit.layoutOf(signed, 'payments'),
          item: payment,
          cents,
          reason: values.reason,
          statement: refundStatementText({ particulars: payment.pcr.particulars, reference: payment.pcr.reference }),
          after: remaining - cents,
          authority: active,
          fields: { amount: values.amount, reason: values.reason, idempotency_key: key },
          back: `${signed.base}/payments/${id}/refund${kit.helpers.queryOf({ ...values, idempotency_key: key })}`,
        });
      },
      { permission: 'refunds.create', post: true },
    ),
  );
}

/** "Yes, refund": one refund per form (its idempotency key), then the refund's page. */
function registerRefundConfirm(scope: Scope, kit: Kit, formPage: FormPage): void {
  scope.post(
    '/dashboard/:mode/payments/:id/refund/confirm',
    hidden,
    kit.guard(
      async (request, reply, signed) => {
        const id = request.params.id;
        const form = formOf(request);
        const values = valuesOf(form);
        const key = text(form.idempotency_key, 100);
        const typed = problemOfValues(values) ?? (confirmationKeyOf(key) ? null : 'The form is incomplete.');
        const limited = typed ? null : await overRefundLimit(signed, parseAmount(amountText(values.amount))!);
        const formKey = confirmationKeyOf(key) ?? newConfirmationKey();
        if (typed || limited)
          return kit.render(
            reply,
            400,
            'payment-refund',
            await formPage(signed, id, values, (typed ?? limited)!, formKey),
          );
        try {
          const made = await createRefund(
            signed.ctx,
            {
              payment_id: id,
              amount: amountText(values.amount),
              ...(values.reason ? { reason: values.reason } : {}),
            },
            key,
          );
          return reply.redirect(`${signed.base}/refunds/${made.body.refund.id}?done=created`, 303);
        } catch (error) {
          // A payment id of another merchant or mode: the service's 404, as the guard shows it.
          if (!problemOf(error)) throw error;
          const status = (error as AppError).status;
          // The form's key sent with other values (an earlier form, changed): its refund was made;
          // the form is shown again with a new key for another.
          if (isSentBeforeWithOtherValues(error))
            return kit.render(
              reply,
              status,
              'payment-refund',
              await formPage(signed, id, values, SENT_BEFORE, newConfirmationKey()),
            );
          return kit.render(
            reply,
            status,
            'payment-refund',
            await formPage(
              signed,
              id,
              values,
              `${refundProblemText(error as AppError)} Nothing was refunded.`,
              formKey,
            ),
          );
        }
      },
      { permission: 'refunds.create', post: true },
    ),
  );
}
