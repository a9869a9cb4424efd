import { inZone, type LocalDateTime } from '../shared/zone.ts';
import { lastWindowCache } from '../shared/time.ts';

// The sandbox bank's own check of an enduring consent's limits. Pure: the caller loads the
// consent's earlier payments (all but rejected ones) and says what time it is at the bank.
// Periods are calendar periods in the bank's time zone; Luxon does the DST arithmetic.

export const Periods = ['Day', 'Week', 'Fortnight', 'Month', 'Quarter', 'Year'] as const;
export type Period = (typeof Periods)[number];

export type ConsentLimits = {
  fromAt: number;
  toAt: number | null;
  maxPerPaymentCents: number | null;
  period: Period;
  maxPerPeriodCents: number;
  maxCountPerPeriod: number | null;
  totalCount: number | null;
  totalAmountCents: number | null;
};

export type CountedPayment = { amountCents: number; executedAt: number };

/** Which limit an execution would break, named after the standard's error code suffix. */
export type LimitBreach = 'Dates' | 'MaximumAmount' | 'TotalCount' | 'TotalAmount' | 'Frequency';

/**
 * The calendar period containing `at`: [start, end). Weeks run Monday to Sunday; fortnights are
 * pairs of such weeks counted from the week containing the consent's start (`anchorAt`).
 */
export function periodWindow(
  period: Period,
  at: number,
  zone: string,
  anchorAt: number,
): { start: number; end: number } {
  // A fortnight's window also depends on the consent's start.
  const key = period === 'Fortnight' ? `${period} ${zone} ${anchorAt}` : `${period} ${zone}`;
  return recentWindows(key, at, () => calendarWindow(period, at, zone, anchorAt));
}

const recentWindows = lastWindowCache();

function calendarWindow(period: Period, at: number, zone: string, anchorAt: number): { start: number; end: number } {
  const local = inZone(at, zone);
  switch (period) {
    case 'Day':
      return span(local.startOf('day'), { days: 1 });
    case 'Week':
      return span(local.startOf('week'), { weeks: 1 });
    case 'Fortnight': {
      const anchorWeek = inZone(anchorAt, zone).startOf('week');
      const weeks = Math.floor(local.startOf('week').diff(anchorWeek, 'weeks').weeks + 1e-9);
      const offset = weeks - (((weeks % 2) + 2) % 2);
      return span(anchorWeek.plus({ weeks: offset }), { weeks: 2 });
    }
    case 'Month':
      return span(local.startOf('month'), { months: 1 });
    case 'Quarter':
      return span(local.startOf('quarter'), { quarters: 1 });
    case 'Year':
      return span(local.startOf('year'), { years: 1 });
  }
}

function span(start: LocalDateTime, length: Record<string, number>): { start: number; end: number } {
  return { start: start.toMillis(), end: start.plus(length).toMillis() };
}

/** What a consent has used so far: in total, and in the period that contains "now". */
export type UsageTotals = { count: number; amountCents: number; periodCount: number; periodAmountCents: number };

export function totalsOf(earlier: CountedPayment[], window: { start: number; end: number }): UsageTotals {
  const inPeriod = earlier.filter((p) => p.executedAt >= window.start && p.executedAt < window.end);
  return {
    count: earlier.length,
    amountCents: earlier.reduce((sum, p) => sum + p.amountCents, 0),
    periodCount: inPeriod.length,
    periodAmountCents: inPeriod.reduce((sum, p) => sum + p.amountCents, 0),
  };
}

export function checkLimits(
  limits: ConsentLimits,
  earlier: CountedPayment[],
  amountCents: number,
  now: number,
  zone: string,
): LimitBreach | null {
  return checkLimitTotals(
    limits,
    totalsOf(earlier, periodWindow(limits.period, now, zone, limits.fromAt)),
    amountCents,
    now,
  );
}

/** The same check over totals the caller summed (in SQL, over `periodWindow`), not a payment list. */
export function checkLimitTotals(
  limits: ConsentLimits,
  used: UsageTotals,
  amountCents: number,
  now: number,
): LimitBreach | null {
  if (now < limits.fromAt || (limits.toAt !== null && now > limits.toAt)) return 'Dates';
  if (limits.maxPerPaymentCents !== null && amountCents > limits.maxPerPaymentCents) return 'MaximumAmount';
  if (limits.totalCount !== null && used.count + 1 > limits.totalCount) return 'TotalCount';
  if (limits.totalAmountCents !== null && used.amountCents + amountCents > limits.totalAmountCents)
    return 'TotalAmount';
  if (used.periodAmountCents + amountCents > limits.maxPerPeriodCents) return 'Frequency';
  if (limits.maxCountPerPeriod !== null && used.periodCount + 1 > limits.maxCountPerPeriod) return 'Frequency';
  return null;
}
