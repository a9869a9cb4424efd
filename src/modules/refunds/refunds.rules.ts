import { AppError } from '../../shared/errors.ts';
import { displayAmount, formatAmount } from '../../shared/money.ts';
import { THIS_PERIOD, type CalendarPeriod } from '../consents/limits.ts';

// Refunds as plain arithmetic and wording (docs/refunds.md): what remains refundable of a payment,
// what a refund authority's limits allow, and the statement text the payer sees. No I/O.

export const RefundStatus = ['pending', 'successful', 'failed', 'requires_action'] as const;
export type RefundStatus = (typeof RefundStatus)[number];

/** Why a refund waits for the merchant to pay it by hand. */
export const ActionReason = ['payer_account_unknown', 'no_refund_authority', 'bank_outcome_unknown'] as const;
export type ActionReason = (typeof ActionReason)[number];

export const ACTION_REASON_TEXT: Record<ActionReason, string> = {
  payer_account_unknown: 'The payer’s bank did not tell us the account the payment came from',
  no_refund_authority: 'Refunds are not turned on: no refund authority at your bank',
  bank_outcome_unknown:
    'Your bank never answered whether it made this refund: look for it in your account before you pay it by hand',
};

/**
 * Whether a refund requiring action goes in the batch file for the merchant's bank: not one the bank
 * may already have made, which the merchant looks for in its account first.
 */
export function certainlyUnpaid(refund: { action_reason: string | null }): boolean {
  return refund.action_reason !== 'bank_outcome_unknown';
}

export const REASON_MAX_LENGTH = 60;
/** The payer's statement shows this as particulars, the original payment's particulars as code, and its reference. */
export const REFUND_PARTICULARS = 'Refund';

export type StatementText = { particulars: string; code: string; reference: string };

/** The refund's statement block: "Refund", the payment's particulars (V-…), the payment's reference. */
export function refundStatementText(payment: { particulars: string; reference: string | null }): StatementText {
  return { particulars: REFUND_PARTICULARS, code: payment.particulars, reference: payment.reference ?? '' };
}

/** What is left to refund of a payment. */
export function refundableCents(payment: { amount_cents: number; refunded_cents: number }): number {
  return Math.max(0, payment.amount_cents - payment.refunded_cents);
}

/** The refund of `cents` (null: everything left) of this payment, or why not. */
export function refundAmountOf(
  payment: { amount_cents: number; refunded_cents: number },
  cents: number | null,
): { ok: true; cents: number } | { ok: false; refundable: number } {
  const refundable = refundableCents(payment);
  const amount = cents ?? refundable;
  if (amount <= 0 || amount > refundable) return { ok: false, refundable };
  return { ok: true, cents: amount };
}

export function exceedsRefundableError(refundable: number): AppError {
  return new AppError(
    'refund_rejected.exceeds_refundable',
    refundable === 0
      ? 'This payment has been refunded in full: nothing remains to refund'
      : `The refund is more than remains refundable of this payment (${displayAmount(refundable)})`,
    { refundable: formatAmount(refundable) },
  );
}

/**
 * A refund authority's limit periods: calendar periods only, so a window needs no consent start
 * (recurring consents also have fortnights, counted from theirs).
 */
export const RefundPeriod = ['daily', 'weekly', 'monthly'] as const satisfies readonly CalendarPeriod[];
export type RefundPeriod = (typeof RefundPeriod)[number];

export type AuthorityLimits = { period: RefundPeriod; max_per_refund_cents: number; max_per_period_cents: number };
export type AuthorityRefusal = { limit: 'max_per_refund' | 'max_per_period'; limitCents: number; remaining: number };

/** Whether a refund of `cents` fits the authority's limits, with `usedCents` already counted in this period. */
export function authorityRefusal(limits: AuthorityLimits, usedCents: number, cents: number): AuthorityRefusal | null {
  if (cents > limits.max_per_refund_cents)
    return { limit: 'max_per_refund', limitCents: limits.max_per_refund_cents, remaining: limits.max_per_refund_cents };
  const left = Math.max(0, limits.max_per_period_cents - usedCents);
  if (cents > left) return { limit: 'max_per_period', limitCents: limits.max_per_period_cents, remaining: left };
  return null;
}

export function authorityRefusalError(refusal: AuthorityRefusal, period: RefundPeriod): AppError {
  const message =
    refusal.limit === 'max_per_refund'
      ? `The refund is more than your refund authority allows for one refund (${displayAmount(refusal.limitCents)})`
      : `The refund is more than your refund authority has left ${THIS_PERIOD[period]} (${displayAmount(refusal.remaining)} of ${displayAmount(refusal.limitCents)})`;
  return new AppError(`refund_rejected.${refusal.limit}`, message, {
    limit: formatAmount(refusal.limitCents),
    remaining: formatAmount(refusal.remaining),
    ...(refusal.limit === 'max_per_period' && { period }),
  });
}

/** The limits a test-mode merchant's refund authority at the sandbox bank has from the start (docs/refunds.md). */
export const TEST_AUTHORITY_LIMITS: AuthorityLimits = {
  period: 'monthly',
  max_per_refund_cents: 1_000_000,
  max_per_period_cents: 10_000_000,
};
