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

export function formatAmount(cents: number): Amount {
  return { value: amountValue(cents), formatted: `$${centsToDecimal(cents)}` };
}

/** "$1,234.50" for people reading a page (the API's `formatted` keeps the plain form). */
export function displayAmount(cents: number): string {
  const [whole, fraction] = centsToDecimal(cents).split('.');
  return `$${whole.replace(/\B(?=(\d{3})+(?!\d))/g, ',')}.${fraction}`;
}
