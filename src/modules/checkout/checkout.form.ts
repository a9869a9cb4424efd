import { displayAmount } from '../../shared/money.ts';
import type { PayerDetails } from '../customers/customers.service.ts';
import { EMPTY_ADDRESS } from '../customers/customers.rules.ts';
import { boundsOf, paymentAmount, parsePayerAmount } from '../payments/payments.rules.ts';
import type { RequestRow } from '../requests/requests.tables.ts';

// The payment page's form: which fields a request shows, and the posted form read into a payment
// start or a list of errors tied to fields. Pure, so every rule is tested without a browser.

export type FieldError = { field: string; message: string };
export type FormValues = Record<string, string>;

export type DetailFields = {
  email: 'none' | 'optional' | 'required';
  names: 'none' | 'optional' | 'required';
  phone: 'none' | 'optional' | 'required';
  address: boolean;
  marketingOptIn: boolean;
};

/**
 * The fields a request's page shows. `buyer`: the payment is over $1,000 and the merchant issues tax
 * invoices, which then show the buyer's name and address (docs/receipts.md), so both are required.
 */
export function detailFieldsOf(request: RequestRow, buyer = false): DetailFields {
  const basic = request.require_customer_basic_info === 1;
  const marketing = request.allow_marketing_opt_in === 1;
  return {
    email: basic ? 'required' : marketing ? 'optional' : 'none',
    names: basic || buyer ? 'required' : marketing ? 'optional' : 'none',
    phone:
      request.require_customer_phone === 1 ? 'required' : request.collect_customer_phone === 1 ? 'optional' : 'none',
    address: request.require_customer_address === 1 || buyer,
    marketingOptIn: marketing,
  };
}

/** $1,000 in cents: a tax invoice for more shows the buyer's name and address. */
const BUYER_DETAILS_OVER_CENTS = 100_000;

/** Whether a one-off payment of this amount needs the buyer's name and address for its tax invoice. */
export function buyerDetailsNeeded(
  request: RequestRow,
  amountCents: number | null,
  issuesTaxInvoices: boolean,
): boolean {
  const cents = request.amount_cents ?? amountCents;
  return issuesTaxInvoices && request.kind === 'payment' && cents !== null && cents > BUYER_DETAILS_OVER_CENTS;
}

/** The amount a posted form chose, if it is one (for showing the buyer's fields again). */
export function postedAmount(values: FormValues): number | null {
  const raw = text(values, 'amount_other') || text(values, 'amount_choice');
  return raw === '' ? null : parsePayerAmount(raw);
}

export function collectsDetails(fields: DetailFields): boolean {
  return fields.email !== 'none' || fields.phone !== 'none' || fields.address;
}

/**
 * The one-tap amounts of a payer-chosen amount: the merchant's `suggested_amounts`, or, when it gave
 * a minimum and a maximum only, a few derived from them (quickAmountsBetween).
 */
export function suggestionsOf(request: RequestRow): number[] {
  if (request.suggested_amounts)
    return request.suggested_amounts
      .split(',')
      .map((item) => parsePayerAmount(item))
      .filter((c): c is number => c !== null);
  if (request.min_payment_cents === null || request.max_payment_cents === null) return [];
  return quickAmountsBetween(request.min_payment_cents, request.max_payment_cents);
}

/** Whole-dollar amounts a payer recognises: 1, 2, 5, 10, 20, 50, … dollars, in cents. */
function roundAmountsUpTo(maxCents: number): number[] {
  const amounts: number[] = [];
  for (let decade = 100; decade <= maxCents; decade *= 10)
    for (const step of [1, 2, 5]) if (decade * step <= maxCents) amounts.push(decade * step);
  return amounts;
}

/**
 * Up to three one-tap amounts between a minimum and a maximum (docs/checkout.md): of the round
 * amounts (1, 2, 5, 10, 20, 50, … dollars) inside the bounds, the lowest, the middle one and the
 * highest; with fewer than two round amounts inside, the bounds themselves and what lies between.
 */
export function quickAmountsBetween(minCents: number, maxCents: number): number[] {
  if (minCents > maxCents) return [];
  const inside = roundAmountsUpTo(maxCents).filter((cents) => cents >= minCents);
  const picked =
    inside.length >= 2
      ? [inside[0]!, inside[Math.floor(inside.length / 2)]!, inside[inside.length - 1]!]
      : [minCents, ...inside, maxCents];
  return [...new Set(picked)].sort((a, b) => a - b);
}

const EMAIL = /^[^\s@<>()[\],;:"]+@[^\s@<>()[\],;:"]+\.[^\s@<>()[\],;:"]{2,}$/;
const PHONE = /^\+?[0-9 ()-]{5,31}$/;
const text = (values: FormValues, name: string) => (values[name] ?? '').trim();

/** For a typed amount that is not one. It names the full stop: a decimal comma ("12,50") is the likely slip. */
const AMOUNT_FORMAT_MESSAGE =
  'Enter the amount in dollars and cents, with a full stop before the cents, for example 25.00';

export type ParsedForm =
  | { ok: true; amountCents: number | null; bankId: string; details: PayerDetails | null }
  | { ok: false; errors: FieldError[] };

/** The posted form, checked against the request: the start of a payment, or every error at once. */
export function parseCheckoutForm(
  request: RequestRow,
  values: FormValues,
  bankIds: string[],
  issuesTaxInvoices = false,
): ParsedForm {
  const errors: FieldError[] = [];
  let amountCents: number | null = null;
  // Recurring and subscription requests carry their amounts in their options: nothing to choose.
  if (request.amount_cents === null && request.kind === 'payment') {
    const typed = text(values, 'amount_other');
    const chosen = text(values, 'amount_choice');
    const raw = typed !== '' ? typed : chosen === 'other' ? '' : chosen;
    const field =
      typed !== '' || chosen === 'other' || suggestionsOf(request).length === 0 ? 'amount_other' : 'amount_choice';
    const cents = raw === '' ? null : parsePayerAmount(raw);
    if (raw !== '' && cents === null) {
      errors.push({ field, message: AMOUNT_FORMAT_MESSAGE });
    } else {
      const check = paymentAmount(
        { fixedCents: null, minCents: request.min_payment_cents, maxCents: request.max_payment_cents },
        cents,
      );
      if (check.ok) amountCents = check.cents;
      else errors.push({ field, message: cents === null ? 'Choose or enter an amount' : check.message });
    }
  }

  const fields = detailFieldsOf(request, buyerDetailsNeeded(request, amountCents, issuesTaxInvoices));
  let details: PayerDetails | null = null;
  if (collectsDetails(fields)) {
    const need = (name: string, label: string, rule: 'none' | 'optional' | 'required', max = 100) => {
      const value = text(values, name);
      if (rule === 'required' && value === '') errors.push({ field: name, message: `Enter your ${label}` });
      else if (value.length > max)
        errors.push({ field: name, message: `Your ${label} must be at most ${max} characters` });
      return value;
    };
    const email = need('email', 'email address', fields.email, 254);
    if (email !== '' && !EMAIL.test(email))
      errors.push({ field: 'email', message: 'Enter an email address like name@example.com' });
    const firstName = need('first_name', 'first name', fields.names);
    const lastName = need('last_name', 'last name', fields.names);
    const phone = need('phone', 'phone number', fields.phone, 32);
    if (phone !== '' && !PHONE.test(phone))
      errors.push({
        field: 'phone',
        message: 'Enter a phone number using digits, spaces, ( ) - and an optional leading +',
      });
    const addressRule = fields.address ? 'required' : 'none';
    const address1 = need('address1', 'street address', addressRule);
    const address2 = need('address2', 'address line 2', 'optional');
    const city = need('city', 'town or city', addressRule);
    const postcode = need('postcode', 'postcode', addressRule, 10);
    if (postcode !== '' && !/^[0-9]{4}$/.test(postcode))
      errors.push({ field: 'postcode', message: 'Enter a 4-digit New Zealand postcode' });
    details = {
      email: email || null,
      first_name: firstName || null,
      last_name: lastName || null,
      phone: phone || null,
      ...EMPTY_ADDRESS,
      address1,
      address2,
      city,
      postcode,
      marketing_opt_in: fields.marketingOptIn && ['on', 'yes', 'true'].includes(text(values, 'marketing_opt_in')),
    };
  }

  const bankId = text(values, 'bank');
  if (bankId === '' || !bankIds.includes(bankId)) errors.push({ field: 'bank', message: 'Choose your bank' });

  if (errors.length > 0) return { ok: false, errors };
  return { ok: true, amountCents, bankId, details };
}

/** The bounds line the payer sees under a dynamic amount field. */
export function boundsText(request: RequestRow): string {
  const { min, max } = boundsOf({
    fixedCents: null,
    minCents: request.min_payment_cents,
    maxCents: request.max_payment_cents,
  });
  return `Between ${displayAmount(min)} and ${displayAmount(max)}`;
}
