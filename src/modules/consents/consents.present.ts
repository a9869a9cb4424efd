import { amountValue, formatAmount } from '../../shared/money.ts';
import { iso, isoOrNull } from '../../shared/time.ts';
import type { ConsentRow } from './consents.repo.ts';
import { effectiveConsentStatus, limitsOf } from './consents.rules.ts';
import { usageSummary, type UsageAggregate } from './limits.ts';

/**
 * The recurring consent object: status, limits and usage as of `now`. The only code that knows its
 * JSON shape. Never carries the token (only its hash is stored) nor the bank's access token.
 */
export function presentConsent(row: ConsentRow, usage: UsageAggregate, now: number, zone: string) {
  const limits = limitsOf(row);
  const summary = usageSummary(limits, usage, now, zone);
  return {
    id: row.id,
    status: effectiveConsentStatus(row, now),
    request_id: row.request_id,
    merchant_identifier: row.merchant_identifier,
    customer_id: row.customer_id,
    email: row.email,
    description: row.description,
    provider: row.bank_id,
    is_test_mode: row.mode === 'test',
    limits: {
      period: limits.period,
      max_per_period: amountValue(limits.max_per_period_cents),
      max_per_payment: limits.max_per_payment_cents === null ? null : amountValue(limits.max_per_payment_cents),
      total_count: limits.total_count,
      total_amount: limits.total_amount_cents === null ? null : amountValue(limits.total_amount_cents),
      end_date: isoOrNull(limits.end_at),
    },
    usage: {
      period: {
        start: iso(summary.period.start),
        end: iso(summary.period.end),
        amount: formatAmount(summary.period.amount_cents),
        count: summary.period.count,
        remaining: formatAmount(summary.period.remaining_cents),
      },
      total: {
        amount: formatAmount(summary.total.amount_cents),
        count: summary.total.count,
        remaining_amount: summary.total.remaining_cents === null ? null : formatAmount(summary.total.remaining_cents),
        remaining_count: summary.total.remaining_count,
      },
    },
    created_at: iso(row.created_at),
    updated_at: iso(row.updated_at),
    revoked_at: isoOrNull(row.revoked_at),
  };
}
export type ConsentObject = ReturnType<typeof presentConsent>;
