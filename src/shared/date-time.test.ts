import { test } from 'node:test';
import assert from 'node:assert/strict';
import fc from 'fast-check';
import { DateTime, FixedOffsetZone } from 'luxon';
import { DATE_OR_DATE_TIME_PATTERN, DATE_TIME_PATTERN, isDateTime, parseDateTime } from './date-time.ts';

const two = (n: number) => String(n).padStart(2, '0');

/** Date-times written in the API's form from their parts, any day number to 31 (so some are no real day). */
const written = fc
  .record({
    year: fc.integer({ min: 1, max: 9999 }),
    month: fc.integer({ min: 1, max: 12 }),
    day: fc.integer({ min: 1, max: 31 }),
    hour: fc.integer({ min: 0, max: 23 }),
    minute: fc.integer({ min: 0, max: 59 }),
    second: fc.option(fc.integer({ min: 0, max: 59 })),
    fraction: fc.option(fc.stringMatching(/^\d{1,9}$/)),
    offset: fc.oneof(fc.constant('Z'), fc.integer({ min: -14 * 60, max: 14 * 60 })),
  })
  .map(({ year, month, day, hour, minute, second, fraction, offset }) => {
    const seconds = second === null ? '' : `:${two(second)}${fraction === null ? '' : `.${fraction}`}`;
    const zone =
      offset === 'Z'
        ? 'Z'
        : `${offset < 0 ? '-' : '+'}${two(Math.floor(Math.abs(offset) / 60))}:${two(Math.abs(offset) % 60)}`;
    return `${String(year).padStart(4, '0')}-${two(month)}-${two(day)}T${two(hour)}:${two(minute)}${seconds}${zone}`;
  });

test('parseDateTime reads every date-time in the API form as Luxon does, and no day that is not on the calendar', () => {
  fc.assert(
    fc.property(written, (value) => {
      const luxon = DateTime.fromISO(value, { setZone: true });
      assert.equal(parseDateTime(value), luxon.isValid ? luxon.toMillis() : null, value);
      assert.equal(new RegExp(DATE_TIME_PATTERN).test(value), true, value);
      assert.equal(new RegExp(DATE_OR_DATE_TIME_PATTERN).test(value), true, value);
    }),
    { numRuns: 5000 },
  );
});

test('parseDateTime takes back any instant written at any offset within ±14:00', () => {
  const instant = fc.integer({ min: Date.UTC(1900, 0, 1), max: Date.UTC(2200, 0, 1) });
  const offset = fc.integer({ min: -14 * 60, max: 14 * 60 });
  fc.assert(
    fc.property(instant, offset, (ms, minutes) => {
      const at = DateTime.fromMillis(ms, { zone: FixedOffsetZone.instance(minutes) });
      const minuteStart = ms - (((ms % 60_000) + 60_000) % 60_000);
      assert.equal(parseDateTime(at.toISO()!), ms);
      assert.equal(parseDateTime(at.toFormat("yyyy-MM-dd'T'HH:mmZZ")), minuteStart);
    }),
    { numRuns: 2000 },
  );
});

test('the forms the API accepts, and those it refuses', () => {
  for (const value of [
    '2027-06-01T10:00Z',
    '2027-06-01T10:00:00Z',
    '2027-06-01T10:00:00.1Z',
    '2027-06-01T10:00:00.123456789Z',
    '2027-06-01T10:00+12:00',
    '2027-06-01T10:00:00-00:00',
    '2027-06-01T10:00:00+14:00',
    '2027-06-01T10:00:00-14:00',
    '2027-06-01T10:00:00+05:45',
    '2028-02-29T23:59:59Z',
    '9999-12-31T00:00:00Z',
    '0001-01-01T00:00:00Z',
  ])
    assert.equal(isDateTime(value), true, value);
  assert.equal(parseDateTime('2027-06-01T10:00+12:00'), Date.parse('2027-05-31T22:00:00Z'));
  assert.equal(parseDateTime('2027-06-01T10:00:00.123456789Z'), Date.parse('2027-06-01T10:00:00.123Z'));
  assert.equal(parseDateTime('0001-01-01T00:00:00Z'), Date.parse('0001-01-01T00:00:00Z'));

  for (const value of [
    '2027-06-01T24:00Z',
    '2027-06-01T24:00:00+12:00',
    '2027-06-01T10:00+99:99',
    '2027-06-01T10:00+25:00',
    '2027-06-01T10:00+15:00',
    '2027-06-01T10:00+14:01',
    '2027-06-01T10:00-14:30',
    '2027-06-01T10:00+12:60',
    '2027-06-01T10:00+1200',
    '2027-06-01T10:00+12',
    '2027-06-01T10:00',
    '2027-06-01T10:00:00',
    '2027-06-01t10:00:00z',
    '2027-06-01T10:00:00z',
    '2027-06-01 10:00:00Z',
    '2027-06-01T10Z',
    '2027-06-01T10:60Z',
    '2027-06-01T23:59:60Z',
    '2027-06-01T10:00:00.Z',
    '2027-06-01T10:00:00.1234567890Z',
    '2027-02-29T10:00:00Z',
    '2027-04-31T10:00:00Z',
    '2027-13-01T10:00:00Z',
    '2027-00-01T10:00:00Z',
    '2027-06-00T10:00:00Z',
    '2027-06-01',
    '20270601T100000Z',
    ' 2027-06-01T10:00:00Z',
    '2027-06-01T10:00:00Z\n',
    '+002027-06-01T10:00:00Z',
  ])
    assert.equal(parseDateTime(value), null, value);
});

test('the date-or-date-time pattern also takes a date alone, in the same date-time form otherwise', () => {
  const either = new RegExp(DATE_OR_DATE_TIME_PATTERN);
  assert.equal(either.test('2027-06-01'), true);
  assert.equal(either.test('2027-06-01T10:00+12:00'), true);
  for (const value of [
    '2027-06-01T24:00Z',
    '2027-06-01T10:00+99:99',
    '2027-06-01t10:00z',
    '2027-06-01 10:00Z',
    '2027-6-1',
  ])
    assert.equal(either.test(value), false, value);
});
