// Money is integer cents inside the service; the wire form is "<decimal> NZD".
// Parsing and formatting live here and nowhere else.

export const MAX_PAYMENT_CENTS = 500_000;
export const AMOUNT_PATTERN = '^(0|[1-9][0-9]*)\\.[0-9]{2} NZD$';
export const AMOUNT_FORM = '<decimal> NZD with two decimals, for example "10.00 NZD"';
const amountRegex = new RegExp(AMOUNT_PATTERN);

export type Amount = { value: string; formatted: string };

/** Returns cents, or null when the string is not an amount in the exact wire form. */
export function parseAmount(input: unknown): number | null {
  if (typeof input !== 'string' || input.length > 24 || !amountRegex.test(input)) return null;
  const [whole, fraction] = input.slice(0, -4).split('.');
  const cents = Number(whole) * 100 + Number(fraction);
  return Number.isSafeInteger(cents) ? cents : null;
}

export function centsToDecimal(cents: number): string {
  const sign = cents < 0 ? '-' : '';
  const abs = Math.abs(cents);
  return `${sign}${Math.floor(abs / 100)}.${String(abs % 100).padStart(2, '0')}`;
}

export function amountValue(cents: number): string {
  return `${centsToDecimal(cents)} NZD`;
}

/** The sign goes before the dollar sign: "-$2.50", as receipts and banks write it. */
const signOf = (cents: number) => (cents < 0 ? '-' : '');

export function formatAmount(cents: number): Amount {
  return { value: amountValue(cents), formatted: `${signOf(cents)}$${centsToDecimal(Math.abs(cents))}` };
}

/** "$1,234.50" for people reading a page (the API's `formatted` keeps the plain form). */
export function displayAmount(cents: number): string {
  const [whole, fraction] = centsToDecimal(Math.abs(cents)).split('.');
  return `${signOf(cents)}$${whole.replace(/\B(?=(\d{3})+(?!\d))/g, ',')}.${fraction}`;
}

const decimalRegex = /^([+-])?\$?(\d{1,3}(?:,\d{3})+|\d+)(?:\.(\d{1,2}))?$/;

/**
 * Cents of an amount as a bank's statement file writes it: "12.34", "-5", "1,234.50", "$10.00",
 * "+3.2"; null for anything else (more than two decimals, letters, an empty cell). Exact: the digits
 * are read as text, never through a float.
 */
export function parseDecimalCents(input: string): number | null {
  const match = decimalRegex.exec(input.trim());
  if (!match) return null;
  const [, sign, whole, fraction = ''] = match;
  const cents = Number(whole!.replace(/,/g, '')) * 100 + Number(fraction.padEnd(2, '0'));
  if (!Number.isSafeInteger(cents)) return null;
  return sign === '-' && cents !== 0 ? -cents : cents;
}
