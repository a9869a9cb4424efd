import { DateTime } from 'luxon';

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
export function periodWindow(period: Period, at: number, zone: string, anchorAt: number): { start: number; end: number } {
  const local = DateTime.fromMillis(at, { zone });
  switch (period) {
    case 'Day':
      return span(local.startOf('day'), { days: 1 });
    case 'Week':
      return span(local.startOf('week'), { weeks: 1 });
    case 'Fortnight': {
      const anchorWeek = DateTime.fromMillis(anchorAt, { zone }).startOf('week');
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

function span(start: DateTime, length: Record<string, number>): { start: number; end: number } {
  return { start: start.toMillis(), end: start.plus(length).toMillis() };
}

export function checkLimits(
  limits: ConsentLimits,
  earlier: CountedPayment[],
  amountCents: number,
  now: number,
  zone: string,
): LimitBreach | null {
  if (now < limits.fromAt || (limits.toAt !== null && now > limits.toAt)) return 'Dates';
  if (limits.maxPerPaymentCents !== null && amountCents > limits.maxPerPaymentCents) return 'MaximumAmount';
  if (limits.totalCount !== null && earlier.length + 1 > limits.totalCount) return 'TotalCount';
  const lifetime = earlier.reduce((sum, p) => sum + p.amountCents, 0);
  if (limits.totalAmountCents !== null && lifetime + amountCents > limits.totalAmountCents) return 'TotalAmount';
  const window = periodWindow(limits.period, now, zone, limits.fromAt);
  const inPeriod = earlier.filter((p) => p.executedAt >= window.start && p.executedAt < window.end);
  const periodSum = inPeriod.reduce((sum, p) => sum + p.amountCents, 0);
  if (periodSum + amountCents > limits.maxPerPeriodCents) return 'Frequency';
  if (limits.maxCountPerPeriod !== null && inPeriod.length + 1 > limits.maxCountPerPeriod) return 'Frequency';
  return null;
}
