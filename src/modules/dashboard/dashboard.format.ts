import { isIdOf, type IdKind } from '../../shared/ids.ts';
import { atLocalTime, endOfLocalDay, inZone, isDateOnly, localDateOf } from '../../shared/zone.ts';

// Pure helpers the dashboard's pages and forms use: how times and amounts read, how a form's
// text becomes a query, what a page link carries.

const formatters = new Map<string, Intl.DateTimeFormat>();

/** A time as merchants read it, in the service time zone: "23 Nov 2026, 10:30 am". */
export function when(ms: number | string | null | undefined, zone: string): string {
  if (ms === null || ms === undefined || ms === '') return '';
  const date = typeof ms === 'number' ? new Date(ms) : new Date(ms);
  if (Number.isNaN(date.getTime())) return '';
  let format = formatters.get(zone);
  if (!format) {
    format = new Intl.DateTimeFormat('en-NZ', { dateStyle: 'medium', timeStyle: 'short', timeZone: zone });
    formatters.set(zone, format);
  }
  return format.format(date);
}

/** "12.50 NZD" (the API's amount text) or cents, as "$12.50". */
export function money(amount: string | number | null | undefined): string {
  if (amount === null || amount === undefined) return '';
  const cents = typeof amount === 'number' ? amount : Math.round(Number(amount.replace(/ NZD$/, '')) * 100);
  if (!Number.isFinite(cents)) return String(amount);
  const sign = cents < 0 ? '-' : '';
  const abs = Math.abs(cents);
  return `${sign}$${Math.floor(abs / 100).toLocaleString('en-NZ')}.${String(abs % 100).padStart(2, '0')}`;
}

/** A date field (YYYY-MM-DD) as the first millisecond of that local day, or the first after it; null when blank or not a date. */
export function dayBound(value: unknown, zone: string, end: boolean): number | null {
  if (typeof value !== 'string' || !isDateOnly(value) || localDateOf(value, zone) === null) return null;
  return end ? endOfLocalDay(value, zone) + 1 : atLocalTime(value, zone, 0);
}

/** The date filters of a list that name no day, in the list form's words: the message, and its inputs. */
export type DateFilterProblem = { message: string; inputs: Array<'from' | 'to'> };

/**
 * What a list page says when its `from` or `to` filter is not a date (a hand-edited or old link:
 * the date picker sends only dates). The list is then shown without that bound, so the page must
 * say so rather than show more than was asked for without a word. Null when both are dates or blank.
 */
export function dateFilterProblem(
  filters: { from: string; to: string },
  zone: string,
  labels: { from: string; to: string },
): DateFilterProblem | null {
  const inputs = (['from', 'to'] as const).filter(
    (input) => filters[input] !== '' && dayBound(filters[input], zone, false) === null,
  );
  if (inputs.length === 0) return null;
  const named = inputs.map((input) => `“${labels[input]}” (${filters[input]})`).join(' and ');
  const [verb, noun, pronoun] = inputs.length === 1 ? ['is', 'a date', 'it'] : ['are', 'dates', 'them'];
  return {
    message: `${named} ${verb} not ${noun} we understand, so the page is shown without ${pronoun}. Enter dates as year-month-day, such as 2026-12-01.`,
    inputs: [...inputs],
  };
}

/** A message with the API's amounts ("50.00 NZD") written as the dashboard shows money ("$50.00"). */
export function withShownMoney(message: string): string {
  return message.replace(/-?\d+(?:\.\d{1,2})? NZD\b/g, (amount) => money(amount));
}

/** The local date (YYYY-MM-DD) of an instant. */
export function localDay(ms: number, zone: string): string {
  return inZone(ms, zone).toISODate()!;
}

/** A query string of the non-empty values, for links that keep a list's filters. */
export function queryOf(values: Record<string, string | undefined | null>): string {
  const params = new URLSearchParams();
  for (const [key, value] of Object.entries(values)) if (value) params.set(key, value);
  const text = params.toString();
  return text ? `?${text}` : '';
}

/** The first string of a form or query value (a repeated field arrives as an array). */
export function text(value: unknown, max = 500): string {
  const first = Array.isArray(value) ? value[0] : value;
  return typeof first === 'string' ? first.trim().slice(0, max) : '';
}

/** A query value that must be one of `allowed` (a status filter, say), or '' for any other. */
export function oneOf<T extends string>(value: unknown, allowed: readonly T[]): T | '' {
  const given = text(value);
  return (allowed as readonly string[]).includes(given) ? (given as T) : '';
}

/** A list's `after` cursor: an id of this kind, or '' for anything else. */
export function cursorOf(kind: IdKind, value: unknown): string {
  const given = text(value);
  return isIdOf(kind, given) ? given : '';
}

/** Every string of a repeated form field (checkboxes). */
export function texts(value: unknown): string[] {
  const all = Array.isArray(value) ? value : value === undefined ? [] : [value];
  return all.filter((v): v is string => typeof v === 'string');
}

/** Masks a secret in text so only its first and last four characters show. */
export function maskSecret(secret: string): string {
  return secret.length <= 12 ? '••••' : `${secret.slice(0, 4)}••••${secret.slice(-4)}`;
}
