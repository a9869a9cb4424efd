import { displayAmount } from '../../shared/money.ts';
import { describeMoment } from '../../shared/zone.ts';
import type { Db } from '../../store/db.ts';
import { queueMail } from '../mail/mail.service.ts';
import { merchantContact } from '../merchants/merchants.service.ts';
import { describeSchedule, type SubscriptionPeriod } from './schedule.ts';
import type { SubscriptionRow } from './subscriptions.repo.ts';
import type { CancelledBy } from './subscriptions.rules.ts';
import type { PaymentRow } from '../payments/payments.tables.ts';

// What the payer hears about a subscription, queued in the transaction of the change.

/** The plan in plain words, with the start it actually got (a start "when you approve" is a date by now). */
export function planWords(sub: SubscriptionRow): string {
  return describeSchedule(
    { ...sub, start_at: sub.start_at ?? sub.first_charge_at, period: sub.period as SubscriptionPeriod },
    sub.zone,
  );
}

async function notice(
  trx: Db,
  sub: SubscriptionRow,
  mail: Omit<Parameters<typeof queueMail>[1], 'to' | 'related' | 'owner'>,
  now: number,
) {
  await queueMail(
    trx,
    {
      ...mail,
      to: sub.email,
      related: { type: 'subscription', id: sub.id },
      owner: { userId: sub.user_id, mode: sub.mode },
    } as Parameters<typeof queueMail>[1],
    now,
  );
}

/** What every email about one of its charges says: whose, for what, how much, when. */
function chargeFields(merchant: string, sub: SubscriptionRow, payment: PaymentRow, at: number) {
  return {
    merchant,
    title: sub.description,
    amount: displayAmount(payment.amount_cents),
    date: describeMoment(at, sub.zone),
    test: sub.mode === 'test',
  };
}

export async function noticeSubscriptionSetUp(trx: Db, sub: SubscriptionRow, now: number): Promise<void> {
  if (sub.status !== 'active' || sub.next_charge_at === null) return;
  const { name } = await merchantContact(trx, sub.user_id);
  await notice(
    trx,
    sub,
    {
      template: 'subscription_set_up',
      data: {
        merchant: name,
        title: sub.description,
        plan: planWords(sub),
        first_charge: describeMoment(sub.next_charge_at, sub.zone),
        test: sub.mode === 'test',
      },
      dedupeKey: `subscription_set_up:${sub.id}`,
    },
    now,
  );
}

/**
 * The plain receipt of a charge, for a merchant without tax settings (docs/receipts.md): once it
 * has them, the receipts module issues a numbered document instead.
 */
export async function noticeChargeReceipt(
  trx: Db,
  sub: SubscriptionRow,
  payment: PaymentRow,
  now: number,
): Promise<void> {
  const { name } = await merchantContact(trx, sub.user_id);
  await notice(
    trx,
    sub,
    {
      template: 'charge_receipt',
      data: {
        ...chargeFields(name, sub, payment, now),
        particulars: payment.particulars,
        code: payment.code,
        reference: payment.reference ?? '',
      },
      dedupeKey: `charge_receipt:${payment.id}`,
    },
    now,
  );
}

export async function noticeChargeFailed(
  trx: Db,
  sub: SubscriptionRow,
  payment: PaymentRow,
  chargeAt: number,
  retryAt: number | null,
  now: number,
): Promise<void> {
  const { name } = await merchantContact(trx, sub.user_id);
  await notice(
    trx,
    sub,
    {
      template: 'charge_failed',
      data: {
        ...chargeFields(name, sub, payment, chargeAt),
        retry: retryAt === null ? null : describeMoment(retryAt, sub.zone),
      },
      dedupeKey: `charge_failed:${payment.id}`,
    },
    now,
  );
}

export async function noticeSubscriptionEnded(
  trx: Db,
  sub: SubscriptionRow,
  how: 'cancelled' | 'completed',
  by: CancelledBy | null,
  now: number,
): Promise<void> {
  const { name } = await merchantContact(trx, sub.user_id);
  const byWords = by === 'payer' ? 'you' : by === 'bank' ? 'your bank' : by === 'merchant' ? name : null;
  await notice(
    trx,
    sub,
    {
      template: 'subscription_ended',
      data: {
        merchant: name,
        title: sub.description,
        plan: planWords(sub),
        how,
        by: byWords,
        test: sub.mode === 'test',
      },
      dedupeKey: `subscription_ended:${sub.id}`,
    },
    now,
  );
}
