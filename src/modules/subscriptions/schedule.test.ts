import { test, describe } from 'node:test';
import assert from 'node:assert/strict';
import fc from 'fast-check';
import { inZone, localAt } from '../../shared/zone.ts';
import {
  anchorAt,
  buildSchedule,
  chargeAt,
  describeSchedule,
  isBeyondEnd,
  isComplete,
  makeAnchor,
  nextSlotAfter,
  resumeAnchor,
  resumeSchedule,
  retriesForSlot,
  retryTimes,
  slotDate,
  slotTime,
  upcomingCharges,
  type ScheduleOptions,
  type SubscriptionPeriod,
} from './schedule.ts';

const NZ = 'Pacific/Auckland';
const DAY = 86_400_000;

/** An instant from a local wall time, for writing cases readably. */
function local(iso: string, zone = NZ): number {
  const parsed = localAt(iso, zone);
  assert.ok(parsed.isValid, iso);
  return parsed.toMillis();
}

/** The local wall time of an instant, for reading results: "2027-02-28T10:00:00.000+13:00". */
function wall(at: number, zone = NZ): string {
  return inZone(at, zone).toISO()!;
}

// ---- An independent model: calendar dates by integer arithmetic on years, months and days,
// ---- local wall time <-> instant through Intl. It shares no code with schedule.ts.

type Wall = { y: number; m: number; d: number; h: number; mi: number; s: number; ms: number };

const formatters = new Map<string, Intl.DateTimeFormat>();
function wallOf(at: number, zone: string): Wall {
  let format = formatters.get(zone);
  if (!format) {
    format = new Intl.DateTimeFormat('en-US', {
      timeZone: zone,
      hourCycle: 'h23',
      year: 'numeric',
      month: 'numeric',
      day: 'numeric',
      hour: 'numeric',
      minute: 'numeric',
      second: 'numeric',
    });
    formatters.set(zone, format);
  }
  const p = Object.fromEntries(format.formatToParts(at).map((part) => [part.type, Number(part.value)]));
  return { y: p.year, m: p.month, d: p.day, h: p.hour, mi: p.minute, s: p.second, ms: ((at % 1000) + 1000) % 1000 };
}

const asUtc = (w: Wall) => Date.UTC(w.y, w.m - 1, w.d, w.h, w.mi, w.s, w.ms);
const sameWall = (a: Wall, b: Wall) => asUtc(a) === asUtc(b);

/** The instant for wall time `w`: the earlier one when it happens twice; in a DST gap, moved forward by the gap. */
function modelInstant(w: Wall, zone: string): number {
  const found = instantsOf(w, zone);
  if (found.length > 0) return found[0];
  // A gap: read the wall time with the offset in force before the change.
  const guess = asUtc(w);
  return guess - (asUtc(wallOf(guess - DAY, zone)) - (guess - DAY));
}

/** The instants showing wall time `w` in `zone` (none in a DST gap, two in an overlap), earliest first. */
function instantsOf(w: Wall, zone: string): number[] {
  const guess = asUtc(w);
  const offsets = new Set([-DAY, 0, DAY].map((shift) => asUtc(wallOf(guess + shift, zone)) - (guess + shift)));
  return [...offsets]
    .map((offset) => guess - offset)
    .filter((t) => sameWall(wallOf(t, zone), w))
    .sort((a, b) => a - b);
}

function daysInMonth(y: number, m: number): number {
  const leap = (y % 4 === 0 && y % 100 !== 0) || y % 400 === 0;
  return [31, leap ? 29 : 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31][m - 1];
}

function addDays(w: Wall, days: number): Wall {
  const date = new Date(Date.UTC(w.y, w.m - 1, w.d + days));
  return { ...w, y: date.getUTCFullYear(), m: date.getUTCMonth() + 1, d: date.getUTCDate() };
}

const monthsPer: Record<SubscriptionPeriod, number> = {
  weekly: 0,
  fortnightly: 0,
  monthly: 1,
  quarterly: 3,
  annually: 12,
};

/** Slot n's wall time: from the anchor's month, step whole months, then clamp the anchor day to the month. */
function modelSlotWall(period: SubscriptionPeriod, anchor: Wall, n: number): Wall {
  if (period === 'weekly') return addDays(anchor, 7 * n);
  if (period === 'fortnightly') return addDays(anchor, 14 * n);
  const monthIndex = anchor.y * 12 + (anchor.m - 1) + n * monthsPer[period];
  const y = Math.floor(monthIndex / 12);
  const m = (monthIndex % 12) + 1;
  return { ...anchor, y, m, d: Math.min(anchor.d, daysInMonth(y, m)) };
}

type ModelSchedule = { anchor: Wall; firstSlot: number; firstChargeAt: number; slotAt: (n: number) => number };

function modelSchedule(
  period: SubscriptionPeriod,
  options: ScheduleOptions,
  authorisedAt: number,
  zone: string,
): ModelSchedule {
  const anchor = wallOf(options.start_at ?? authorisedAt, zone);
  const nominal = (n: number): number => modelInstant(modelSlotWall(period, anchor, n), zone);
  if (options.start_at === null) return { anchor, firstSlot: 0, firstChargeAt: authorisedAt, slotAt: nominal };
  if (options.start_at > authorisedAt)
    return { anchor, firstSlot: 0, firstChargeAt: options.start_at, slotAt: nominal };
  let latest = 0;
  while (nominal(latest + 1) <= authorisedAt) latest += 1;
  return { anchor, firstSlot: latest, firstChargeAt: authorisedAt, slotAt: nominal };
}

// ---- Generators

const zones = fc.constantFrom(NZ, NZ, NZ, 'Australia/Lord_Howe', 'America/New_York', 'Europe/London', 'UTC');
const periods = fc.constantFrom<SubscriptionPeriod>('weekly', 'fortnightly', 'monthly', 'quarterly', 'annually');
const instants = fc.oneof(
  fc.integer({ min: Date.UTC(2020, 0, 1), max: Date.UTC(2034, 0, 1) }),
  // Month ends and leap days, and the small hours around NZ DST changes.
  fc.integer({ min: local('2028-01-27'), max: local('2028-03-02') }),
  fc.integer({ min: local('2026-09-26'), max: local('2026-09-28') }),
  fc.integer({ min: local('2027-04-03'), max: local('2027-04-05') }),
);

/** Options with a start date (10:00 local, as the request rules store it) before or after authorisation, or none. */
const scenario = fc
  .record({
    authorisedAt: instants,
    zone: zones,
    period: periods,
    startMode: fc.constantFrom('none', 'future', 'past'),
    startDays: fc.integer({ min: 0, max: 800 }),
  })
  .chain(({ authorisedAt, zone, period, startMode, startDays }) => {
    let start_at: number | null = null;
    if (startMode !== 'none') {
      const authDate = wallOf(authorisedAt, zone);
      const date = addDays(authDate, startMode === 'future' ? startDays + 1 : -startDays);
      start_at = instantsOf({ ...date, h: 10, mi: 0, s: 0, ms: 0 }, zone)[0];
    }
    return fc.record({
      authorisedAt: fc.constant(authorisedAt),
      zone: fc.constant(zone),
      options: fc.record({
        period: fc.constant(period),
        start_at: fc.constant(start_at),
        end_at: fc.option(fc.integer({ min: authorisedAt, max: authorisedAt + 3 * 366 * DAY }), { nil: null }),
        total_count: fc.option(fc.integer({ min: 1, max: 30 }), { nil: null }),
      }),
      slots: fc.integer({ min: 0, max: 40 }),
    });
  });

describe('schedule against the model', () => {
  test('first slot, first charge and every later slot match the model', () => {
    fc.assert(
      fc.property(scenario, ({ authorisedAt, zone, options, slots }) => {
        const schedule = buildSchedule(options, authorisedAt, zone);
        const model = modelSchedule(options.period, options, authorisedAt, zone);
        assert.equal(schedule.firstSlot, model.firstSlot);
        assert.equal(schedule.firstChargeAt, model.firstChargeAt);
        assert.equal(slotTime(schedule, schedule.firstSlot), model.firstChargeAt);
        for (let n = schedule.firstSlot + 1; n <= schedule.firstSlot + slots; n += 1) {
          assert.equal(slotTime(schedule, n), model.slotAt(n), `slot ${n}`);
        }
      }),
      { numRuns: 300 },
    );
  });

  test('the anchor is the start date at 10:00, or the authorisation date and time', () => {
    fc.assert(
      fc.property(scenario, ({ authorisedAt, zone, options }) => {
        const { anchor } = buildSchedule(options, authorisedAt, zone);
        const w = wallOf(options.start_at ?? authorisedAt, zone);
        assert.equal(
          anchor.localDate,
          `${String(w.y).padStart(4, '0')}-${String(w.m).padStart(2, '0')}-${String(w.d).padStart(2, '0')}`,
        );
        assert.equal(anchor.dayOfMonth, w.d);
        assert.equal(anchor.weekday, ((new Date(Date.UTC(w.y, w.m - 1, w.d)).getUTCDay() + 6) % 7) + 1);
        if (options.start_at !== null) assert.equal(anchor.localTime, '10:00:00.000');
      }),
    );
  });

  test('slot times strictly rise, and nextSlotAfter finds the first slot after a time', () => {
    fc.assert(
      fc.property(
        scenario,
        fc.integer({ min: -30 * DAY, max: 3 * 366 * DAY }),
        ({ authorisedAt, zone, options }, delta) => {
          const schedule = buildSchedule(options, authorisedAt, zone);
          const time = authorisedAt + delta;
          const next = nextSlotAfter(schedule, time);
          assert.ok(next >= schedule.firstSlot);
          assert.ok(slotTime(schedule, next) > time);
          if (next > schedule.firstSlot) assert.ok(slotTime(schedule, next - 1) <= time);
          for (let n = schedule.firstSlot; n < schedule.firstSlot + 10; n += 1)
            assert.ok(slotTime(schedule, n) < slotTime(schedule, n + 1));
        },
      ),
    );
  });

  test('completion: by successful count, or when the next slot is after end_at', () => {
    fc.assert(
      fc.property(
        scenario,
        fc.integer({ min: 0, max: 40 }),
        fc.integer({ min: 0, max: 40 }),
        ({ authorisedAt, zone, options }, succeeded, offset) => {
          const schedule = buildSchedule(options, authorisedAt, zone);
          const next = schedule.firstSlot + offset;
          const byCount = options.total_count !== null && succeeded >= options.total_count;
          const byDate = options.end_at !== null && slotTime(schedule, next) > options.end_at;
          assert.equal(isBeyondEnd(schedule, next), byDate);
          assert.equal(isComplete(schedule, succeeded, next), byCount || byDate);
        },
      ),
    );
  });

  test('upcoming charges stop at total_count or end_at, whichever comes first', () => {
    fc.assert(
      fc.property(scenario, ({ authorisedAt, zone, options }) => {
        const schedule = buildSchedule(options, authorisedAt, zone);
        const charges = upcomingCharges(schedule, 0, 50);
        if (options.total_count !== null) assert.ok(charges.length <= options.total_count);
        for (const charge of charges) assert.ok(options.end_at === null || charge.at <= options.end_at);
        if (charges.length > 0) assert.equal(charges[0].slot, schedule.firstSlot);
        if (charges.length < 50 && charges.length !== options.total_count) {
          assert.ok(isBeyondEnd(schedule, schedule.firstSlot + charges.length));
        }
      }),
    );
  });

  test('retries fall 1, 2, 3 or 1, 3, 5 local days after the charge at the same local time', () => {
    fc.assert(
      fc.property(periods, instants, zones, (period, at, zone) => {
        const days = period === 'weekly' || period === 'fortnightly' ? [1, 2, 3] : [1, 3, 5];
        const retries = retryTimes(period, at, zone);
        assert.equal(retries.length, 3);
        for (const [i, retry] of retries.entries())
          assert.equal(retry, modelInstant(addDays(wallOf(at, zone), days[i]), zone));
      }),
    );
  });

  test('resume: the next charge is one period after the resume date, at the charge time', () => {
    fc.assert(
      fc.property(
        scenario,
        fc.integer({ min: 0, max: 2 * 366 * DAY }),
        ({ authorisedAt, zone, options }, pausedFor) => {
          const schedule = buildSchedule(options, authorisedAt, zone);
          const resumedAt = authorisedAt + pausedFor;
          const resumed = resumeSchedule(schedule, resumedAt);
          const resumeWall = wallOf(resumedAt, zone);
          const anchorWall = wallOf(chargeAt(schedule.anchor, 1, zone), zone);
          const expected = modelSlotWall(
            options.period,
            { ...resumeWall, h: anchorWall.h, mi: anchorWall.mi, s: anchorWall.s, ms: anchorWall.ms },
            1,
          );
          const next = slotTime(resumed, resumed.firstSlot);
          const actual = wallOf(next, zone);
          assert.deepEqual([actual.y, actual.m, actual.d], [expected.y, expected.m, expected.d]);
          assert.equal(resumed.anchor.localTime, schedule.anchor.localTime);
          assert.equal(nextSlotAfter(resumed, resumedAt), 1);
        },
      ),
    );
  });
});

describe('schedule fixed cases', () => {
  const monthly: ScheduleOptions = { period: 'monthly', start_at: null, end_at: null, total_count: null };

  test('a charge anchored on the 31st: 28 Feb, then 31 Mar, then 30 Apr', () => {
    const schedule = buildSchedule({ ...monthly, start_at: local('2027-01-31T10:00') }, local('2027-01-20T15:00'), NZ);
    assert.deepEqual(
      [0, 1, 2, 3, 4].map((n) => wall(slotTime(schedule, n))),
      [
        '2027-01-31T10:00:00.000+13:00',
        '2027-02-28T10:00:00.000+13:00',
        '2027-03-31T10:00:00.000+13:00',
        '2027-04-30T10:00:00.000+12:00',
        '2027-05-31T10:00:00.000+12:00',
      ],
    );
    assert.equal(schedule.anchor.dayOfMonth, 31);
  });

  test('a leap-day anchor: 28 Feb in common years, 29 Feb in leap years', () => {
    const anchor = makeAnchor('annually', '2028-02-29', '10:00');
    assert.deepEqual(
      [0, 1, 2, 3, 4].map((n) => slotDate(anchor, n)),
      ['2028-02-29', '2029-02-28', '2030-02-28', '2031-02-28', '2032-02-29'],
    );
    const monthlyAnchor = makeAnchor('monthly', '2028-01-30', '10:00');
    assert.deepEqual(
      [1, 2, 13].map((n) => slotDate(monthlyAnchor, n)),
      ['2028-02-29', '2028-03-30', '2029-02-28'],
    );
    const quarterly = makeAnchor('quarterly', '2027-11-30', '10:00');
    assert.deepEqual(
      [1, 2, 3, 4, 5].map((n) => slotDate(quarterly, n)),
      ['2028-02-29', '2028-05-30', '2028-08-30', '2028-11-30', '2029-02-28'],
    );
  });

  test('weekly and fortnightly keep the weekday', () => {
    const weekly = makeAnchor('weekly', '2027-03-03', '10:00'); // a Wednesday
    assert.equal(weekly.weekday, 3);
    assert.deepEqual(
      [1, 2, 52].map((n) => slotDate(weekly, n)),
      ['2027-03-10', '2027-03-17', '2028-03-01'],
    );
    const fortnightly = makeAnchor('fortnightly', '2027-03-03', '10:00');
    assert.deepEqual(
      [1, 2, 26].map((n) => slotDate(fortnightly, n)),
      ['2027-03-17', '2027-03-31', '2028-03-01'],
    );
  });

  test('10:00 stays 10:00 local across the NZ DST changes of 2026-09-27 and 2027-04-04', () => {
    const spring = buildSchedule(
      { ...monthly, period: 'weekly', start_at: local('2026-09-20T10:00') },
      local('2026-09-01T09:00'),
      NZ,
    );
    assert.deepEqual(
      [0, 1].map((n) => new Date(slotTime(spring, n)).toISOString()),
      ['2026-09-19T22:00:00.000Z', '2026-09-26T21:00:00.000Z'],
    );
    const autumn = buildSchedule(
      { ...monthly, period: 'weekly', start_at: local('2027-03-28T10:00') },
      local('2027-03-01T09:00'),
      NZ,
    );
    assert.deepEqual(
      [0, 1].map((n) => new Date(slotTime(autumn, n)).toISOString()),
      ['2027-03-27T21:00:00.000Z', '2027-04-03T22:00:00.000Z'],
    );
    assert.deepEqual(
      [0, 1].map((n) => wall(slotTime(autumn, n)).slice(11, 16)),
      ['10:00', '10:00'],
    );
  });

  test('an authorisation-time anchor in the small hours: a gap moves forward, a repeated hour takes the first', () => {
    const gap = buildSchedule({ ...monthly, period: 'weekly' }, local('2026-09-20T02:30'), NZ);
    assert.equal(wall(slotTime(gap, 1)), '2026-09-27T03:30:00.000+13:00');
    assert.equal(wall(slotTime(gap, 2)), '2026-10-04T02:30:00.000+13:00');
    const overlap = buildSchedule({ ...monthly, period: 'weekly' }, local('2027-03-28T02:30'), NZ);
    assert.equal(wall(slotTime(overlap, 1)), '2027-04-04T02:30:00.000+13:00');
    // The same rule in a zone west of Greenwich, where luxon alone would pick the later 01:30.
    const london = 'Europe/London';
    const westward = buildSchedule({ ...monthly, period: 'weekly' }, local('2026-10-18T01:30', london), london);
    assert.equal(wall(slotTime(westward, 1), london), '2026-10-25T01:30:00.000+01:00');
    assert.equal(
      wall(retryTimes('weekly', local('2026-10-24T01:30', london), london)[0], london),
      '2026-10-25T01:30:00.000+01:00',
    );
  });

  test('without a start date: charged at authorisation, later charges at that time of day', () => {
    const authorisedAt = local('2027-03-03T14:23:45.678');
    const schedule = buildSchedule({ ...monthly, period: 'fortnightly' }, authorisedAt, NZ);
    assert.deepEqual(schedule.anchor, {
      period: 'fortnightly',
      localDate: '2027-03-03',
      localTime: '14:23:45.678',
      dayOfMonth: 3,
      weekday: 3,
    });
    assert.equal(slotTime(schedule, 0), authorisedAt);
    assert.equal(wall(slotTime(schedule, 3)), '2027-04-14T14:23:45.678+12:00');
  });

  test('a future start date: the first charge at 10:00 on that date', () => {
    const schedule = buildSchedule({ ...monthly, start_at: local('2027-03-15T10:00') }, local('2027-03-01T16:00'), NZ);
    assert.equal(schedule.firstSlot, 0);
    assert.equal(wall(schedule.firstChargeAt), '2027-03-15T10:00:00.000+13:00');
  });

  test("a past start date: charged at authorisation, then on the start date's anchor at 10:00", () => {
    const authorisedAt = local('2027-03-20T16:45');
    const schedule = buildSchedule({ ...monthly, start_at: local('2027-01-15T10:00') }, authorisedAt, NZ);
    assert.equal(schedule.firstSlot, 2); // the 15 March slot, taken late
    assert.equal(slotTime(schedule, 2), authorisedAt);
    assert.equal(nextSlotAfter(schedule, authorisedAt), 3);
    assert.equal(wall(slotTime(schedule, 3)), '2027-04-15T10:00:00.000+12:00');
    // Earlier the same day as the start date: still immediate, and slot 0.
    const sameDay = buildSchedule({ ...monthly, start_at: local('2027-01-15T10:00') }, local('2027-01-15T11:00'), NZ);
    assert.deepEqual([sameDay.firstSlot, wall(slotTime(sameDay, 1))], [0, '2027-02-15T10:00:00.000+13:00']);
  });

  test('complete by count (successful charges) and by end date', () => {
    const start_at = local('2027-03-03T10:00');
    const byCount = buildSchedule(
      { period: 'fortnightly', start_at, end_at: null, total_count: 6 },
      local('2027-03-01T12:00'),
      NZ,
    );
    assert.equal(isComplete(byCount, 5, 5), false);
    assert.equal(isComplete(byCount, 6, 6), true);
    assert.equal(isComplete(byCount, 5, 6), false); // one slot was skipped: one more charge to go
    assert.equal(upcomingCharges(byCount, 0, 100).length, 6);

    // end_date 2027-05-31 means the end of that local day: the 31 May slot is charged, 30 June is not.
    const end_at = localAt('2027-05-31', NZ).endOf('day').toMillis();
    const byDate = buildSchedule(
      { period: 'monthly', start_at: local('2027-01-31T10:00'), end_at, total_count: null },
      local('2027-01-01T12:00'),
      NZ,
    );
    assert.deepEqual(
      upcomingCharges(byDate, 0, 100).map((c) => wall(c.at).slice(0, 10)),
      ['2027-01-31', '2027-02-28', '2027-03-31', '2027-04-30', '2027-05-31'],
    );
    assert.equal(isBeyondEnd(byDate, 4), false);
    assert.equal(isBeyondEnd(byDate, 5), true);
    assert.equal(isComplete(byDate, 5, 5), true);
  });

  test('retry times: +1, +2, +3 days weekly, +1, +3, +5 days monthly, across DST', () => {
    assert.deepEqual(
      retryTimes('weekly', local('2026-09-25T10:00'), NZ).map((t) => wall(t)),
      ['2026-09-26T10:00:00.000+12:00', '2026-09-27T10:00:00.000+13:00', '2026-09-28T10:00:00.000+13:00'],
    );
    assert.deepEqual(
      retryTimes('monthly', local('2027-03-31T10:00'), NZ).map((t) => wall(t)),
      ['2027-04-01T10:00:00.000+13:00', '2027-04-03T10:00:00.000+13:00', '2027-04-05T10:00:00.000+12:00'],
    );
  });

  test('retries of a slot stop at end_at and before the next slot', () => {
    const end_at = local('2027-04-02T23:59');
    const schedule = buildSchedule(
      { period: 'monthly', start_at: local('2027-03-31T10:00'), end_at, total_count: null },
      local('2027-03-01T09:00'),
      NZ,
    );
    assert.deepEqual(
      retriesForSlot(schedule, 0).map((t) => wall(t)),
      ['2027-04-01T10:00:00.000+13:00'],
    );
    // A past start date whose next slot is the day after the immediate charge leaves no room for retries.
    const tight = buildSchedule(
      { period: 'weekly', start_at: local('2027-03-01T10:00'), end_at: null, total_count: null },
      local('2027-03-07T12:00'),
      NZ,
    );
    assert.equal(wall(slotTime(tight, tight.firstSlot + 1)), '2027-03-08T10:00:00.000+13:00');
    assert.deepEqual(retriesForSlot(tight, tight.firstSlot), []);
  });

  test('resume takes the resume date as anchor and charges one period later at the charge time', () => {
    const schedule = buildSchedule({ ...monthly, start_at: local('2027-01-31T10:00') }, local('2027-01-01T12:00'), NZ);
    const resumedAt = local('2027-05-10T15:20');
    assert.deepEqual(resumeAnchor(schedule.anchor, resumedAt, NZ), {
      period: 'monthly',
      localDate: '2027-05-10',
      localTime: '10:00:00.000',
      dayOfMonth: 10,
      weekday: 1,
    });
    const resumed = resumeSchedule(schedule, resumedAt);
    assert.deepEqual(
      [1, 2].map((n) => wall(slotTime(resumed, n))),
      ['2027-06-10T10:00:00.000+12:00', '2027-07-10T10:00:00.000+12:00'],
    );
  });

  test('anchors are rebuilt from stored parts and refuse nonsense', () => {
    assert.deepEqual(makeAnchor('weekly', '2027-03-03', '10:00'), anchorAt('weekly', local('2027-03-03T10:00'), NZ));
    assert.throws(() => makeAnchor('weekly', '2027-02-30', '10:00'), RangeError);
    assert.throws(() => makeAnchor('weekly', '2027-02-03', '25:00'), RangeError);
    assert.throws(() => chargeAt(makeAnchor('weekly', '2027-02-03', '10:00'), -1, NZ), RangeError);
  });
});

describe('describeSchedule', () => {
  test('the issue example', () => {
    assert.equal(
      describeSchedule(
        {
          amount_cents: 1_500,
          period: 'fortnightly',
          start_at: local('2027-03-03T10:00'),
          end_at: null,
          total_count: 6,
        },
        NZ,
      ),
      '$15.00 every fortnight from 3 March 2027, 6 payments',
    );
  });

  test('each period, open-ended, by date, and month-end anchors', () => {
    const endOf = (date: string) => localAt(date, NZ).endOf('day').toMillis();
    assert.equal(
      describeSchedule({ amount_cents: 999, period: 'weekly', start_at: null, end_at: null, total_count: null }, NZ),
      '$9.99 every week starting when you approve',
    );
    assert.equal(
      describeSchedule(
        {
          amount_cents: 120_000,
          period: 'monthly',
          start_at: local('2027-01-31T10:00'),
          end_at: endOf('2027-12-31'),
          total_count: null,
        },
        NZ,
      ),
      '$1,200.00 every month from 31 January 2027 (on the last day of shorter months), until 31 December 2027',
    );
    assert.equal(
      describeSchedule(
        {
          amount_cents: 5_000,
          period: 'quarterly',
          start_at: local('2027-02-15T10:00'),
          end_at: endOf('2028-12-31'),
          total_count: 4,
        },
        NZ,
      ),
      '$50.00 every 3 months from 15 February 2027, at most 4 payments, until 31 December 2028',
    );
    assert.equal(
      describeSchedule(
        { amount_cents: 10_000, period: 'annually', start_at: local('2028-02-29T10:00'), end_at: null, total_count: 1 },
        NZ,
      ),
      '$100.00 every year from 29 February 2028 (on 28 February when there is no 29th), 1 payment',
    );
  });
});
