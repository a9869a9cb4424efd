import { DateTime, FixedOffsetZone, IANAZone } from 'luxon';
import { parseDateTime } from './date-time.ts';
import { MINUTE_MS } from './time.ts';

// Calendar arithmetic in a named time zone (the service's, Pacific/Auckland by default).
// Luxon does the DST work; nothing here adds hours by hand. This is the one file that imports it:
// the rest of Tono reaches local time through the functions below.

/** A moment read in a time zone: its local date, time, week and month. */
export type LocalDateTime = DateTime;

/** The moment `ms` as read in `zone`. */
export function inZone(ms: number, zone: string): LocalDateTime {
  return DateTime.fromMillis(ms, { zone });
}

/** A local date or date-time (ISO 8601 without offset) in `zone`; check `isValid`. */
export function localAt(iso: string, zone: string): LocalDateTime {
  return DateTime.fromISO(iso, { zone });
}

/** A local date-time at a fixed UTC offset, in minutes (the offset in force before a DST change). */
export function atFixedOffset(iso: string, offsetMinutes: number): LocalDateTime {
  return DateTime.fromISO(iso, { zone: FixedOffsetZone.instance(offsetMinutes) });
}

/** The moment `ms` as local date and time with its UTC offset, to the second: 2026-11-27T19:01:00+13:00. */
export function localIsoWithOffset(ms: number, zone: string): string {
  return DateTime.fromMillis(ms, { zone }).toISO({ suppressMilliseconds: true })!;
}

export function isValidZone(zone: string): boolean {
  return IANAZone.isValidZone(zone);
}

/** The service's time zone unless SERVICE_TIME_ZONE says otherwise. */
export const DEFAULT_ZONE = 'Pacific/Auckland';

const dateOnly = /^\d{4}-\d{2}-\d{2}$/;

export function isDateOnly(value: string): boolean {
  return dateOnly.test(value);
}

/**
 * Epoch ms of a date-time with an offset in the API's form (shared/date-time.ts), or null when it
 * is not one. Not Luxon's fromISO: it reads 24:00 as the next day and any offset up to +99:99.
 */
export function parseInstant(value: string): number | null {
  return parseDateTime(value);
}

/** The local calendar date (YYYY-MM-DD) in `zone` of a date or date-time input; null when invalid. */
export function localDateOf(value: string, zone: string): string | null {
  if (isDateOnly(value)) {
    const parsed = DateTime.fromISO(value, { zone });
    return parsed.isValid ? value : null;
  }
  const instant = parseInstant(value);
  return instant === null ? null : DateTime.fromMillis(instant, { zone }).toISODate();
}

/** `hour`:00 local time on a local date. */
export function atLocalTime(localDate: string, zone: string, hour: number, minute = 0): number {
  return DateTime.fromISO(localDate, { zone }).set({ hour, minute, second: 0, millisecond: 0 }).toMillis();
}

/** The last millisecond of a local date. */
export function endOfLocalDay(localDate: string, zone: string): number {
  return DateTime.fromISO(localDate, { zone }).endOf('day').toMillis();
}

/** An end date: a date means the end of that local day; a date-time is taken as the exact instant. */
export function parseEndInput(value: string, zone: string): number | null {
  if (isDateOnly(value)) {
    const date = localDateOf(value, zone);
    return date === null ? null : endOfLocalDay(date, zone);
  }
  return parseInstant(value);
}

const momentFormats = new Map<string, Intl.DateTimeFormat>();

/** One formatter per zone: making an Intl.DateTimeFormat costs far more than using one. */
function momentFormatOf(zone: string): Intl.DateTimeFormat {
  let format = momentFormats.get(zone);
  if (!format) {
    format = new Intl.DateTimeFormat('en-US', {
      timeZone: zone,
      weekday: 'long',
      day: 'numeric',
      month: 'long',
      year: 'numeric',
      hour: 'numeric',
      minute: '2-digit',
      hourCycle: 'h12',
    });
    momentFormats.set(zone, format);
  }
  return format;
}

/** The words of one whole UTC minute in a zone, when every instant of it reads the same there. */
type MinuteWords = { start: number; words: string };
const lastMinute = new Map<string, MinuteWords>();

function wordsOf(ms: number, zone: string): string {
  const part: Partial<Record<Intl.DateTimeFormatPartTypes, string>> = {};
  for (const { type, value } of momentFormatOf(zone).formatToParts(ms)) part[type] = value;
  return `${part.weekday} ${part.day} ${part.month} ${part.year!.padStart(4, '0')} at ${part.hour}:${part.minute}${part.dayPeriod!.toLowerCase()}`;
}

/**
 * A moment as the payer reads it, for example "Monday 7 December 2026 at 10:00am". Read from the
 * platform's Intl parts rather than through Luxon, which works out the zone's offset and a
 * formatter per token on every call: every subscription receipt says when it was charged, and
 * this was 4% of a charge's CPU (docs/performance.md). The words of the last UTC minute are kept
 * per zone, since a run of charges falls in the same minute; only for a minute whose first and
 * last millisecond read the same, so a change of offset inside it (or an offset with seconds)
 * is never papered over. zone.test.ts holds it to Luxon's `cccc d LLLL yyyy 'at' h:mma`.
 */
export function describeMoment(ms: number, zone: string): string {
  const start = ms - (((ms % MINUTE_MS) + MINUTE_MS) % MINUTE_MS);
  const known = lastMinute.get(zone);
  if (known && known.start === start) return known.words;
  const words = wordsOf(start, zone);
  if (words !== wordsOf(start + MINUTE_MS - 1, zone)) return wordsOf(ms, zone);
  if (lastMinute.size >= 1000) lastMinute.clear();
  lastMinute.set(zone, { start, words });
  return words;
}

/**
 * The locales whose month names a date may be written in. New Zealand English shortens September
 * to "Sept", American English to "Sep", and banks write either; the other months read the same.
 */
const MONTH_NAME_LOCALES = ['en-NZ', 'en-US'] as const;
const DIGITS_LOCALES = ['en-NZ'] as const;

/** The locales to read a format in (luxon's tokens): both where it has a month name (MMM, LLLL…). */
const localesFor = (format: string) => (/MMM|LLL/.test(format) ? MONTH_NAME_LOCALES : DIGITS_LOCALES);

/**
 * A calendar date written in one of `formats` (luxon's tokens: `dd/MM/yyyy`, `yyyy/MM/dd`,
 * `d MMM yyyy`…), as YYYY-MM-DD; null when it is in none of them or is no real date. Month names
 * are read in any case, and both "Sep" and "Sept".
 */
export function parseCalendarDate(text: string, formats: readonly string[]): string | null {
  const value = text.trim();
  for (const format of formats) {
    for (const locale of localesFor(format)) {
      const parsed = DateTime.fromFormat(value, format, { zone: 'UTC', locale });
      if (parsed.isValid) return parsed.toISODate();
    }
  }
  return null;
}

/**
 * The local date (YYYY-MM-DD) in `zone` of a date and time at a fixed UTC offset in minutes;
 * null when the date or time is not real. Hour 24 is refused: Luxon would read it as the next
 * day's midnight.
 */
export function localDateAtOffset(
  parts: {
    year: number;
    month: number;
    day: number;
    hour: number;
    minute: number;
    second: number;
    millisecond: number;
  },
  offsetMinutes: number,
  zone: string,
): string | null {
  if (parts.hour > 23) return null;
  const moment = DateTime.fromObject(parts, { zone: FixedOffsetZone.instance(offsetMinutes) });
  return moment.isValid ? moment.setZone(zone).toISODate() : null;
}

/** The local calendar date (YYYY-MM-DD) in `zone` of the moment `ms`. */
export function localDateAt(ms: number, zone: string): string {
  return DateTime.fromMillis(ms, { zone }).toISODate()!;
}

/** Whole days from one calendar date (YYYY-MM-DD) to another: negative when `to` is earlier. */
export function daysBetween(from: string, to: string): number {
  return Math.round(DateTime.fromISO(to, { zone: 'UTC' }).diff(DateTime.fromISO(from, { zone: 'UTC' }), 'days').days);
}

/** The calendar date `days` after (or before, when negative) a date (YYYY-MM-DD). */
export function addDays(date: string, days: number): string {
  return DateTime.fromISO(date, { zone: 'UTC' }).plus({ days }).toISODate()!;
}
