import { randomBytes } from 'node:crypto';
import { sha256Hex } from '../../shared/crypto.ts';
import { paymentRejected, type AppError } from '../../shared/errors.ts';
import { amountValue } from '../../shared/money.ts';
import { iso } from '../../shared/time.ts';
import type { EnduringPeriod } from '../banks/bank-connector.ts';
import type { RecurringConsentsTable } from './consents.tables.ts';
import type { LimitPeriod, LimitRefusal, RecurringLimits, UsageTotals, Window } from './limits.ts';

// The rules of recurring consents that need no I/O: the token, the execution fingerprint, the
// consent's limits, usage counters and effective status, and how a refusal reads in an error.

export const ConsentStatus = ['active', 'revoked', 'expired'] as const;
export type ConsentStatus = (typeof ConsentStatus)[number];

export type ConsentLimitsRow = Pick<
  RecurringConsentsTable,
  | 'period'
  | 'max_per_period_cents'
  | 'max_per_payment_cents'
  | 'total_count'
  | 'total_amount_cents'
  | 'end_at'
  | 'starts_at'
>;

const TOKEN_PREFIX = 'rct_';
const TOKEN_BYTES = 32;

/** A new consent token: 256 random bits, prefixed so secret scanners and people recognise it. */
export function newConsentToken(): string {
  return TOKEN_PREFIX + randomBytes(TOKEN_BYTES).toString('base64url');
}

/** What is stored of a token: its SHA-256. A token of the wrong shape still hashes (and matches nothing). */
export function hashConsentToken(token: string): string {
  return sha256Hex(token);
}

/** The parameters an idempotency key is bound to; the same key with other parameters is a 409. */
export function executionFingerprint(input: {
  tokenHash: string;
  amountCents: number;
  reference: string | null;
  merchantIdentifier: string | null;
}): string {
  return sha256Hex(
    JSON.stringify(['execute.v1', input.tokenHash, input.amountCents, input.reference, input.merchantIdentifier]),
  );
}

export function limitsOf(row: ConsentLimitsRow): RecurringLimits {
  return {
    period: row.period as LimitPeriod,
    max_per_period_cents: Number(row.max_per_period_cents),
    max_per_payment_cents: row.max_per_payment_cents === null ? null : Number(row.max_per_payment_cents),
    total_count: row.total_count === null ? null : Number(row.total_count),
    total_amount_cents: row.total_amount_cents === null ? null : Number(row.total_amount_cents),
    end_at: row.end_at === null ? null : Number(row.end_at),
    anchor_at: Number(row.starts_at),
  };
}

/** Payments that count towards a consent's limits: done, maybe done, or being executed now. */
export const COUNTED_STATUSES = ['successful', 'unconfirmed', 'awaiting-consent'] as const;

export function countsTowardLimits(status: string): boolean {
  return (COUNTED_STATUSES as readonly string[]).includes(status);
}

/**
 * How a payment's move from one status to another changes the payments that count: -1 when it
 * stops counting (failed, cancelled), +1 when it starts, 0 otherwise.
 */
export function countedChange(from: string, to: string): -1 | 0 | 1 {
  return ((countsTowardLimits(to) ? 1 : 0) - (countsTowardLimits(from) ? 1 : 0)) as -1 | 0 | 1;
}

/**
 * The usage counters kept on the consent row. Totals cover every counted payment; the period
 * counters cover the payments created in one calendar window, [period_start, period_end), and
 * a null window means none is held (after the migration, say).
 */
export type UsageCounters = Pick<
  RecurringConsentsTable,
  'used_count' | 'used_cents' | 'period_start' | 'period_end' | 'period_count' | 'period_cents'
>;

export const NO_USAGE: UsageCounters = {
  used_count: 0,
  used_cents: 0,
  period_start: null,
  period_end: null,
  period_count: 0,
  period_cents: 0,
};

export function totalUsageOf(row: UsageCounters): UsageTotals {
  return { amount_cents: Number(row.used_cents), count: Number(row.used_count) };
}

/** The period counters when they hold exactly `window`; null when that window's payments must be summed. */
export function periodUsageOf(row: UsageCounters, window: Window): UsageTotals | null {
  if (row.period_start === null || row.period_end === null) return null;
  if (Number(row.period_start) !== window.start || Number(row.period_end) !== window.end) return null;
  return { amount_cents: Number(row.period_cents), count: Number(row.period_count) };
}

/** The standard's enduring-consent period for our calendar period. */
export function enduringPeriodOf(period: LimitPeriod): EnduringPeriod {
  return (
    { daily: 'Daily', weekly: 'Weekly', fortnightly: 'Fortnightly', monthly: 'Monthly', yearly: 'Annual' } as const
  )[period];
}

/** The status as of `now`: an active consent past its end is expired before the expiry job has run. */
export function effectiveConsentStatus(
  row: Pick<RecurringConsentsTable, 'status' | 'end_at'>,
  now: number,
): ConsentStatus {
  if (row.status === 'active' && row.end_at !== null && now > Number(row.end_at)) return 'expired';
  return row.status as ConsentStatus;
}

const periodNoun = {
  daily: 'day',
  weekly: 'week',
  fortnightly: 'fortnight',
  monthly: 'month',
  yearly: 'year',
} as const;

/** The 422 for a limit refusal, with the limit and what remains in the consent's units. */
export function limitRefusalError(refusal: LimitRefusal, period: LimitPeriod, amountCents: number): AppError {
  const asked = amountValue(amountCents);
  switch (refusal.reason) {
    case 'end_date':
      return paymentRejected(
        'end_date',
        `The consent ended at ${iso(refusal.limit)}; no payments can be taken after its end_date`,
        {
          end_date: iso(refusal.limit),
        },
      );
    case 'max_per_payment':
      return paymentRejected(
        'max_per_payment',
        `${asked} is more than the consent allows for one payment (${amountValue(refusal.limit)})`,
        {
          amount: asked,
          limit: amountValue(refusal.limit),
          remaining: amountValue(refusal.remaining),
        },
      );
    case 'total_count':
      return paymentRejected(
        'total_count',
        `The consent allows ${refusal.limit} payments in total and ${refusal.remaining} remain`,
        {
          limit: refusal.limit,
          remaining: refusal.remaining,
        },
      );
    case 'total_amount':
      return paymentRejected(
        'total_amount',
        `${asked} is more than the ${amountValue(refusal.remaining)} left of the consent's total of ${amountValue(refusal.limit)}`,
        {
          amount: asked,
          limit: amountValue(refusal.limit),
          remaining: amountValue(refusal.remaining),
        },
      );
    case 'max_per_period':
      return paymentRejected(
        'max_per_period',
        `${asked} is more than the ${amountValue(refusal.remaining)} left of the consent's ${amountValue(refusal.limit)} a ${periodNoun[period]}`,
        {
          amount: asked,
          limit: amountValue(refusal.limit),
          remaining: amountValue(refusal.remaining),
          period,
          period_start: iso(refusal.window!.start),
          period_end: iso(refusal.window!.end),
        },
      );
  }
}

export function consentRevokedError(): AppError {
  return paymentRejected(
    'consent_revoked',
    'The recurring consent has been revoked; no further payments can be taken with it',
    {},
  );
}

export function consentNotActiveError(status: string): AppError {
  return paymentRejected('consent_not_active', `The recurring consent is ${status}; payments need an active consent`, {
    status,
  });
}
