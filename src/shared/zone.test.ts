import { test } from 'node:test';
import assert from 'node:assert/strict';
import fc from 'fast-check';
import { DateTime } from 'luxon';
import { describeMoment, parseCalendarDate } from './zone.ts';

/** What describeMoment wrote when it went through Luxon. */
function describedByLuxon(ms: number, zone: string): string {
  const local = DateTime.fromMillis(ms, { zone }).setLocale('en-US');
  return `${local.toFormat('cccc d LLLL yyyy')} at ${local.toFormat('h:mm')}${local.toFormat('a').toLowerCase()}`;
}

const zones = [
  'Pacific/Auckland',
  'Pacific/Chatham',
  'UTC',
  'America/New_York',
  'Asia/Kolkata',
  'Australia/Lord_Howe',
  'Europe/London',
  'America/St_Johns',
];

test('describeMoment writes what Luxon writes, in any zone, across DST changes, noon and midnight', () => {
  const instant = fc.integer({ min: Date.UTC(1990, 0, 1), max: Date.UTC(2100, 0, 1) });
  fc.assert(
    fc.property(instant, fc.constantFrom(...zones), (ms, zone) => {
      assert.equal(describeMoment(ms, zone), describedByLuxon(ms, zone));
    }),
    { numRuns: 3000 },
  );
  // New Zealand's DST start and end in 2026, noon and midnight there.
  for (const at of [
    '2026-04-05T01:59:59+13:00',
    '2026-04-05T02:00:00+12:00',
    '2026-09-27T01:59:59+12:00',
    '2026-09-27T03:00:00+13:00',
    '2026-12-07T00:00:00+13:00',
    '2026-12-07T12:00:00+13:00',
    '2026-12-07T12:30:00+13:00',
    '2026-12-07T00:05:00+13:00',
  ]) {
    const ms = Date.parse(at);
    assert.equal(describeMoment(ms, 'Pacific/Auckland'), describedByLuxon(ms, 'Pacific/Auckland'));
  }
  assert.equal(
    describeMoment(Date.parse('2026-12-07T10:00:00+13:00'), 'Pacific/Auckland'),
    'Monday 7 December 2026 at 10:00am',
  );
  assert.equal(
    describeMoment(Date.parse('2026-12-07T00:05:00+13:00'), 'Pacific/Auckland'),
    'Monday 7 December 2026 at 12:05am',
  );
  assert.equal(
    describeMoment(Date.parse('2026-12-07T12:00:00+13:00'), 'Pacific/Auckland'),
    'Monday 7 December 2026 at 12:00pm',
  );
});

test("describeMoment keeps a minute's words only where the whole minute reads the same", () => {
  // Runs of instants, as a run of charges makes: each step a few seconds on, through NZ's DST
  // changes, Lord Howe's half-hour one and Samoa's skipped day.
  const runs: Array<[string, string]> = [
    ['2026-04-05T02:55:00+13:00', 'Pacific/Auckland'],
    ['2026-09-27T01:55:00+12:00', 'Pacific/Auckland'],
    ['2026-04-05T01:55:00+11:00', 'Australia/Lord_Howe'],
    ['2011-12-29T23:50:00-10:00', 'Pacific/Apia'],
    // Local mean time, an offset with seconds (+11:39:04): the local minute turns inside a UTC minute.
    ['1850-06-01T00:00:00Z', 'Pacific/Auckland'],
  ];
  fc.assert(
    fc.property(
      fc.constantFrom(...runs),
      fc.array(fc.integer({ min: 0, max: 20_000 }), { minLength: 1, maxLength: 120 }),
      ([from, zone], steps) => {
        let ms = Date.parse(from);
        for (const step of steps) {
          ms += step;
          assert.equal(describeMoment(ms, zone), describedByLuxon(ms, zone), new Date(ms).toISOString());
        }
      },
    ),
    { numRuns: 200 },
  );
  const lmt = Date.parse('1850-06-01T00:00:00Z');
  for (let second = 0; second < 60; second++)
    assert.equal(
      describeMoment(lmt + second * 1000, 'Pacific/Auckland'),
      describedByLuxon(lmt + second * 1000, 'Pacific/Auckland'),
    );
});

const SHORT_MONTHS = ['Jan', 'Feb', 'Mar', 'Apr', 'May', 'Jun', 'Jul', 'Aug', ['Sep', 'Sept'], 'Oct', 'Nov', 'Dec'];

test('parseCalendarDate reads a short month name in any case, September as Sep or Sept', () => {
  const day = fc.integer({ min: Date.UTC(1990, 0, 1), max: Date.UTC(2100, 0, 1) }).map((ms) => new Date(ms));
  const spelling = fc.constantFrom<(name: string) => string>(
    (name) => name,
    (name) => name.toUpperCase(),
    (name) => name.toLowerCase(),
  );
  fc.assert(
    fc.property(day, spelling, fc.boolean(), (date, spell, longSeptember) => {
      const names = [SHORT_MONTHS[date.getUTCMonth()]!].flat();
      const name = spell(names[longSeptember ? names.length - 1 : 0]!);
      const [year, day] = [date.getUTCFullYear(), date.getUTCDate()];
      const expected = date.toISOString().slice(0, 10);
      assert.equal(parseCalendarDate(`${day} ${name} ${year}`, ['dd-MM-yyyy', 'd MMM yyyy']), expected);
      assert.equal(parseCalendarDate(`${String(day).padStart(2, '0')} ${name} ${year}`, ['dd MMM yyyy']), expected);
    }),
    { numRuns: 2000 },
  );
  assert.equal(parseCalendarDate('31 Sept 2027', ['d MMM yyyy']), null);
  assert.equal(parseCalendarDate('1 Sep 2027', ['d/M/yyyy']), null);
});
