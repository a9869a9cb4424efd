// The one form of date-time the API reads, wherever a field takes one (docs/api-conventions.md):
// RFC 3339 with an uppercase T and Z, seconds and their fraction optional, and an offset no
// offset in use can exceed (±14:00). Parsers are lenient in different ways (24:00, +99:99, a
// lowercase t, a space for the T), so every endpoint reads its date-times here rather than
// through whichever parser it happens to hold, and accepts and refuses the same forms.

const DATE = '\\d{4}-(?:0[1-9]|1[0-2])-(?:0[1-9]|[12]\\d|3[01])';
const TIME = '(?:[01]\\d|2[0-3]):[0-5]\\d(?::[0-5]\\d(?:\\.\\d{1,9})?)?';
const OFFSET = '(?:Z|[+-](?:(?:0\\d|1[0-3]):[0-5]\\d|14:00))';

/** A date-time as a JSON Schema pattern (the calendar day is checked by `parseDateTime`). */
export const DATE_TIME_PATTERN = `^${DATE}T${TIME}${OFFSET}$`;
/** A date alone, or a date-time, as a JSON Schema pattern. */
export const DATE_OR_DATE_TIME_PATTERN = `^${DATE}(?:T${TIME}${OFFSET})?$`;

const DATE_TIME_PARTS =
  /^(\d{4})-(\d{2})-(\d{2})T(\d{2}):(\d{2})(?::(\d{2})(?:\.(\d{1,9}))?)?(?:Z|([+-])(\d{2}):(\d{2}))$/;
const dateTimeShape = new RegExp(DATE_TIME_PATTERN);

const DAYS_IN_MONTH = [31, 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31];

function isLeapYear(year: number): boolean {
  return (year % 4 === 0 && year % 100 !== 0) || year % 400 === 0;
}

/** Whether the day is on the calendar: 31 April and 29 February 2027 are not. */
export function isCalendarDay(year: number, month: number, day: number): boolean {
  const days = month === 2 && isLeapYear(year) ? 29 : DAYS_IN_MONTH[month - 1]!;
  return day >= 1 && day <= days;
}

/** Epoch ms of a UTC date and time; Date.UTC alone would read years 0 to 99 as 1900 to 1999. */
function utcMs(year: number, month: number, day: number, hour: number, minute: number, second: number, ms: number) {
  const date = new Date(0);
  date.setUTCFullYear(year, month - 1, day);
  date.setUTCHours(hour, minute, second, ms);
  return date.getTime();
}

/** Epoch ms of a date-time in the API's form, or null when it is in another form or on no real day. */
export function parseDateTime(value: string): number | null {
  if (!dateTimeShape.test(value)) return null;
  const [, year, month, day, hour, minute, second = '0', fraction = '', sign, offsetHours = '0', offsetMinutes = '0'] =
    DATE_TIME_PARTS.exec(value)!;
  if (!isCalendarDay(Number(year), Number(month), Number(day))) return null;
  const local = utcMs(
    Number(year),
    Number(month),
    Number(day),
    Number(hour),
    Number(minute),
    Number(second),
    Number(fraction.padEnd(3, '0').slice(0, 3)),
  );
  const offsetMs = (Number(offsetHours) * 60 + Number(offsetMinutes)) * 60_000;
  return sign === '-' ? local + offsetMs : local - offsetMs;
}

/** Whether a value is a date-time in the API's form, on a real day. */
export function isDateTime(value: string): boolean {
  return parseDateTime(value) !== null;
}
