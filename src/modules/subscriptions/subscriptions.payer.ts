import { notFound } from '../../shared/errors.ts';
import { paymentLine, type PaymentLine } from '../payments/payments.payer.ts';
import { describeMoment } from '../../shared/zone.ts';
import { merchantContact } from '../merchants/merchants.service.ts';
import { paymentsUnder } from '../payments/payments.service.ts';
import { planWords } from './subscriptions.notices.ts';
import {
  anySubscriptionOfEmail,
  findSubscriptionById,
  subscriptionsOfEmail,
  type SubscriptionRow,
} from './subscriptions.repo.ts';
import { cancelSubscriptionByPayer } from './subscriptions.service.ts';
import { isIdOf } from '../../shared/ids.ts';
import type { Deps, Origin } from '../context.ts';

// Subscriptions as their payer sees them in the payer dashboard: every one registered to their
// email, across merchants and modes. Another payer's subscription is unknown (404).

export type PayerSubscription = {
  id: string;
  /** What it is for (the request's message): its title. */
  title: string;
  merchant: string;
  test: boolean;
  status: string;
  agreed: string;
  next: string | null;
  created: string;
  ended: string | null;
  payments: PaymentLine[];
};

const byWords: Record<string, string> = { payer: 'you', merchant: 'the merchant', bank: 'your bank' };

async function view(deps: Deps, row: SubscriptionRow, withPayments: boolean): Promise<PayerSubscription> {
  const merchant = (await merchantContact(deps.db, row.user_id)).name;
  return {
    id: row.id,
    title: row.description,
    merchant,
    test: row.mode === 'test',
    status: row.status,
    agreed: planWords(row),
    next: row.status === 'active' && row.next_charge_at !== null ? describeMoment(row.next_charge_at, row.zone) : null,
    created: describeMoment(row.created_at, row.zone),
    ended:
      row.status === 'cancelled' && row.cancelled_at !== null
        ? `Cancelled by ${byWords[row.cancelled_by ?? ''] ?? 'the bank'} on ${describeMoment(row.cancelled_at, row.zone)}`
        : row.status === 'completed'
          ? 'Completed: every payment has been made'
          : row.status === 'paused'
            ? `Paused by ${merchant}`
            : null,
    payments: withPayments
      ? (await paymentsUnder(deps.db, { subscriptionId: row.id })).map((p) => paymentLine(p, row.zone))
      : [],
  };
}

export async function subscriptionsOfPayer(deps: Deps, email: string): Promise<PayerSubscription[]> {
  const rows = await subscriptionsOfEmail(deps.db, email);
  return Promise.all(rows.map((row) => view(deps, row, false)));
}

async function ownSubscription(deps: Deps, email: string, id: string): Promise<SubscriptionRow> {
  const row = isIdOf('subscription', id) ? await findSubscriptionById(deps.db, id) : undefined;
  if (!row || row.email !== email) throw notFound('subscription', id);
  return row;
}

export async function subscriptionOfPayer(deps: Deps, email: string, id: string): Promise<PayerSubscription> {
  return view(deps, await ownSubscription(deps, email, id), true);
}

/** The payer cancels: the same operation as the payer test helper (subscription.cancelled at once, revoked at the bank). */
export async function cancelSubscriptionForPayer(
  deps: Deps,
  email: string,
  id: string,
  origin?: Origin,
): Promise<void> {
  await ownSubscription(deps, email, id);
  await cancelSubscriptionByPayer(deps, id, email, { actor: { kind: 'payer', email }, origin });
}

/** Whether any consent or subscription is registered to this email (a sign-in code is only worth sending then). */
export async function payerHasSubscriptions(deps: Deps, email: string): Promise<boolean> {
  return anySubscriptionOfEmail(deps.db, email);
}
