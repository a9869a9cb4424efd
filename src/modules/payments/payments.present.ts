import { formatAmount } from '../../shared/money.ts';
import { iso, isoOrNull } from '../../shared/time.ts';
import { presentCustInfo, type CustInfoObject } from '../customers/customers.service.ts';
import type { PaymentStatus } from './payments.rules.ts';
import type { PaymentRow } from './payments.tables.ts';
import type { CustInfoRow } from '../customers/customers.tables.ts';

/**
 * The payment object of the API. `amount` is what moved at the bank (0.01 in test mode, see the
 * docs/decisions.md); `requested_amount` is what the payer was asked for, which limits and caps use.
 */
export function presentPayment(row: Omit<PaymentRow, 'payer_account_sealed'>, custInfo?: CustInfoRow | null) {
  const custInfoObject: CustInfoObject | undefined = custInfo ? presentCustInfo(custInfo) : undefined;
  return {
    id: row.id,
    request_id: row.request_id,
    amount: formatAmount(row.settled_cents),
    requested_amount: formatAmount(row.amount_cents),
    amount_refunded: formatAmount(row.refunded_cents),
    status: row.status as PaymentStatus,
    merchant_identifier: row.merchant_identifier,
    ...(custInfoObject && { cust_info: custInfoObject }),
    provider: row.bank_id,
    pcr: { particulars: row.particulars, code: row.code, reference: row.reference ?? '' },
    is_test_mode: row.mode === 'test',
    failure_reason: row.failure_reason,
    ...(row.recurring_consent_id && { recurring_consent_id: row.recurring_consent_id }),
    ...(row.subscription_id && { subscription_id: row.subscription_id }),
    created_at: iso(row.created_at),
    updated_at: iso(row.updated_at),
    completed_at: isoOrNull(row.completed_at),
  };
}
export type PaymentObject = ReturnType<typeof presentPayment>;
