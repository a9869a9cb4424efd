import { amountValue, formatAmount } from '../../shared/money.ts';
import { iso, isoOrNull } from '../../shared/time.ts';
import type { RecurringOptions, SubscriptionOptions } from './requests.rules.ts';
import type { RequestRow } from './requests.tables.ts';

export function requestUrl(publicBaseUrl: string, id: string): string {
  return `${publicBaseUrl}/pay/${id}`;
}

export function recurringOptionsOf(row: Pick<RequestRow, 'recurring_options'>): RecurringOptions | null {
  return row.recurring_options ? (JSON.parse(row.recurring_options) as RecurringOptions) : null;
}

export function subscriptionOptionsOf(row: Pick<RequestRow, 'subscription_options'>): SubscriptionOptions | null {
  return row.subscription_options ? (JSON.parse(row.subscription_options) as SubscriptionOptions) : null;
}

function presentRecurring(options: RecurringOptions) {
  return {
    period: options.period,
    max_per_period: amountValue(options.max_per_period_cents),
    ...(options.max_per_payment_cents !== null && { max_per_payment: amountValue(options.max_per_payment_cents) }),
    ...(options.total_count !== null && { total_count: options.total_count }),
    ...(options.total_amount_cents !== null && { total_amount: amountValue(options.total_amount_cents) }),
    ...(options.end_at !== null && { end_date: iso(options.end_at) }),
  };
}

function presentSubscription(options: SubscriptionOptions) {
  return {
    amount: amountValue(options.amount_cents),
    period: options.period,
    ...(options.start_at !== null && { start_date: iso(options.start_at) }),
    ...(options.end_at !== null && { end_date: iso(options.end_at) }),
    ...(options.total_count !== null && { total_count: options.total_count }),
  };
}

/** The request object of the API (docs/openapi.json); the only code that knows its JSON shape. */
export function presentRequest(row: RequestRow, publicBaseUrl: string) {
  const recurring = recurringOptionsOf(row);
  const subscription = subscriptionOptionsOf(row);
  return {
    id: row.id,
    url: requestUrl(publicBaseUrl, row.id),
    status: row.status as 'active' | 'paid' | 'expired' | 'deleted',
    type: row.type as 'single' | 'multi',
    message: row.message,
    amount: row.amount_cents === null ? null : formatAmount(row.amount_cents),
    bank_account_id: row.bank_account_id,
    user_id: row.user_id,
    merchant_identifier: row.merchant_identifier,
    pcr: { reference: row.reference ?? '' },
    flow: row.flow,
    qr_data: row.qr_data,
    logo_image_url: row.logo_image_url,
    banner_image_url: row.banner_image_url,
    min_payment_amount: row.min_payment_cents,
    max_payment_amount: row.max_payment_cents,
    is_test_mode: row.mode === 'test',
    is_donation: row.is_donation === 1,
    add_surcharge: row.add_surcharge === 1,
    surcharge_optional: row.surcharge_optional === 1,
    allow_dynamic_amount: row.allow_dynamic_amount === 1,
    suggested_amounts: row.suggested_amounts,
    allow_marketing_opt_in: row.allow_marketing_opt_in === 1,
    collect_customer_phone: row.collect_customer_phone === 1,
    require_customer_phone: row.require_customer_phone === 1,
    require_customer_basic_info: row.require_customer_basic_info === 1,
    require_customer_address: row.require_customer_address === 1,
    success_redirect_url: row.success_redirect_url,
    failure_redirect_url: row.failure_redirect_url,
    ...(recurring && { recurring_options: presentRecurring(recurring) }),
    ...(subscription && { subscription_options: presentSubscription(subscription) }),
    created_at: iso(row.created_at),
    updated_at: iso(row.updated_at),
    ...(row.expires_at !== null && { expires_at: iso(row.expires_at) }),
    deleted_at: isoOrNull(row.deleted_at),
  };
}
export type RequestObject = ReturnType<typeof presentRequest>;
