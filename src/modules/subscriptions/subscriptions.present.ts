import { amountValue } from '../../shared/money.ts';
import { iso, isoOrNull } from '../../shared/time.ts';
import type { SubscriptionRow } from './subscriptions.repo.ts';
import type { CancelledBy, SubscriptionStatus } from './subscriptions.rules.ts';
import type { SubscriptionPeriod } from './schedule.ts';

/** The subscription object: the only code that knows its JSON shape. */
export function presentSubscription(row: SubscriptionRow) {
  return {
    id: row.id,
    status: row.status as SubscriptionStatus,
    request_id: row.request_id,
    user_id: row.user_id,
    merchant_identifier: row.merchant_identifier,
    customer_id: row.customer_id,
    email: row.email,
    description: row.description,
    subscription_options: {
      amount: amountValue(row.amount_cents),
      period: row.period as SubscriptionPeriod,
      ...(row.start_at !== null && { start_date: iso(row.start_at) }),
      ...(row.end_at !== null && { end_date: iso(row.end_at) }),
      ...(row.total_count !== null && { total_count: row.total_count }),
    },
    next_charge_at: row.status === 'active' ? isoOrNull(row.next_charge_at) : null,
    successful_charges: row.successful_count,
    failed_charges: row.failed_count,
    skipped_charges: row.skipped_count,
    is_test_mode: row.mode === 'test',
    cancelled_by: row.cancelled_by as CancelledBy | null,
    created_at: iso(row.created_at),
    updated_at: iso(row.updated_at),
    paused_at: isoOrNull(row.paused_at),
    resumed_at: isoOrNull(row.resumed_at),
    cancelled_at: isoOrNull(row.cancelled_at),
    completed_at: isoOrNull(row.completed_at),
  };
}
export type SubscriptionObject = ReturnType<typeof presentSubscription>;
