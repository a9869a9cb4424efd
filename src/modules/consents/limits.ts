import { inZone } from '../../shared/zone.ts';
import { displayAmount } from '../../shared/money.ts';
import { lastWindowCache } from '../../shared/time.ts';

/**
 * Recurring consent limits (docs/limits-and-schedule.md): pure arithmetic, no I/O.
 *
 * Rules
 * - Money is integer cents, times are epoch ms. Calendar maths is done by luxon in the service
 *   time zone (`SERVICE_TIME_ZONE`, Pacific/Auckland by default); nothing adds hours by hand.
 * - Period windows are calendar periods in that zone, start inclusive, end exclusive:
 *   `daily` is a local calendar day (local midnight to local midnight), `weekly` is Monday 00:00 to
 *   the next Monday 00:00, `fortnightly` is two such weeks, `monthly` is the 1st 00:00 to the next
 *   1st 00:00, `yearly` is 1 January 00:00 to the next 1 January 00:00. A window therefore lasts
 *   23 or 25 hours (a week 167 or 169 hours, a fortnight 335 or 337) when it contains a
 *   daylight-saving change.
 * - Fortnights are the bank's: pairs of weeks counted from the week that contains the consent's
 *   start at the bank (its FromDateTime, `anchor_at`). Any other pairing would let through here a
 *   payment the bank refuses, or refuse one it allows.
 * - Usage is the list of prior payments that count, each `{ amount_cents, at }`: successful,
 *   unconfirmed and in-flight payments count, failed ones do not. The caller filters; it may pass
 *   the list, or an aggregate it computed itself (SQL sums over the same window from `limitWindow`).
 *   A payment belongs to the period window that contains its `at` (when it was executed).
 * - In test mode the caller passes the amount asked for, not the 0.01 NZD actually moved.
 * - Atomicity under concurrency is the caller's job: lock the consent, read usage, check, insert
 *   the in-flight payment, all in one transaction. These functions only do the arithmetic.
 * - A payment passes when, with it included, every limit is still met: exactly at a limit passes,
 *   one cent (or one payment) over fails. `end_at` is the last instant payments may be taken:
 *   a payment at `end_at` passes, one millisecond later fails.
 * - Checks run in this order and the first broken limit is reported:
 *   1. `end_date`        `at > end_at`
 *   2. `max_per_payment` `amount > max_per_payment`
 *   3. `total_count`     `count + 1 > total_count`
 *   4. `total_amount`    `total + amount > total_amount`
 *   5. `max_per_period`  `period total + amount > max_per_period`
 *   The order puts permanent refusals first (the consent is over, or this amount can never pass)
 *   and the one that clears itself with time (the period) last.
 * - A refusal carries `limit` (cents, a count, or for `end_date` the end instant) and `remaining`
 *   (cents or payments still allowed, never negative; 0 for `end_date`; for `max_per_payment`
 *   the largest single payment), ready for an error's `params`.
 */

export const LimitPeriod = ['daily', 'weekly', 'fortnightly', 'monthly', 'yearly'] as const;
export type LimitPeriod = (typeof LimitPeriod)[number];

/** Periods whose windows follow from the calendar alone; a fortnight also needs the consent's start. */
export type CalendarPeriod = Exclude<LimitPeriod, 'fortnightly'>;

/** The current period in words, as a page or an error says it: "this week". */
export const THIS_PERIOD: Record<LimitPeriod, string> = {
  daily: 'today',
  weekly: 'this week',
  fortnightly: 'this fortnight',
  monthly: 'this month',
  yearly: 'this year',
};

export const LimitReason = ['end_date', 'max_per_payment', 'total_count', 'total_amount', 'max_per_period'] as const;
export type LimitReason = (typeof LimitReason)[number];

/** The limits as a recurring request states them, before there is a consent. */
export type RecurringTerms = {
  period: LimitPeriod;
  max_per_period_cents: number;
  max_per_payment_cents: number | null;
  total_count: number | null;
  total_amount_cents: number | null;
  end_at: number | null;
};

/** A consent's limits: its terms and its start at the bank, which fortnights are counted from. */
export type RecurringLimits = RecurringTerms & { anchor_at: number };

/** What a consent's period window depends on. */
export type PeriodRule = Pick<RecurringLimits, 'period' | 'anchor_at'>;

/** A prior payment that counts towards the limits. */
export type CountedPayment = { amount_cents: number; at: number };

export type UsageTotals = { amount_cents: number; count: number };

/** Usage already summed by the caller: `period` over `limitWindow(limits, at, zone)`. */
export type UsageAggregate = { total: UsageTotals; period: UsageTotals };

export type Usage = readonly CountedPayment[] | UsageAggregate;

export type Window = { start: number; end: number };

export type LimitRefusal = {
  ok: false;
  reason: LimitReason;
  /** The limit broken: cents for amounts, a number of payments for `total_count`, epoch ms for `end_date`. */
  limit: number;
  /** What is still allowed in the limit's unit (never negative). */
  remaining: number;
  unit: 'cents' | 'count' | 'time';
  /** For `max_per_period`: the current window, so a caller can say when it resets (`end`). */
  window?: Window;
};

export type LimitCheck = { ok: true } | LimitRefusal;

export { DEFAULT_ZONE } from '../../shared/zone.ts';
import { DEFAULT_ZONE } from '../../shared/zone.ts';

const luxonUnit = { daily: 'day', weekly: 'week', monthly: 'month', yearly: 'year' } as const;
const oneStep = { daily: { days: 1 }, weekly: { weeks: 1 }, monthly: { months: 1 }, yearly: { years: 1 } } as const;
const periodWords = {
  daily: 'a day',
  weekly: 'a week',
  fortnightly: 'a fortnight',
  monthly: 'a month',
  yearly: 'a year',
} as const;

/**
 * The period of `period` in `zone` that contains `at`: `start` inclusive, `end` exclusive. A
 * fortnight is counted from the week containing `anchorAt`, the consent's start at the bank.
 */
export function periodWindow(period: CalendarPeriod, at: number, zone?: string): Window;
export function periodWindow(period: LimitPeriod, at: number, zone: string, anchorAt: number): Window;
export function periodWindow(period: LimitPeriod, at: number, zone: string = DEFAULT_ZONE, anchorAt?: number): Window {
  if (period !== 'fortnightly') return recentWindows(`${period} ${zone}`, at, () => calendarWindow(period, at, zone));
  if (anchorAt === undefined) throw new RangeError('periodWindow: a fortnight needs the start it is counted from');
  return recentWindows(`${period} ${zone} ${anchorAt}`, at, () => fortnightWindow(at, zone, anchorAt));
}

/** The window of a consent's period that contains `at`. */
export function limitWindow(rule: PeriodRule, at: number, zone: string = DEFAULT_ZONE): Window {
  return periodWindow(rule.period, at, zone, rule.anchor_at);
}

const recentWindows = lastWindowCache();

function localTime(at: number, zone: string) {
  const local = inZone(at, zone);
  if (!local.isValid) throw new RangeError(`periodWindow: invalid time ${at} or zone ${zone}`);
  return local;
}

function calendarWindow(period: CalendarPeriod, at: number, zone: string): Window {
  const unit = luxonUnit[period];
  // Luxon's weeks are ISO weeks: they start on Monday.
  const start = localTime(at, zone).startOf(unit);
  // Adding calendar units keeps local wall time, so this is the next local midnight whatever the DST.
  const end = start.plus(oneStep[period]).startOf(unit);
  return { start: start.toMillis(), end: end.toMillis() };
}

/**
 * The bank's fortnight (src/sandbox-bank/sandbox.limits.ts): the first fortnight is the week that
 * contains the anchor and the week after it, and the rest follow two weeks at a time, either way.
 */
function fortnightWindow(at: number, zone: string, anchorAt: number): Window {
  const firstWeek = localTime(anchorAt, zone).startOf('week');
  // Both are local Mondays at midnight, so the calendar difference is a whole number of weeks;
  // the epsilon only absorbs floating point in Luxon's diff.
  const weeks = Math.floor(localTime(at, zone).startOf('week').diff(firstWeek, 'weeks').weeks + 1e-9);
  const start = firstWeek.plus({ weeks: weeks - mod(weeks, 2) });
  return { start: start.toMillis(), end: start.plus({ weeks: 2 }).toMillis() };
}

/** The remainder that is never negative: weeks before the anchor pair up the same way. */
function mod(n: number, m: number): number {
  return ((n % m) + m) % m;
}

function isAggregate(usage: Usage): usage is UsageAggregate {
  return !Array.isArray(usage);
}

/** Sums a list of counted payments into totals and the totals of the window containing `at`. */
export function aggregateUsage(
  usage: Usage,
  rule: PeriodRule,
  at: number,
  zone: string = DEFAULT_ZONE,
): UsageAggregate {
  if (isAggregate(usage)) return usage;
  const window = limitWindow(rule, at, zone);
  const total = { amount_cents: 0, count: 0 };
  const inPeriod = { amount_cents: 0, count: 0 };
  for (const payment of usage as readonly CountedPayment[]) {
    total.amount_cents += payment.amount_cents;
    total.count += 1;
    if (payment.at >= window.start && payment.at < window.end) {
      inPeriod.amount_cents += payment.amount_cents;
      inPeriod.count += 1;
    }
  }
  return { total, period: inPeriod };
}

function refuse(reason: LimitReason, limit: number, remaining: number, unit: LimitRefusal['unit']): LimitRefusal {
  return { ok: false, reason, limit, remaining: Math.max(0, remaining), unit };
}

/**
 * Whether a payment of `amountCents` at `at` fits the limits, given the payments that already
 * count. The first broken limit in the documented order is returned.
 */
export function checkLimits(
  limits: RecurringLimits,
  usage: Usage,
  amountCents: number,
  at: number,
  zone: string = DEFAULT_ZONE,
): LimitCheck {
  if (!Number.isSafeInteger(amountCents) || amountCents < 0)
    throw new RangeError(`checkLimits: amount must be whole cents, got ${amountCents}`);
  if (limits.end_at !== null && at > limits.end_at) return refuse('end_date', limits.end_at, 0, 'time');
  if (limits.max_per_payment_cents !== null && amountCents > limits.max_per_payment_cents) {
    return refuse('max_per_payment', limits.max_per_payment_cents, limits.max_per_payment_cents, 'cents');
  }
  const used = aggregateUsage(usage, limits, at, zone);
  if (limits.total_count !== null && used.total.count + 1 > limits.total_count) {
    return refuse('total_count', limits.total_count, limits.total_count - used.total.count, 'count');
  }
  if (limits.total_amount_cents !== null && used.total.amount_cents + amountCents > limits.total_amount_cents) {
    return refuse(
      'total_amount',
      limits.total_amount_cents,
      limits.total_amount_cents - used.total.amount_cents,
      'cents',
    );
  }
  if (used.period.amount_cents + amountCents > limits.max_per_period_cents) {
    const refusal = refuse(
      'max_per_period',
      limits.max_per_period_cents,
      limits.max_per_period_cents - used.period.amount_cents,
      'cents',
    );
    return { ...refusal, window: limitWindow(limits, at, zone) };
  }
  return { ok: true };
}

export type UsageSummary = {
  period: { start: number; end: number; amount_cents: number; count: number; remaining_cents: number };
  total: { amount_cents: number; count: number; remaining_cents: number | null; remaining_count: number | null };
};

/**
 * Usage in the current period and in total, for display. `remaining_cents` in the period is
 * what the period limit still allows (the per-payment cap is not folded in); totals are null
 * when the consent has no such cap.
 */
export function usageSummary(
  limits: RecurringLimits,
  usage: Usage,
  at: number,
  zone: string = DEFAULT_ZONE,
): UsageSummary {
  const window = limitWindow(limits, at, zone);
  const used = aggregateUsage(usage, limits, at, zone);
  return {
    period: {
      start: window.start,
      end: window.end,
      amount_cents: used.period.amount_cents,
      count: used.period.count,
      remaining_cents: Math.max(0, limits.max_per_period_cents - used.period.amount_cents),
    },
    total: {
      amount_cents: used.total.amount_cents,
      count: used.total.count,
      remaining_cents:
        limits.total_amount_cents === null ? null : Math.max(0, limits.total_amount_cents - used.total.amount_cents),
      remaining_count: limits.total_count === null ? null : Math.max(0, limits.total_count - used.total.count),
    },
  };
}

/**
 * An end as the payer reads it, in the words of a subscription's end (subscriptions/schedule.ts):
 * "30 June 2027", or "5:30pm on 30 June 2027" when it is not the end of a day. The month is written
 * out in New Zealand English, as every other date the payer sees.
 */
function describeEnd(endAt: number, zone: string): string {
  const local = inZone(endAt, zone).setLocale('en-NZ');
  // An end given as a date is stored as the last millisecond of that local day: show the date only.
  const endOfDay = local.endOf('day').toMillis() === endAt;
  return endOfDay
    ? local.toFormat('d LLLL yyyy')
    : `${local.toFormat('h:mm')}${local.toFormat('a').toLowerCase()} on ${local.toFormat('d LLLL yyyy')}`;
}

/**
 * The limits in plain words for the payer page, for example
 * "up to $50.00 a payment, $100.00 a week, until 31 December 2027".
 */
export function describeLimits(limits: RecurringTerms, zone: string = DEFAULT_ZONE): string {
  const parts: string[] = [];
  if (limits.max_per_payment_cents !== null) parts.push(`${displayAmount(limits.max_per_payment_cents)} a payment`);
  parts.push(`${displayAmount(limits.max_per_period_cents)} ${periodWords[limits.period]}`);
  if (limits.total_count !== null)
    parts.push(`${limits.total_count} ${limits.total_count === 1 ? 'payment' : 'payments'} in total`);
  if (limits.total_amount_cents !== null) parts.push(`${displayAmount(limits.total_amount_cents)} in total`);
  if (limits.end_at !== null) parts.push(`until ${describeEnd(limits.end_at, zone)}`);
  return `up to ${parts.join(', ')}`;
}
