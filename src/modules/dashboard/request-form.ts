import { AMOUNT_FORM } from '../../shared/money.ts';
import { text, texts, withShownMoney } from './dashboard.format.ts';
import { amountText, dollarsToCents } from './dashboard.forms.ts';

// The create-request form in two steps: the merchant picks what the payer agrees to, then fills
// only that kind's fields. A value posted for another kind's field is refused rather than
// silently dropped, and an error names the form's own label and says how to put it right.

type Form = Record<string, unknown>;

export type RequestKind = 'fixed' | 'payer-chosen' | 'recurring' | 'subscription';

export const REQUEST_KINDS: Record<RequestKind, { label: string; inputs: readonly string[] }> = {
  fixed: { label: 'A payment of an amount you set', inputs: ['type', 'amount'] },
  'payer-chosen': {
    label: 'A payment of an amount the payer chooses',
    inputs: ['type', 'suggested_amounts', 'minimum_amount', 'maximum_amount'],
  },
  recurring: {
    label: 'A recurring consent: you take payments later, within limits',
    inputs: [
      'recurring_period',
      'recurring_max_per_period',
      'recurring_max_per_payment',
      'recurring_total_count',
      'recurring_total_amount',
      'recurring_end_date',
    ],
  },
  subscription: {
    label: 'A subscription: a fixed amount each period, charged by Tono',
    inputs: [
      'subscription_amount',
      'subscription_period',
      'subscription_start_date',
      'subscription_end_date',
      'subscription_total_count',
    ],
  },
};

export function requestKindOf(raw: unknown): RequestKind | null {
  const kind = text(raw, 20);
  return Object.hasOwn(REQUEST_KINDS, kind) ? (kind as RequestKind) : null;
}

/** Each input's label as the form shows it, and how to put a refused value right. */
export const REQUEST_INPUTS: Record<string, { label: string; fix: string }> = {
  message: { label: 'Message to the payer', fix: 'Write 1 to 60 characters for the payer to see on the payment page.' },
  bank_account_id: { label: 'Paid into', fix: 'Choose one of your bank accounts (add one under Bank accounts).' },
  type: { label: 'Link use', fix: 'Choose single (paid once) or multi (paid many times).' },
  amount: { label: 'Amount (NZD)', fix: 'Enter dollars and cents, such as 25.00.' },
  suggested_amounts: {
    label: 'Suggested amounts',
    fix: 'Leave it blank, or enter up to 6 different amounts separated by commas, such as 10, 20, 50.',
  },
  minimum_amount: { label: 'Lowest amount (NZD)', fix: 'Leave it blank, or enter dollars and cents, such as 5.00.' },
  maximum_amount: {
    label: 'Highest amount (NZD)',
    fix: 'Leave it blank, or enter dollars and cents no lower than the lowest amount.',
  },
  recurring_period: { label: 'Limit period', fix: 'Choose daily, weekly, fortnightly, monthly or yearly.' },
  recurring_max_per_period: {
    label: 'Most each period (NZD)',
    fix: 'Enter the most you may take in one period, such as 100.00.',
  },
  recurring_max_per_payment: {
    label: 'Most a payment (NZD)',
    fix: 'Leave it blank, or enter no more than the most each period.',
  },
  recurring_total_count: {
    label: 'Most payments in all',
    fix: 'Leave it blank, or enter a whole number of payments, such as 12.',
  },
  recurring_total_amount: { label: 'Most in all (NZD)', fix: 'Leave it blank, or enter dollars and cents.' },
  recurring_end_date: { label: 'Ends on', fix: 'Leave it blank, or choose a date after today.' },
  subscription_amount: { label: 'Amount each period (NZD)', fix: 'Enter dollars and cents, such as 15.00.' },
  subscription_period: { label: 'Period', fix: 'Choose weekly, fortnightly, monthly, quarterly or annually.' },
  subscription_start_date: {
    label: 'First charge on',
    fix: 'Leave it blank to take the first charge when the payer agrees, or choose a date from today on.',
  },
  subscription_end_date: { label: 'Ends on', fix: 'Leave it blank, or choose a date on or after the first charge.' },
  subscription_total_count: {
    label: 'Number of charges',
    fix: 'Leave it blank, or enter a whole number of charges, such as 12.',
  },
  payer_email: {
    label: 'Payer email',
    fix: 'Enter the payer’s email address: recurring consents and subscriptions need it for the payer’s notices and to manage what they agreed to.',
  },
  payer_phone: { label: 'Payer phone', fix: 'Leave it blank, or enter a phone number such as 021 123 4567.' },
  payer_first_name: { label: 'First name', fix: 'Leave it blank, or enter up to 100 characters.' },
  payer_last_name: { label: 'Last name', fix: 'Leave it blank, or enter up to 100 characters.' },
  reference: {
    label: 'Statement reference',
    fix: 'Leave it blank, or enter up to 12 letters, digits or hyphens, such as INV-1042.',
  },
  merchant_identifier: { label: 'Your identifier', fix: 'Leave it blank, or enter up to 255 characters.' },
  expires_in: {
    label: 'Expires in',
    fix: 'Leave it blank, or enter minutes, hours or days, such as 30m, 12h or 7d (at most 365d).',
  },
  success_redirect_url: {
    label: 'After a successful payment, go to',
    fix: 'Leave it blank, or enter an https address.',
  },
  failure_redirect_url: { label: 'After a failed payment, go to', fix: 'Leave it blank, or enter an https address.' },
  logo_image_url: { label: 'Logo image URL', fix: 'Leave it blank, or enter the https address of an image.' },
  banner_image_url: { label: 'Banner image URL', fix: 'Leave it blank, or enter the https address of an image.' },
};

/** The API's field names as the form's inputs; longest first, so a path wins over its last part. */
const INPUT_OF_FIELD: Array<[string, string]> = (
  [
    ['recurring_options.period', 'recurring_period'],
    ['recurring_options.max_per_period', 'recurring_max_per_period'],
    ['recurring_options.max_per_payment', 'recurring_max_per_payment'],
    ['recurring_options.total_count', 'recurring_total_count'],
    ['recurring_options.total_amount', 'recurring_total_amount'],
    ['recurring_options.end_date', 'recurring_end_date'],
    ['recurring_options', 'recurring_max_per_period'],
    ['subscription_options.amount', 'subscription_amount'],
    ['subscription_options.period', 'subscription_period'],
    ['subscription_options.start_date', 'subscription_start_date'],
    ['subscription_options.end_date', 'subscription_end_date'],
    ['subscription_options.total_count', 'subscription_total_count'],
    ['subscription_options', 'subscription_amount'],
    ['cust_info.email', 'payer_email'],
    ['cust_info.first_name', 'payer_first_name'],
    ['cust_info.last_name', 'payer_last_name'],
    ['cust_info.phone', 'payer_phone'],
    ['cust_info', 'payer_email'],
    ['minimum_payment_amount', 'minimum_amount'],
    ['maximum_payment_amount', 'maximum_amount'],
    ['max_per_period', 'recurring_max_per_period'],
    ['max_per_payment', 'recurring_max_per_payment'],
    ['start_date', 'subscription_start_date'],
    ...Object.keys(REQUEST_INPUTS).map((input) => [input, input] as [string, string]),
  ] as Array<[string, string]>
).sort((a, b) => b[0].length - a[0].length);

const fieldPattern = new RegExp(
  `(?<![\\w.])(${INPUT_OF_FIELD.map(([field]) => field.replace(/\./g, '\\.')).join('|')})(?![\\w.])`,
  'g',
);

/**
 * The API's error as the form says it: the input it points at, and a message in the form's labels
 * with what to do about it ("“Payer email” is required. Enter the payer’s email address: …").
 */
export function formProblemOf(error: { message: string; field: string | null }): { message: string; input: string } {
  const field = error.field ?? '';
  const input = INPUT_OF_FIELD.find(([name]) => name === field)?.[1] ?? field.replace(/\..*/, '');
  const known = REQUEST_INPUTS[input];
  const labelled = (message: string) =>
    withShownMoney(
      message.replace(fieldPattern, (name) => {
        const label = REQUEST_INPUTS[INPUT_OF_FIELD.find(([f]) => f === name)![1]]?.label;
        return label ? `“${label}”` : name;
      }),
    );
  if (!known) return { message: labelled(error.message), input };
  const said = plainWordsOf(error.message, known.label) ?? labelled(error.message).replace(/\.?$/, '.');
  return { message: `${said[0].toUpperCase()}${said.slice(1)} ${known.fix}`, input };
}

/**
 * The API's messages that are no help to a person put plainly, or null for the others: a schema's
 * pattern, and the API's amount form ("<decimal> NZD with two decimals"), which the form does not
 * take (it takes dollars and cents without the currency).
 */
function plainWordsOf(apiMessage: string, label: string): string | null {
  if (/must be text matching /.test(apiMessage)) return `“${label}” is not in a form Tono takes.`;
  if (apiMessage.includes(AMOUNT_FORM)) return `“${label}” must be a positive amount with at most two decimals.`;
  return null;
}

/** The first filled input that belongs to another kind than the one chosen, with a message saying so. */
export function strayInputOf(form: Form, kind: RequestKind): { message: string; input: string } | null {
  const own = new Set(REQUEST_KINDS[kind].inputs);
  for (const [other, { label }] of Object.entries(REQUEST_KINDS)) {
    for (const input of REQUEST_KINDS[other as RequestKind].inputs) {
      if (own.has(input) || text(form[input], 2048) === '') continue;
      const name = REQUEST_INPUTS[input]?.label ?? input;
      return {
        input: 'kind',
        message: `“${name}” belongs to ${lowerFirst(label.replace(/:.*/, ''))}, not to ${lowerFirst(REQUEST_KINDS[kind].label.replace(/:.*/, ''))}: nothing was created. Start again with that kind, or leave it out.`,
      };
    }
  }
  return null;
}

const lowerFirst = (s: string) => `${s[0].toLowerCase()}${s.slice(1)}`;

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

/** Blank values are left out, as an API caller would leave them out. */
function filledInto(target: Record<string, unknown>) {
  return (key: string, value: unknown) => {
    if (value !== '' && value !== null && value !== undefined) target[key] = value;
  };
}

const amountOf = (raw: unknown) => {
  const typed = text(raw, 30);
  return typed ? amountText(typed) : '';
};
const countOf = (raw: unknown) => {
  const typed = text(raw, 10);
  return typed === '' ? '' : /^\d+$/.test(typed) ? Number(typed) : typed;
};

/** The fields of the chosen kind as the API's body. */
function kindFieldsInto(body: Record<string, unknown>, form: Form, kind: RequestKind): void {
  const put = filledInto(body);
  if (kind === 'fixed' || kind === 'payer-chosen') put('type', text(form.type) || undefined);
  if (kind === 'fixed') put('amount', amountOf(form.amount));
  if (kind === 'payer-chosen') {
    body.allow_dynamic_amount = true;
    put('suggested_amounts', text(form.suggested_amounts, 200).replace(/\s+/g, ''));
    put('minimum_payment_amount', dollarsToCents(text(form.minimum_amount)));
    put('maximum_payment_amount', dollarsToCents(text(form.maximum_amount)));
  }
  if (kind === 'recurring') {
    const options: Record<string, unknown> = {};
    const opt = filledInto(options);
    opt('period', text(form.recurring_period));
    opt('max_per_period', amountOf(form.recurring_max_per_period));
    opt('max_per_payment', amountOf(form.recurring_max_per_payment));
    opt('total_count', countOf(form.recurring_total_count));
    opt('total_amount', amountOf(form.recurring_total_amount));
    opt('end_date', text(form.recurring_end_date, 40));
    body.recurring_options = options;
  }
  if (kind === 'subscription') {
    const options: Record<string, unknown> = {};
    const opt = filledInto(options);
    opt('amount', amountOf(form.subscription_amount));
    opt('period', text(form.subscription_period));
    opt('start_date', text(form.subscription_start_date, 40));
    opt('end_date', text(form.subscription_end_date, 40));
    opt('total_count', countOf(form.subscription_total_count));
    body.subscription_options = options;
  }
}

/** The create-request form of the chosen kind as the API's body. */
export function requestBodyFromForm(form: Form, kind: RequestKind): Record<string, unknown> {
  const body: Record<string, unknown> = {};
  const put = filledInto(body);
  put('bank_account_id', text(form.bank_account_id, 64));
  body.message = text(form.message, 200);
  for (const key of REQUEST_TEXTS) put(key, text(form[key], 2048));
  for (const [flag] of REQUEST_FLAGS) if (texts(form[flag]).includes('on')) body[flag] = true;
  kindFieldsInto(body, form, kind);

  const cust: Record<string, unknown> = {};
  const payer = filledInto(cust);
  payer('email', text(form.payer_email, 254));
  payer('first_name', text(form.payer_first_name, 100));
  payer('last_name', text(form.payer_last_name, 100));
  payer('phone', text(form.payer_phone, 100));
  if (Object.keys(cust).length) body.cust_info = cust;
  return body;
}
