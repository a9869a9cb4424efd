import { formatAmount } from '../../shared/money.ts';
import { iso, isoOrNull } from '../../shared/time.ts';
import type { ActionReason, RefundStatus } from './refunds.rules.ts';
import type { RefundRow } from './refunds.tables.ts';

/**
 * The refund object of the API. `amount` is what was refunded of the payment, in the terms of its
 * `requested_amount`; in test mode the bank moves 0.01 NZD, as for payments (docs/refunds.md).
 */
export function presentRefund(row: RefundRow) {
  return {
    id: row.id,
    payment_id: row.payment_id,
    request_id: row.request_id,
    amount: formatAmount(row.amount_cents),
    status: row.status as RefundStatus,
    reason: row.reason,
    failure_reason: row.failure_reason,
    action_reason: row.action_reason as ActionReason | null,
    pcr: { particulars: row.particulars, code: row.code, reference: row.reference },
    is_test_mode: row.mode === 'test',
    created_at: iso(row.created_at),
    updated_at: iso(row.updated_at),
    completed_at: isoOrNull(row.completed_at),
  };
}
export type RefundObject = ReturnType<typeof presentRefund>;
