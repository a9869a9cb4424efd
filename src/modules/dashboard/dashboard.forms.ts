import type { TSchema } from 'typebox';
import { schemaErrorToAppError, validatorCompiler } from '../../http/validation.ts';
import type { AppError } from '../../shared/errors.ts';
import { text, texts } from './dashboard.format.ts';

// Form posts become the API's JSON bodies here, and are checked against the API's own schemas,
// so a page and the API accept and refuse the same things with the same messages.

type Form = Record<string, unknown>;

/** "10", "10.5", "$10.50", "1,000.00" as the API's "10.50 NZD"; other text passes through for the schema to refuse. */
export function amountText(raw: string): string {
  const cleaned = raw.replace(/^\$/, '').replace(/,/g, '').trim();
  if (/^\d+(\.\d{1,2})?$/.test(cleaned)) {
    const [whole, fraction = ''] = cleaned.split('.');
    return `${String(Number(whole))}.${fraction.padEnd(2, '0')} NZD`;
  }
  return raw.endsWith(' NZD') ? raw : `${raw} NZD`;
}

/** Dollars typed in a form as whole cents; null when blank; NaN when not an amount (the schema refuses it). */
export function dollarsToCents(raw: string): number | null {
  if (!raw) return null;
  const cleaned = raw.replace(/^\$/, '').replace(/,/g, '').trim();
  if (!/^\d+(\.\d{1,2})?$/.test(cleaned)) return Number.NaN;
  const [whole, fraction = ''] = cleaned.split('.');
  return Number(whole) * 100 + Number(fraction.padEnd(2, '0'));
}

export const REQUEST_FLAGS = [
  ['require_customer_basic_info', 'Ask for the payer’s name and email'],
  ['collect_customer_phone', 'Show an optional phone field'],
  ['require_customer_phone', 'Require a phone number'],
  ['require_customer_address', 'Require a postal address'],
  ['allow_marketing_opt_in', 'Offer a marketing opt-in'],
  ['is_donation', 'Show it as a donation'],
  ['add_surcharge', 'Surcharge (recorded for your reporting)'],
  ['surcharge_optional', 'Surcharge optional (recorded for your reporting)'],
] as const;

const REQUEST_TEXTS = [
  'reference',
  'merchant_identifier',
  'expires_in',
  'success_redirect_url',
  'failure_redirect_url',
  'logo_image_url',
  'banner_image_url',
] as const;

/**
 * The create-request form as the API's body. `kind` picks one-off, recurring or subscription;
 * `pricing` a fixed or payer-chosen amount. Blank fields are left out, as an API caller would.
 */
export function requestBodyFromForm(form: Form): Record<string, unknown> {
  const body: Record<string, unknown> = {};
  const put = (key: string, value: unknown) => {
    if (value !== '' && value !== null && value !== undefined) body[key] = value;
  };
  put('bank_account_id', text(form.bank_account_id, 64));
  body.message = text(form.message, 200);
  const kind = text(form.kind) || 'one-off';
  for (const key of REQUEST_TEXTS) put(key, text(form[key], 2048));
  for (const [flag] of REQUEST_FLAGS) if (texts(form[flag]).includes('on')) body[flag] = true;

  if (kind === 'one-off') {
    put('type', text(form.type) || undefined);
    if (text(form.pricing) === 'payer') {
      body.allow_dynamic_amount = true;
      put('suggested_amounts', text(form.suggested_amounts, 200).replace(/\s+/g, ''));
      put('minimum_payment_amount', dollarsToCents(text(form.minimum_amount)));
      put('maximum_payment_amount', dollarsToCents(text(form.maximum_amount)));
    } else {
      const amount = text(form.amount, 30);
      put('amount', amount ? amountText(amount) : '');
    }
  } else if (kind === 'recurring') {
    const options: Record<string, unknown> = {};
    const opt = (key: string, value: unknown) => {
      if (value !== '' && value !== null && value !== undefined) options[key] = value;
    };
    opt('period', text(form.recurring_period));
    const max = text(form.recurring_max_per_period, 30);
    opt('max_per_period', max ? amountText(max) : '');
    const perPayment = text(form.recurring_max_per_payment, 30);
    opt('max_per_payment', perPayment ? amountText(perPayment) : '');
    const count = text(form.recurring_total_count, 10);
    opt('total_count', count ? Number(count) : '');
    const total = text(form.recurring_total_amount, 30);
    opt('total_amount', total ? amountText(total) : '');
    opt('end_date', text(form.recurring_end_date, 40));
    body.recurring_options = options;
  } else {
    const options: Record<string, unknown> = {};
    const opt = (key: string, value: unknown) => {
      if (value !== '' && value !== null && value !== undefined) options[key] = value;
    };
    const amount = text(form.subscription_amount, 30);
    opt('amount', amount ? amountText(amount) : '');
    opt('period', text(form.subscription_period));
    opt('start_date', text(form.subscription_start_date, 40));
    opt('end_date', text(form.subscription_end_date, 40));
    const count = text(form.subscription_total_count, 10);
    opt('total_count', count ? Number(count) : '');
    body.subscription_options = options;
  }

  const email = text(form.payer_email, 254);
  if (email || text(form.payer_first_name) || text(form.payer_last_name) || text(form.payer_phone)) {
    const cust: Record<string, unknown> = {};
    if (email) cust.email = email;
    for (const [key, field] of [
      ['first_name', 'payer_first_name'],
      ['last_name', 'payer_last_name'],
      ['phone', 'payer_phone'],
    ] as const) {
      const value = text(form[field], 100);
      if (value) cust[key] = value;
    }
    body.cust_info = cust;
  }
  return body;
}

const validators = new WeakMap<TSchema, (data: unknown) => boolean>();

/** The API's own check of a body: null when it passes, else the error the API would give. */
export function apiBodyProblem(schema: TSchema, body: unknown): AppError | null {
  let validate = validators.get(schema) as (((data: unknown) => boolean) & { errors?: any[] | null }) | undefined;
  if (!validate) {
    validate = validatorCompiler({ schema, httpPart: 'body', method: 'POST', url: '' } as any) as (
      data: unknown,
    ) => boolean;
    validators.set(schema, validate);
  }
  if (validate(body)) return null;
  return schemaErrorToAppError((validate as any).errors ?? [], 'body');
}
