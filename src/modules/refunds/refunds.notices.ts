import { displayAmount } from '../../shared/money.ts';
import { describeMoment } from '../../shared/zone.ts';
import type { Db } from '../../store/db.ts';
import { payerOfConsent } from '../consents/consents.service.ts';
import type { Deps } from '../context.ts';
import { findCustInfoOfPayment } from '../customers/customers.service.ts';
import { queueMail } from '../mail/mail.service.ts';
import { merchantContact } from '../merchants/merchants.service.ts';
import { findPaymentById, type PaymentRow } from '../payments/payments.service.ts';
import { payerOfSubscription } from '../subscriptions/subscriptions.service.ts';
import type { RefundRow } from './refunds.tables.ts';

// What the payer hears about a refund, queued in the transaction of the change: when it leaves the
// merchant's account (the bank took it, or the merchant paid it by hand), and when the bank says it
// arrived. The payer is whoever Tono has an email for: the details given at checkout, or the
// recurring consent's or subscription's payer. Without one, nobody is told.

type Payer = { email: string; title: string | null; dashboard: boolean };

async function payerOf(db: Db, payment: PaymentRow): Promise<Payer | null> {
  const enduring = payment.recurring_consent_id
    ? await payerOfConsent(db, payment.recurring_consent_id)
    : payment.subscription_id
      ? await payerOfSubscription(db, payment.subscription_id)
      : null;
  if (enduring) return { ...enduring, dashboard: true };
  const details = await findCustInfoOfPayment(db, payment.id);
  return details?.email ? { email: details.email, title: null, dashboard: false } : null;
}

async function notice(
  trx: Db,
  deps: Deps,
  refund: RefundRow,
  template: 'refund_sent' | 'refund_arrived',
  now: number,
): Promise<void> {
  const payment = await findPaymentById(trx, refund.payment_id);
  const payer = payment && (await payerOf(trx, payment));
  if (!payer) return;
  const merchant = await merchantContact(trx, refund.user_id);
  await queueMail(
    trx,
    {
      to: payer.email,
      template,
      data: {
        merchant: merchant.name,
        ...(payer.title && { title: payer.title }),
        amount: displayAmount(refund.amount_cents),
        paid: displayAmount(payment.amount_cents),
        paid_on: describeMoment(payment.created_at, deps.config.serviceTimeZone),
        date: describeMoment(now, deps.config.serviceTimeZone),
        reason: refund.reason,
        by_hand: refund.paid_by !== null,
        particulars: refund.particulars,
        code: refund.code,
        reference: refund.reference,
        test: refund.mode === 'test',
        dashboard: payer.dashboard,
      },
      related: { type: 'refund', id: refund.id },
      owner: { userId: refund.user_id, mode: refund.mode },
      dedupeKey: `${template}:${refund.id}`,
    },
    now,
  );
}

export const noticeRefundSent = (trx: Db, deps: Deps, refund: RefundRow, now: number) =>
  notice(trx, deps, refund, 'refund_sent', now);
export const noticeRefundArrived = (trx: Db, deps: Deps, refund: RefundRow, now: number) =>
  notice(trx, deps, refund, 'refund_arrived', now);
