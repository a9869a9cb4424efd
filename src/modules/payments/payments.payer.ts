import { displayAmount } from '../../shared/money.ts';
import { describeMoment } from '../../shared/zone.ts';

// How a payment reads on the payer's pages and in their email.

export type PaymentLine = { id: string; when: string; amount: string; status: string; statement: string };

const statusWords: Record<string, string> = {
  successful: 'Paid',
  failed: 'Failed',
  cancelled: 'Cancelled',
  unconfirmed: 'Waiting for the bank',
  'awaiting-consent': 'Waiting for approval',
};

export function paymentLine(
  payment: {
    id: string;
    created_at: number;
    amount_cents: number;
    status: string;
    particulars: string;
    code: string;
    reference: string | null;
  },
  zone: string,
): PaymentLine {
  return {
    id: payment.id,
    when: describeMoment(payment.created_at, zone),
    amount: displayAmount(payment.amount_cents),
    status: statusWords[payment.status] ?? payment.status,
    statement: [payment.particulars, payment.code, payment.reference].filter(Boolean).join(' '),
  };
}
