import { test, describe } from 'node:test';
import assert from 'node:assert/strict';
import fc from 'fast-check';
import { inZone, localAt } from '../../shared/zone.ts';
import { periodWindow as bankPeriodWindow } from '../../sandbox-bank/sandbox.limits.ts';
import {
  aggregateUsage,
  checkLimits,
  describeLimits,
  periodWindow,
  usageSummary,
  type CountedPayment,
  type LimitPeriod,
  type LimitReason,
  type RecurringLimits,
  type RecurringTerms,
} from './limits.ts';
import type { RecurringOptions } from '../requests/requests.rules.ts';

// The options a recurring request stores are usable as a consent's terms as they are.
const storedOptionsAreTerms = (options: RecurringOptions): RecurringTerms => options;
void storedOptionsAreTerms;

const NZ = 'Pacific/Auckland';
const HOUR = 3_600_000;
const DAY = 24 * HOUR;

/** An instant from a local wall time, for writing cases readably. */
function local(iso: string, zone = NZ): number {
  const parsed = localAt(iso, zone);
  assert.ok(parsed.isValid, iso);
  return parsed.toMillis();
}

/** A consent's start at the bank, where only a fortnight's window would depend on it. */
const STARTED = local('2026-01-05');

// ---- An independent model: local dates from Intl, periods found by walking calendar dates,
// ---- window edges found by searching instants. It shares no code with limits.ts.

const formatters = new Map<string, Intl.DateTimeFormat>();
function localDate(at: number, zone: string): { y: number; m: number; d: number } {
  let format = formatters.get(zone);
  if (!format) {
    format = new Intl.DateTimeFormat('en-US', { timeZone: zone, year: 'numeric', month: 'numeric', day: 'numeric' });
    formatters.set(zone, format);
  }
  const parts = Object.fromEntries(format.formatToParts(at).map((p) => [p.type, p.value]));
  return { y: Number(parts.year), m: Number(parts.month), d: Number(parts.day) };
}

const pad = (n: number, w = 2) => String(n).padStart(w, '0');

/** The local date of `at` as a count of days, so weeks can be counted by subtraction. */
function localDayNumber(at: number, zone: string): number {
  const { y, m, d } = localDate(at, zone);
  return Date.UTC(y, m - 1, d) / DAY;
}

/** The day number of the Monday on or before a day number (day 0, 1970-01-01, was a Thursday). */
const mondayOf = (day: number) => day - ((((day + 3) % 7) + 7) % 7);

const dateOfDay = (day: number) => new Date(day * DAY).toISOString().slice(0, 10);

/** A sortable key naming the calendar period that contains a local date (`anchor`: the consent's start). */
function periodKey(period: LimitPeriod, at: number, zone: string, anchor: number): string {
  const { y, m } = localDate(at, zone);
  const day = localDayNumber(at, zone);
  switch (period) {
    case 'daily':
      return dateOfDay(day);
    case 'weekly':
      return dateOfDay(mondayOf(day));
    case 'fortnightly': {
      // Pairs of weeks, the first pair starting on the Monday of the anchor's week.
      const firstMonday = mondayOf(localDayNumber(anchor, zone));
      const weeks = (mondayOf(day) - firstMonday) / 7;
      return dateOfDay(firstMonday + 14 * Math.floor(weeks / 2));
    }
    case 'monthly':
      return `${pad(y, 4)}-${pad(m)}`;
    case 'yearly':
      return pad(y, 4);
  }
}

/** Smallest instant in [lo, hi] for which `pred` holds (pred is monotone: false then true). */
function firstInstant(lo: number, hi: number, pred: (t: number) => boolean): number {
  while (lo < hi) {
    const mid = Math.floor((lo + hi) / 2);
    if (pred(mid)) hi = mid;
    else lo = mid + 1;
  }
  return lo;
}

function modelWindow(period: LimitPeriod, at: number, zone: string, anchor: number): { start: number; end: number } {
  const key = periodKey(period, at, zone, anchor);
  const span = period === 'yearly' ? 370 * DAY : 40 * DAY;
  return {
    start: firstInstant(at - span, at, (t) => periodKey(period, t, zone, anchor) >= key),
    end: firstInstant(at, at + span, (t) => periodKey(period, t, zone, anchor) > key),
  };
}

function modelCheck(
  limits: RecurringLimits,
  usage: CountedPayment[],
  amount: number,
  at: number,
  zone: string,
): LimitReason | 'ok' {
  const key = periodKey(limits.period, at, zone, limits.anchor_at);
  const total = usage.reduce((sum, p) => sum + p.amount_cents, 0);
  const inPeriod = usage
    .filter((p) => periodKey(limits.period, p.at, zone, limits.anchor_at) === key)
    .reduce((sum, p) => sum + p.amount_cents, 0);
  if (limits.end_at !== null && at > limits.end_at) return 'end_date';
  if (limits.max_per_payment_cents !== null && amount > limits.max_per_payment_cents) return 'max_per_payment';
  if (limits.total_count !== null && usage.length >= limits.total_count) return 'total_count';
  if (limits.total_amount_cents !== null && total + amount > limits.total_amount_cents) return 'total_amount';
  if (inPeriod + amount > limits.max_per_period_cents) return 'max_per_period';
  return 'ok';
}

// ---- Generators

const zones = fc.constantFrom(NZ, NZ, NZ, 'Australia/Lord_Howe', 'America/New_York', 'Europe/London', 'UTC');
const periods = fc.constantFrom<LimitPeriod>('daily', 'weekly', 'fortnightly', 'monthly', 'yearly');
// 2020-01-01 .. 2036-01-01, biased towards the NZ DST changes of 2026-09-27 and 2027-04-04.
const instants = fc.oneof(
  fc.integer({ min: Date.UTC(2020, 0, 1), max: Date.UTC(2036, 0, 1) }),
  fc.integer({ min: local('2026-09-20'), max: local('2026-10-05') }),
  fc.integer({ min: local('2027-03-28'), max: local('2027-04-12') }),
);
// A consent's start: before the instant, as executions follow it, and now and then after it.
const anchors = (at: number) => fc.integer({ min: at - 400 * DAY, max: at + 20 * DAY });
const cents = fc.integer({ min: 0, max: 20_000 });
/** How far back usage reaches: a year's payments for a yearly period, weeks for the rest. */
const reach = (period: LimitPeriod) => (period === 'yearly' ? 400 * DAY : 40 * DAY);
const nullable = <T>(arb: fc.Arbitrary<T>) => fc.option(arb, { nil: null, freq: 3 });

const scenario = fc.record({ at: instants, zone: zones, period: periods }).chain(({ at, zone, period }) =>
  fc.record({
    at: fc.constant(at),
    zone: fc.constant(zone),
    amount: cents,
    usage: fc.array(fc.record({ amount_cents: cents, at: fc.integer({ min: at - reach(period), max: at }) }), {
      maxLength: 12,
    }),
    limits: fc.record({
      period: fc.constant(period),
      anchor_at: anchors(at),
      max_per_period_cents: fc.integer({ min: 0, max: 100_000 }),
      max_per_payment_cents: nullable(fc.integer({ min: 0, max: 20_000 })),
      total_count: nullable(fc.integer({ min: 0, max: 15 })),
      total_amount_cents: nullable(fc.integer({ min: 0, max: 300_000 })),
      end_at: nullable(fc.integer({ min: at - 2 * DAY, max: at + 2 * DAY })),
    }),
  }),
);

describe('periodWindow', () => {
  const withAnchor = instants.chain((at) => fc.tuple(fc.constant(at), anchors(at)));

  test('matches the calendar-walking model in every zone, across DST changes', () => {
    fc.assert(
      fc.property(periods, withAnchor, zones, (period, [at, anchor], zone) => {
        assert.deepEqual(periodWindow(period, at, zone, anchor), modelWindow(period, at, zone, anchor));
      }),
      { numRuns: 400 },
    );
  });

  test('the window contains its instant and windows tile time: no gap, no overlap', () => {
    fc.assert(
      fc.property(periods, withAnchor, zones, (period, [at, anchor], zone) => {
        const window = periodWindow(period, at, zone, anchor);
        assert.ok(window.start <= at && at < window.end);
        assert.deepEqual(periodWindow(period, window.start, zone, anchor), window);
        assert.deepEqual(periodWindow(period, window.end - 1, zone, anchor), window);
        assert.equal(periodWindow(period, window.end, zone, anchor).start, window.end);
        assert.equal(periodWindow(period, window.start - 1, zone, anchor).end, window.start);
      }),
    );
  });

  test('a fortnight is 14 local days from a Monday at midnight: 336 hours, one either way across DST', () => {
    fc.assert(
      fc.property(withAnchor, zones, ([at, anchor], zone) => {
        const window = periodWindow('fortnightly', at, zone, anchor);
        const start = inZone(window.start, zone);
        assert.equal(start.weekday, 1);
        assert.equal(start.toFormat('HH:mm'), '00:00');
        assert.equal(localDayNumber(window.end, zone) - localDayNumber(window.start, zone), 14);
        assert.ok(Math.abs(window.end - window.start - 336 * HOUR) <= HOUR);
      }),
    );
  });

  test('the first fortnight starts on the Monday of the week the consent starts in', () => {
    fc.assert(
      fc.property(instants, zones, (anchor, zone) => {
        const first = periodWindow('fortnightly', anchor, zone, anchor);
        assert.equal(first.start, inZone(anchor, zone).startOf('week').toMillis());
      }),
    );
  });

  test("a fortnight is the sandbox bank's fortnight for the same consent start", () => {
    fc.assert(
      fc.property(withAnchor, zones, ([at, anchor], zone) => {
        assert.deepEqual(
          periodWindow('fortnightly', at, zone, anchor),
          bankPeriodWindow('Fortnight', at, zone, anchor),
        );
      }),
      { numRuns: 500 },
    );
  });

  test("a year is the sandbox bank's year: 1 January at local midnight to the next", () => {
    fc.assert(
      fc.property(withAnchor, zones, ([at, anchor], zone) => {
        const year = periodWindow('yearly', at, zone);
        assert.deepEqual(year, bankPeriodWindow('Year', at, zone, anchor));
        assert.equal(inZone(year.start, zone).toFormat('MM-dd HH:mm'), '01-01 00:00');
      }),
    );
  });

  test('a fortnight needs the start it is counted from', () => {
    assert.throws(
      () => (periodWindow as (...args: unknown[]) => unknown)('fortnightly', local('2027-06-15'), NZ),
      RangeError,
    );
  });

  test('a day rolls over at local midnight', () => {
    assert.deepEqual(periodWindow('daily', local('2027-06-15T23:59:59.999'), NZ), {
      start: local('2027-06-15'),
      end: local('2027-06-16'),
    });
    assert.deepEqual(periodWindow('daily', local('2027-06-16T00:00'), NZ), {
      start: local('2027-06-16'),
      end: local('2027-06-17'),
    });
  });

  test('a week runs Monday 00:00 to Monday 00:00', () => {
    // 2027-06-13 is a Sunday, 2027-06-14 a Monday.
    assert.deepEqual(periodWindow('weekly', local('2027-06-13T23:59:59.999'), NZ), {
      start: local('2027-06-07'),
      end: local('2027-06-14'),
    });
    assert.deepEqual(periodWindow('weekly', local('2027-06-14T00:00'), NZ), {
      start: local('2027-06-14'),
      end: local('2027-06-21'),
    });
  });

  test('a month runs from the 1st at local midnight', () => {
    assert.deepEqual(periodWindow('monthly', local('2027-01-31T23:59:59.999'), NZ), {
      start: local('2027-01-01'),
      end: local('2027-02-01'),
    });
    assert.deepEqual(periodWindow('monthly', local('2027-02-01T00:00'), NZ), {
      start: local('2027-02-01'),
      end: local('2027-03-01'),
    });
  });

  test('fortnights pair weeks from the consent start, whichever weekday it falls on', () => {
    // A consent that starts on Thursday 7 January 2027: its fortnights start on Mondays 4 and 18 January.
    const anchor = local('2027-01-07T15:20');
    assert.deepEqual(periodWindow('fortnightly', local('2027-01-04T00:00'), NZ, anchor), {
      start: local('2027-01-04'),
      end: local('2027-01-18'),
    });
    assert.deepEqual(
      periodWindow('fortnightly', local('2027-01-17T23:59:59.999'), NZ, anchor).end,
      local('2027-01-18'),
    );
    assert.deepEqual(periodWindow('fortnightly', local('2027-01-18T00:00'), NZ, anchor), {
      start: local('2027-01-18'),
      end: local('2027-02-01'),
    });
    // A consent that starts a week later pairs the weeks the other way.
    assert.deepEqual(periodWindow('fortnightly', local('2027-01-18T00:00'), NZ, local('2027-01-11T09:00')), {
      start: local('2027-01-11'),
      end: local('2027-01-25'),
    });
  });

  test('a fortnight that contains the end of DST is 337 hours, one that contains its start 335', () => {
    const anchor = local('2027-03-22T10:00'); // Monday 22 March: fortnights from 22 March and 5 April
    const autumn = periodWindow('fortnightly', local('2027-04-04T12:00'), NZ, anchor);
    assert.deepEqual(autumn, { start: local('2027-03-22'), end: local('2027-04-05') });
    assert.equal(autumn.end - autumn.start, 337 * HOUR);
    const spring = periodWindow('fortnightly', local('2027-09-26T12:00'), NZ, anchor);
    assert.deepEqual(spring, { start: local('2027-09-20'), end: local('2027-10-04') });
    assert.equal(spring.end - spring.start, 335 * HOUR);
  });

  test('a year runs from 1 January at local midnight, across 31 December', () => {
    assert.deepEqual(periodWindow('yearly', local('2027-12-31T23:59:59.999'), NZ), {
      start: local('2027-01-01'),
      end: local('2028-01-01'),
    });
    assert.deepEqual(periodWindow('yearly', local('2028-01-01T00:00'), NZ), {
      start: local('2028-01-01'),
      end: local('2029-01-01'),
    });
    assert.equal(new Date(local('2028-01-01')).toISOString(), '2027-12-31T11:00:00.000Z'); // NZDT (+13)
  });

  test('DST starts on 2026-09-27 in New Zealand: that day and its week are an hour short', () => {
    const day = periodWindow('daily', local('2026-09-27T12:00'), NZ);
    assert.equal(day.end - day.start, 23 * HOUR);
    assert.equal(new Date(day.start).toISOString(), '2026-09-26T12:00:00.000Z'); // 00:00 NZST (+12)
    assert.equal(new Date(day.end).toISOString(), '2026-09-27T11:00:00.000Z'); // 00:00 NZDT (+13)
    const week = periodWindow('weekly', local('2026-09-27T23:59:59.999'), NZ);
    assert.deepEqual(week, { start: local('2026-09-21'), end: local('2026-09-28') });
    assert.equal(week.end - week.start, 7 * DAY - HOUR);
    assert.deepEqual(periodWindow('weekly', local('2026-09-28T00:00'), NZ).start, local('2026-09-28'));
  });

  test('DST ends on 2027-04-04 in New Zealand: that day and its week are an hour long', () => {
    const day = periodWindow('daily', local('2027-04-04T02:30'), NZ);
    assert.equal(day.end - day.start, 25 * HOUR);
    const week = periodWindow('weekly', local('2027-04-04T23:00'), NZ);
    assert.deepEqual(week, { start: local('2027-03-29'), end: local('2027-04-05') });
    assert.equal(week.end - week.start, 7 * DAY + HOUR);
    const month = periodWindow('monthly', local('2027-04-04T12:00'), NZ);
    assert.equal(new Date(month.start).toISOString(), '2027-03-31T11:00:00.000Z'); // 1 April 00:00 NZDT
    assert.equal(new Date(month.end).toISOString(), '2027-04-30T12:00:00.000Z'); // 1 May 00:00 NZST
  });
});

describe('checkLimits', () => {
  test('agrees with the model on random limits, usage and amounts', () => {
    fc.assert(
      fc.property(scenario, ({ at, zone, amount, usage, limits }) => {
        const result = checkLimits(limits, usage, amount, at, zone);
        const expected = modelCheck(limits, usage, amount, at, zone);
        assert.equal(result.ok ? 'ok' : result.reason, expected);
      }),
      { numRuns: 500 },
    );
  });

  test('an aggregate gives the same answer as the list it sums', () => {
    fc.assert(
      fc.property(scenario, ({ at, zone, amount, usage, limits }) => {
        const aggregate = aggregateUsage(usage, limits, at, zone);
        assert.deepEqual(
          checkLimits(limits, aggregate, amount, at, zone),
          checkLimits(limits, usage, amount, at, zone),
        );
      }),
    );
  });

  test('exactly at each limit passes and one over fails, with what remains', () => {
    const usageArb = fc.array(
      fc.record({ amount_cents: fc.integer({ min: 1, max: 5_000 }), at: fc.integer({ min: -3 * DAY, max: 0 }) }),
      { maxLength: 8 },
    );
    fc.assert(
      fc.property(instants, periods, usageArb, fc.integer({ min: 1, max: 5_000 }), (at, period, offsets, amount) => {
        const usage = offsets.map((p) => ({ amount_cents: p.amount_cents, at: at + p.at }));
        const open: RecurringLimits = {
          period,
          anchor_at: at - 9 * DAY,
          max_per_period_cents: 10_000_000,
          max_per_payment_cents: null,
          total_count: null,
          total_amount_cents: null,
          end_at: null,
        };
        const total = usage.reduce((sum, p) => sum + p.amount_cents, 0);
        const window = periodWindow(period, at, NZ, open.anchor_at);
        const inPeriod = usage.filter((p) => p.at >= window.start).reduce((sum, p) => sum + p.amount_cents, 0);

        assert.deepEqual(checkLimits({ ...open, max_per_payment_cents: amount }, usage, amount, at, NZ), { ok: true });
        assert.deepEqual(checkLimits({ ...open, max_per_payment_cents: amount - 1 }, usage, amount, at, NZ), {
          ok: false,
          reason: 'max_per_payment',
          limit: amount - 1,
          remaining: amount - 1,
          unit: 'cents',
        });

        assert.deepEqual(checkLimits({ ...open, total_count: usage.length + 1 }, usage, amount, at, NZ), { ok: true });
        assert.deepEqual(checkLimits({ ...open, total_count: usage.length }, usage, amount, at, NZ), {
          ok: false,
          reason: 'total_count',
          limit: usage.length,
          remaining: 0,
          unit: 'count',
        });

        assert.deepEqual(checkLimits({ ...open, total_amount_cents: total + amount }, usage, amount, at, NZ), {
          ok: true,
        });
        assert.deepEqual(checkLimits({ ...open, total_amount_cents: total + amount - 1 }, usage, amount, at, NZ), {
          ok: false,
          reason: 'total_amount',
          limit: total + amount - 1,
          remaining: amount - 1,
          unit: 'cents',
        });

        assert.deepEqual(checkLimits({ ...open, max_per_period_cents: inPeriod + amount }, usage, amount, at, NZ), {
          ok: true,
        });
        assert.deepEqual(checkLimits({ ...open, max_per_period_cents: inPeriod + amount - 1 }, usage, amount, at, NZ), {
          ok: false,
          reason: 'max_per_period',
          limit: inPeriod + amount - 1,
          remaining: amount - 1,
          unit: 'cents',
          window,
        });

        assert.deepEqual(checkLimits({ ...open, end_at: at }, usage, amount, at, NZ), { ok: true });
        assert.deepEqual(checkLimits({ ...open, end_at: at - 1 }, usage, amount, at, NZ), {
          ok: false,
          reason: 'end_date',
          limit: at - 1,
          remaining: 0,
          unit: 'time',
        });
      }),
    );
  });

  test('checks in the documented order: end_date, max_per_payment, total_count, total_amount, max_per_period', () => {
    const at = local('2027-06-15T12:00');
    const usage = [{ amount_cents: 1_000, at: at - HOUR }];
    const all: RecurringLimits = {
      period: 'daily',
      max_per_period_cents: 500,
      max_per_payment_cents: 500,
      total_count: 1,
      total_amount_cents: 500,
      end_at: at - 1,
      anchor_at: STARTED,
    };
    const reasons: string[] = [];
    let limits = all;
    for (const release of [
      { end_at: null },
      { max_per_payment_cents: null },
      { total_count: null },
      { total_amount_cents: null },
      { max_per_period_cents: 10_000 },
    ]) {
      const result = checkLimits(limits, usage, 600, at, NZ);
      reasons.push(result.ok ? 'ok' : result.reason);
      limits = { ...limits, ...release };
    }
    reasons.push(checkLimits(limits, usage, 600, at, NZ).ok ? 'ok' : 'refused');
    assert.deepEqual(reasons, ['end_date', 'max_per_payment', 'total_count', 'total_amount', 'max_per_period', 'ok']);
  });

  test('a payment just before local midnight counts in that day; the next day starts afresh', () => {
    const limits: RecurringLimits = {
      period: 'daily',
      max_per_period_cents: 10_000,
      max_per_payment_cents: null,
      total_count: null,
      total_amount_cents: null,
      end_at: null,
      anchor_at: STARTED,
    };
    const usage = [{ amount_cents: 10_000, at: local('2026-09-26T23:59:59.999') }];
    assert.equal(checkLimits(limits, usage, 1, local('2026-09-26T23:59:59.999'), NZ).ok, false);
    // 2026-09-27 is the 23-hour day when DST starts; its midnight is still a new day.
    assert.deepEqual(checkLimits(limits, usage, 10_000, local('2026-09-27T00:00'), NZ), { ok: true });
  });

  test('a weekly limit resets on Monday at local midnight, across the end of DST', () => {
    const limits: RecurringLimits = {
      period: 'weekly',
      max_per_period_cents: 10_000,
      max_per_payment_cents: null,
      total_count: null,
      total_amount_cents: null,
      end_at: null,
      anchor_at: STARTED,
    };
    const usage = [
      { amount_cents: 6_000, at: local('2027-03-29T00:00') }, // Monday, NZDT
      { amount_cents: 4_000, at: local('2027-04-04T23:59:59.999') }, // Sunday, NZST after the change
    ];
    const refusal = checkLimits(limits, usage, 1, local('2027-04-04T23:59:59.999'), NZ);
    assert.deepEqual(refusal, {
      ok: false,
      reason: 'max_per_period',
      limit: 10_000,
      remaining: 0,
      unit: 'cents',
      window: { start: local('2027-03-29'), end: local('2027-04-05') },
    });
    assert.deepEqual(checkLimits(limits, usage, 10_000, local('2027-04-05T00:00'), NZ), { ok: true });
  });

  test('a monthly limit resets on the 1st at local midnight', () => {
    const limits: RecurringLimits = {
      period: 'monthly',
      max_per_period_cents: 5_000,
      max_per_payment_cents: null,
      total_count: null,
      total_amount_cents: null,
      end_at: null,
      anchor_at: STARTED,
    };
    const usage = [{ amount_cents: 5_000, at: local('2026-09-01T00:00') }];
    assert.equal(checkLimits(limits, usage, 1, local('2026-09-30T23:59:59.999'), NZ).ok, false);
    assert.deepEqual(checkLimits(limits, usage, 5_000, local('2026-10-01T00:00'), NZ), { ok: true });
  });
});

describe('usageSummary', () => {
  test('what remains in the period is exactly the largest amount the period limit lets through', () => {
    fc.assert(
      fc.property(scenario, ({ at, zone, usage, limits }) => {
        const periodOnly = {
          ...limits,
          max_per_payment_cents: null,
          total_count: null,
          total_amount_cents: null,
          end_at: null,
        };
        const summary = usageSummary(periodOnly, usage, at, zone);
        const left = summary.period.remaining_cents;
        assert.deepEqual(
          checkLimits(periodOnly, usage, left, at, zone).ok,
          summary.period.amount_cents <= limits.max_per_period_cents,
        );
        assert.equal(checkLimits(periodOnly, usage, left + 1, at, zone).ok, false);
        assert.equal(summary.total.count, usage.length);
      }),
    );
  });

  test('reports the period, totals and what is left', () => {
    const at = local('2027-06-16T09:00');
    const limits: RecurringLimits = {
      period: 'weekly',
      max_per_period_cents: 10_000,
      max_per_payment_cents: 5_000,
      total_count: 10,
      total_amount_cents: 50_000,
      end_at: null,
      anchor_at: STARTED,
    };
    const usage = [
      { amount_cents: 2_500, at: local('2027-06-14T08:00') },
      { amount_cents: 1_000, at: local('2027-06-10T08:00') },
    ];
    assert.deepEqual(usageSummary(limits, usage, at, NZ), {
      period: {
        start: local('2027-06-14'),
        end: local('2027-06-21'),
        amount_cents: 2_500,
        count: 1,
        remaining_cents: 7_500,
      },
      total: { amount_cents: 3_500, count: 2, remaining_cents: 46_500, remaining_count: 8 },
    });
    const open = { ...limits, total_count: null, total_amount_cents: null };
    assert.deepEqual(usageSummary(open, usage, at, NZ).total, {
      amount_cents: 3_500,
      count: 2,
      remaining_cents: null,
      remaining_count: null,
    });
  });
});

describe('describeLimits', () => {
  const base: RecurringTerms = {
    period: 'weekly',
    max_per_period_cents: 10_000,
    max_per_payment_cents: null,
    total_count: null,
    total_amount_cents: null,
    end_at: null,
  };

  test('the issue example', () => {
    const endAt = localAt('2027-12-31', NZ).endOf('day').toMillis();
    assert.equal(
      describeLimits({ ...base, max_per_payment_cents: 5_000, end_at: endAt }, NZ),
      'up to $50.00 a payment, $100.00 a week, until 31 December 2027',
    );
  });

  test('an end date reads as every other date the payer sees: the month written out, September too', () => {
    for (const [date, words] of [
      ['2027-06-30', '30 June 2027'],
      ['2027-09-30', '30 September 2027'],
      ['2028-01-01', '1 January 2028'],
    ]) {
      const endAt = localAt(date, NZ).endOf('day').toMillis();
      assert.equal(describeLimits({ ...base, end_at: endAt }, NZ), `up to $100.00 a week, until ${words}`);
    }
  });

  test('every limit, and an end that is an exact time', () => {
    assert.equal(
      describeLimits({ ...base, period: 'daily', max_per_period_cents: 123_456 }, NZ),
      'up to $1,234.56 a day',
    );
    assert.equal(
      describeLimits(
        {
          period: 'monthly',
          max_per_period_cents: 20_000,
          max_per_payment_cents: 5_000,
          total_count: 12,
          total_amount_cents: 100_000,
          end_at: local('2027-06-30T17:30'),
        },
        NZ,
      ),
      'up to $50.00 a payment, $200.00 a month, 12 payments in total, $1,000.00 in total, until 5:30pm on 30 June 2027',
    );
    assert.equal(describeLimits({ ...base, total_count: 1 }, NZ), 'up to $100.00 a week, 1 payment in total');
  });

  test('fortnights and years', () => {
    assert.equal(describeLimits({ ...base, period: 'fortnightly' }, NZ), 'up to $100.00 a fortnight');
    assert.equal(
      describeLimits({ ...base, period: 'yearly', max_per_period_cents: 100_000, max_per_payment_cents: 20_000 }, NZ),
      'up to $200.00 a payment, $1,000.00 a year',
    );
  });
});
