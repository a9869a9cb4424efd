import { invalidParam, missingParam } from '../../shared/errors.ts';
import { AMOUNT_FORM, amountValue, MAX_PAYMENT_CENTS, parseAmount } from '../../shared/money.ts';
import { DAY_MS, MINUTE_MS, HOUR_MS } from '../../shared/time.ts';
import { atLocalTime, isDateOnly, localDateOf, parseEndInput, parseInstant } from '../../shared/zone.ts';
import type { CreateRequestBody, RecurringPeriod } from './requests.schemas.ts';

// The creation rules of requests (docs/api-conventions.md, docs/recurring.md, docs/subscriptions.md), as one pure function:
// body + now + zone in, normalised request or the first rule broken out.

export type RequestKind = 'payment' | 'recurring' | 'subscription';

export type RecurringOptions = {
  period: (typeof RecurringPeriod)[number];
  max_per_period_cents: number;
  max_per_payment_cents: number | null;
  total_count: number | null;
  total_amount_cents: number | null;
  end_at: number | null;
};

export type SubscriptionOptions = {
  amount_cents: number;
  period: 'weekly' | 'fortnightly' | 'monthly' | 'quarterly' | 'annually';
  start_at: number | null;
  end_at: number | null;
  total_count: number | null;
};

export type CustInfo = { email: string; first_name?: string; last_name?: string; phone?: string };

export type NormalisedRequest = {
  kind: RequestKind;
  type: 'single' | 'multi';
  amountCents: number | null;
  minCents: number | null;
  maxCents: number | null;
  suggestedAmounts: string | null;
  expiresAt: number | null;
  recurring: RecurringOptions | null;
  subscription: SubscriptionOptions | null;
  custInfo: CustInfo | null;
};

const MAX_LIMIT_CENTS = 100_000_000_00;
const durationUnits: Record<string, number> = { m: MINUTE_MS, h: HOUR_MS, d: DAY_MS };

export function parseExpiresIn(value: string): number | null {
  const match = /^([1-9][0-9]{0,6})([mhd])$/.exec(value);
  if (!match) return null;
  const ms = Number(match[1]) * durationUnits[match[2]];
  return ms >= MINUTE_MS && ms <= 365 * DAY_MS ? ms : null;
}

function amountField(field: string, value: string, max = MAX_PAYMENT_CENTS): number {
  const cents = parseAmount(value);
  if (cents === null) throw invalidParam(field, `${field} must be ${AMOUNT_FORM}`);
  if (cents === 0) throw invalidParam(field, `${field} must be more than 0.00 NZD`);
  if (cents > max)
    throw invalidParam(field, `${field} must be at most ${amountValue(max)}`, { maximum: amountValue(max) });
  return cents;
}

export function isAllowedUrl(value: string): boolean {
  let url: URL;
  try {
    url = new URL(value);
  } catch {
    return false;
  }
  if (url.protocol === 'https:') return true;
  return url.protocol === 'http:' && ['localhost', '127.0.0.1', '[::1]'].includes(url.hostname);
}

const urlFields = ['success_redirect_url', 'failure_redirect_url', 'logo_image_url', 'banner_image_url'] as const;

function parseSuggested(value: string, min: number, max: number): string {
  const items = value.split(',').map((item) => item.trim());
  if (items.length > 6) throw invalidParam('suggested_amounts', 'suggested_amounts takes at most 6 amounts');
  const cents = items.map((item) => {
    // Whole dollars ("5") are amounts too: the reply gives every amount with its cents ("5.00").
    const amount = item.replace(/ NZD$/, '');
    const parsed = parseAmount(/^\d+$/.test(amount) ? `${amount}.00 NZD` : `${amount} NZD`);
    if (parsed === null || parsed === 0) {
      throw invalidParam(
        'suggested_amounts',
        'suggested_amounts must be comma-separated amounts such as "10,20,50" or "10.00,20.00,50.00"',
      );
    }
    if (parsed < min || parsed > max) {
      throw invalidParam(
        'suggested_amounts',
        `each suggested amount must be between ${amountValue(min)} and ${amountValue(max)}`,
        { minimum: min, maximum: max },
      );
    }
    return parsed;
  });
  if (new Set(cents).size !== cents.length)
    throw invalidParam('suggested_amounts', 'suggested_amounts must not repeat an amount');
  return cents.map((c) => (c / 100).toFixed(2)).join(',');
}

/**
 * An end: a date is the end of that local day, a date-time that instant. A start: a date is 10:00
 * local on it (docs/subscriptions.md), a date-time that very instant, whose local time of day the
 * later charges keep.
 */
function dateField(field: string, value: string, zone: string, kind: 'start' | 'end'): number {
  const ms =
    kind === 'end'
      ? parseEndInput(value, zone)
      : isDateOnly(value)
        ? localDateOf(value, zone) === null
          ? null
          : atLocalTime(value, zone, 10)
        : parseInstant(value);
  if (ms === null) throw invalidParam(field, `${field} must be a real date YYYY-MM-DD or ISO 8601 date-time`);
  return ms;
}

/** A fixed amount, or the bounds and suggestions of a payer-chosen one; none where the options set the amounts. */
function amountsOf(body: CreateRequestBody, dynamic: boolean, special: string | null) {
  let amountCents: number | null = null;
  let minCents: number | null = null;
  let maxCents: number | null = null;
  let suggestedAmounts: string | null = null;
  if (dynamic) {
    if (body.amount !== undefined)
      throw invalidParam('amount', 'amount is not taken with allow_dynamic_amount: the payer chooses it');
    minCents = body.minimum_payment_amount ?? null;
    maxCents = body.maximum_payment_amount ?? null;
    if (minCents !== null && maxCents !== null && minCents > maxCents) {
      throw invalidParam(
        'minimum_payment_amount',
        'minimum_payment_amount must not be more than maximum_payment_amount',
        { minimum_payment_amount: minCents, maximum_payment_amount: maxCents },
      );
    }
    if (body.suggested_amounts !== undefined)
      suggestedAmounts = parseSuggested(body.suggested_amounts, minCents ?? 1, maxCents ?? MAX_PAYMENT_CENTS);
  } else if (!special) {
    if (body.amount === undefined) throw missingParam('amount');
    amountCents = amountField('amount', body.amount);
  }
  return { amountCents, minCents, maxCents, suggestedAmounts };
}

function recurringOptionsOf(
  recurringInput: NonNullable<CreateRequestBody['recurring_options']>,
  now: number,
  zone: string,
): RecurringOptions {
  const f = (name: string) => `recurring_options.${name}`;
  const maxPerPeriod = amountField(f('max_per_period'), recurringInput.max_per_period, MAX_LIMIT_CENTS);
  const maxPerPayment =
    recurringInput.max_per_payment === undefined
      ? null
      : amountField(f('max_per_payment'), recurringInput.max_per_payment);
  const totalAmount =
    recurringInput.total_amount === undefined
      ? null
      : amountField(f('total_amount'), recurringInput.total_amount, MAX_LIMIT_CENTS);
  if (maxPerPayment !== null && maxPerPayment > maxPerPeriod) {
    throw invalidParam(f('max_per_payment'), 'recurring_options.max_per_payment must not be more than max_per_period');
  }
  const endAt =
    recurringInput.end_date === undefined ? null : dateField(f('end_date'), recurringInput.end_date, zone, 'end');
  if (endAt !== null && endAt <= now)
    throw invalidParam(f('end_date'), 'recurring_options.end_date must be in the future');
  return {
    period: recurringInput.period,
    max_per_period_cents: maxPerPeriod,
    max_per_payment_cents: maxPerPayment,
    total_count: recurringInput.total_count ?? null,
    total_amount_cents: totalAmount,
    end_at: endAt,
  };
}

function subscriptionOptionsOf(
  subscriptionInput: NonNullable<CreateRequestBody['subscription_options']>,
  now: number,
  zone: string,
): SubscriptionOptions {
  const f = (name: string) => `subscription_options.${name}`;
  const amount = amountField(f('amount'), subscriptionInput.amount);
  const startAt =
    subscriptionInput.start_date === undefined
      ? null
      : dateField(f('start_date'), subscriptionInput.start_date, zone, 'start');
  const endAt =
    subscriptionInput.end_date === undefined ? null : dateField(f('end_date'), subscriptionInput.end_date, zone, 'end');
  if (endAt !== null && endAt <= now)
    throw invalidParam(f('end_date'), 'subscription_options.end_date must be in the future');
  if (endAt !== null && startAt !== null && endAt < startAt)
    throw invalidParam(f('end_date'), 'subscription_options.end_date must not be before start_date');
  return {
    amount_cents: amount,
    period: subscriptionInput.period,
    start_at: startAt,
    end_at: endAt,
    total_count: subscriptionInput.total_count ?? null,
  };
}

export function normaliseCreateRequest(body: CreateRequestBody, now: number, zone: string): NormalisedRequest {
  for (const field of urlFields) {
    const value = body[field];
    if (value !== undefined && !isAllowedUrl(value))
      throw invalidParam(field, `${field} must be an https URL (http only for localhost)`);
  }
  const type = body.type ?? 'single';
  const expiresAt =
    body.expires_in === undefined
      ? null
      : (() => {
          const ms = parseExpiresIn(body.expires_in);
          if (ms === null)
            throw invalidParam('expires_in', 'expires_in must be <n>m, <n>h or <n>d, from 1 minute to 365 days');
          return now + ms;
        })();
  const dynamic = body.allow_dynamic_amount === true;
  const recurringInput = body.recurring_options;
  const subscriptionInput = body.subscription_options;

  if (recurringInput && subscriptionInput) {
    throw invalidParam('subscription_options', 'A request takes recurring_options or subscription_options, not both');
  }
  const special = recurringInput ? 'recurring_options' : subscriptionInput ? 'subscription_options' : null;
  if (special) {
    if (body.amount !== undefined)
      throw invalidParam('amount', `amount is not taken with ${special}, which sets the amounts`);
    if (dynamic) throw invalidParam('allow_dynamic_amount', `allow_dynamic_amount is not taken with ${special}`);
    if (type !== 'single') throw invalidParam('type', `${special} is only supported with type single`);
    if (!body.cust_info) throw missingParam('cust_info.email');
  }
  const custInfo: CustInfo | null = body.cust_info
    ? { ...body.cust_info, email: body.cust_info.email.trim().toLowerCase() }
    : null;

  if (!dynamic) {
    for (const field of ['suggested_amounts', 'minimum_payment_amount', 'maximum_payment_amount'] as const) {
      if (body[field] !== undefined)
        throw invalidParam(field, `${field} is only taken with allow_dynamic_amount: true`);
    }
  }

  const { amountCents, minCents, maxCents, suggestedAmounts } = amountsOf(body, dynamic, special);

  const recurring = recurringInput ? recurringOptionsOf(recurringInput, now, zone) : null;
  const subscription = subscriptionInput ? subscriptionOptionsOf(subscriptionInput, now, zone) : null;

  if (body.require_customer_phone && body.collect_customer_phone === false) {
    throw invalidParam(
      'collect_customer_phone',
      'collect_customer_phone cannot be false when require_customer_phone is true',
    );
  }

  // Nothing can be agreed past the end: a request for a consent or a plan expires at its end_date
  // at the latest, rather than stay open for a payer the bank would refuse.
  const endAt = recurring?.end_at ?? subscription?.end_at ?? null;
  return {
    kind: recurring ? 'recurring' : subscription ? 'subscription' : 'payment',
    type,
    amountCents,
    minCents,
    maxCents,
    suggestedAmounts,
    expiresAt: endAt !== null && (expiresAt === null || endAt < expiresAt) ? endAt : expiresAt,
    recurring,
    subscription,
    custInfo,
  };
}
