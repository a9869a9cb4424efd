import { displayAmount } from '../../shared/money.ts';
import { describeMoment } from '../../shared/zone.ts';
import type { Deps } from '../context.ts';
import type { PaymentLine } from '../payments/payments.payer.ts';
import { findPaymentById } from '../payments/payments.service.ts';
import { refundsOfPayments, type RefundRow } from '../refunds/refunds.service.ts';

// The refunds under each payment the payer dashboard shows (docs/payer.md): what was paid back,
// how far it has got in plain words, when, and what the payer's statement shows. Only the refunds
// of payments already shown, so the payment's owner rules are the refunds' too. No account number
// (the payer's or the merchant's) is ever read here.

export type PayerRefundLine = { id: string; when: string; amount: string; status: string; statement: string };
export type PaymentWithRefunds = PaymentLine & { refunds: PayerRefundLine[] };

/** A refund's status as the payer reads it: one the merchant pays by hand is on its way all the same. */
const refundStatusWords: Record<string, string> = {
  pending: 'On its way',
  requires_action: 'On its way',
  successful: 'Refunded',
  failed: 'Refund did not go through',
};

export function payerRefundLine(refund: RefundRow, zone: string): PayerRefundLine {
  return {
    id: refund.id,
    // When it arrived or failed; before that, when it left the merchant, or was asked for.
    when: describeMoment(refund.completed_at ?? refund.sent_at ?? refund.created_at, zone),
    amount: displayAmount(refund.amount_cents),
    status: refundStatusWords[refund.status] ?? 'On its way',
    statement: [refund.particulars, refund.code, refund.reference].filter(Boolean).join(' '),
  };
}

/** A payment's status with what is refunded of it (refunds on their way or arrived; failed ones give theirs back). */
export function refundedStatus(
  status: string,
  payment: { status: string; amount_cents: number; refunded_cents: number },
): string {
  if (payment.status !== 'successful' || payment.refunded_cents <= 0) return status;
  if (payment.refunded_cents >= payment.amount_cents) return 'Refunded';
  return `Partly refunded (${displayAmount(payment.refunded_cents)} of ${displayAmount(payment.amount_cents)})`;
}

/** The payments with their refunds, oldest refund first, and the status of those refunded. */
export async function withRefunds(deps: Deps, payments: readonly PaymentLine[]): Promise<PaymentWithRefunds[]> {
  const refunds = await refundsOfPayments(
    deps.db,
    payments.map((payment) => payment.id),
  );
  // The times read as the refund emails tell them.
  const zone = deps.config.serviceTimeZone;
  const byPayment = new Map<string, PayerRefundLine[]>();
  for (const refund of refunds) {
    const lines = byPayment.get(refund.payment_id) ?? [];
    lines.push(payerRefundLine(refund, zone));
    byPayment.set(refund.payment_id, lines);
  }
  return Promise.all(
    payments.map(async (line) => {
      const lines = byPayment.get(line.id);
      if (!lines) return { ...line, refunds: [] };
      const payment = await findPaymentById(deps.db, line.id);
      return { ...line, status: payment ? refundedStatus(line.status, payment) : line.status, refunds: lines };
    }),
  );
}
