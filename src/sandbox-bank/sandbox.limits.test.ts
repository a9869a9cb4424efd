import { test } from 'node:test';
import assert from 'node:assert/strict';
import fc from 'fast-check';
import { inZone } from '../shared/zone.ts';
import { checkLimits, periodWindow, Periods, type ConsentLimits, type Period } from './sandbox.limits.ts';

const zone = 'Pacific/Auckland';
// 2025 to 2030: several daylight-saving changes each way.
const instant = fc.integer({ min: Date.parse('2025-01-01T00:00:00Z'), max: Date.parse('2030-12-31T00:00:00Z') });
const period = fc.constantFrom(...Periods);

test('a period window contains its instant, and the next window starts where it ends', () => {
  fc.assert(
    fc.property(period, instant, instant, (p, at, anchor) => {
      const window = periodWindow(p, at, zone, anchor);
      assert.ok(window.start <= at && at < window.end);
      assert.equal(periodWindow(p, window.end, zone, anchor).start, window.end);
      assert.equal(periodWindow(p, window.end - 1, zone, anchor).start, window.start);
    }),
  );
});

test('days start at local midnight and last 23, 24 or 25 hours; weeks start on Monday', () => {
  fc.assert(
    fc.property(instant, (at) => {
      const day = periodWindow('Day', at, zone, at);
      const start = inZone(day.start, zone);
      assert.equal(start.toFormat('HH:mm'), '00:00');
      assert.ok([23, 24, 25].includes((day.end - day.start) / 3_600_000));
      const week = inZone(periodWindow('Week', at, zone, at).start, zone);
      assert.equal(week.weekday, 1);
      assert.equal(week.toFormat('HH:mm'), '00:00');
    }),
  );
});

/** An independent statement of "the same period": the same local calendar label. */
function label(p: Period, at: number, anchor: number): string {
  const local = inZone(at, zone);
  switch (p) {
    case 'Day':
      return local.toISODate()!;
    case 'Week':
      return local.toFormat("kkkk-'W'WW");
    case 'Fortnight': {
      const weeks = Math.round(local.startOf('week').diff(inZone(anchor, zone).startOf('week'), 'days').days / 7);
      return String(Math.floor(weeks / 2));
    }
    case 'Month':
      return local.toFormat('yyyy-MM');
    case 'Quarter':
      return `${local.year}-Q${local.quarter}`;
    case 'Year':
      return String(local.year);
  }
}

test('checkLimits agrees with a simple model of the limits', () => {
  const limitsArb = fc.record({
    period,
    maxPerPaymentCents: fc.option(fc.integer({ min: 1, max: 10_000 }), { nil: null }),
    maxPerPeriodCents: fc.integer({ min: 1, max: 20_000 }),
    maxCountPerPeriod: fc.option(fc.integer({ min: 1, max: 5 }), { nil: null }),
    totalCount: fc.option(fc.integer({ min: 1, max: 8 }), { nil: null }),
    totalAmountCents: fc.option(fc.integer({ min: 1, max: 40_000 }), { nil: null }),
  });
  const from = Date.parse('2026-03-01T00:00:00Z');
  const span = 400 * 86_400_000;
  fc.assert(
    fc.property(
      limitsArb,
      fc.array(
        fc.record({ amountCents: fc.integer({ min: 1, max: 8_000 }), offset: fc.integer({ min: 0, max: span }) }),
        { maxLength: 8 },
      ),
      fc.integer({ min: 1, max: 12_000 }),
      fc.integer({ min: -86_400_000, max: span + 86_400_000 }),
      fc.option(fc.integer({ min: 1, max: span }), { nil: null }),
      (partial, paid, amount, nowOffset, toOffset) => {
        const limits: ConsentLimits = { ...partial, fromAt: from, toAt: toOffset === null ? null : from + toOffset };
        const earlier = paid.map((p) => ({ amountCents: p.amountCents, executedAt: from + p.offset }));
        const now = from + nowOffset;
        const sum = (list: typeof earlier) => list.reduce((total, p) => total + p.amountCents, 0);
        const samePeriod = earlier.filter(
          (p) => label(limits.period, p.executedAt, from) === label(limits.period, now, from),
        );
        let expected: string | null = null;
        if (now < limits.fromAt || (limits.toAt !== null && now > limits.toAt)) expected = 'Dates';
        else if (limits.maxPerPaymentCents !== null && amount > limits.maxPerPaymentCents) expected = 'MaximumAmount';
        else if (limits.totalCount !== null && earlier.length >= limits.totalCount) expected = 'TotalCount';
        else if (limits.totalAmountCents !== null && sum(earlier) + amount > limits.totalAmountCents)
          expected = 'TotalAmount';
        else if (sum(samePeriod) + amount > limits.maxPerPeriodCents) expected = 'Frequency';
        else if (limits.maxCountPerPeriod !== null && samePeriod.length >= limits.maxCountPerPeriod)
          expected = 'Frequency';
        assert.equal(checkLimits(limits, earlier, amount, now, zone), expected);
      },
    ),
    { numRuns: 300 },
  );
});
