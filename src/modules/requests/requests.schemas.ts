import { Type, type Static } from 'typebox';
import { AmountInput, AmountObject, Nullable, ReferenceInput, Timestamp } from '../../http/schemas.ts';
import { DATE_OR_DATE_TIME_PATTERN } from '../../shared/date-time.ts';
import { listQueryFields } from '../../shared/pagination.ts';

const DATE_FORM = 'a date YYYY-MM-DD or an ISO 8601 date-time';
const DateInput = (description: string) =>
  Type.String({
    maxLength: 40,
    pattern: DATE_OR_DATE_TIME_PATTERN,
    description: `${description}; ${DATE_FORM}`,
    'x-expected': DATE_FORM,
  });
const CENTS_FORM = 'a whole number of cents from 1 to 500000 (5000.00 NZD)';
const URL_FORM = 'an https URL (http only for localhost), at most 2048 characters';
const UrlInput = (description: string) =>
  Type.String({ maxLength: 2048, minLength: 1, description: `${description}; ${URL_FORM}`, 'x-expected': URL_FORM });

export const RecurringPeriod = ['daily', 'weekly', 'fortnightly', 'monthly', 'yearly'] as const;
export const SubscriptionPeriod = ['weekly', 'fortnightly', 'monthly', 'quarterly', 'annually'] as const;

export const RecurringOptionsInput = Type.Object(
  {
    period: Type.Enum(RecurringPeriod, {
      description:
        'Window for max_per_period, in the service time zone: a calendar day, a Monday-to-Sunday week, a fortnight ' +
        '(two such weeks, counted from the week the payer is sent to authorise the consent, as the bank counts them), ' +
        'a calendar month or a calendar year',
    }),
    max_per_period: AmountInput('Most that can be charged in one period'),
    max_per_payment: Type.Optional(AmountInput('Most for any one payment')),
    total_count: Type.Optional(
      Type.Integer({ minimum: 1, maximum: 100000, description: 'Cap on the number of payments' }),
    ),
    total_amount: Type.Optional(AmountInput('Cap on the total of all payments')),
    end_date: Type.Optional(
      DateInput('No payments after this; a date means the end of that day in the service time zone'),
    ),
  },
  { additionalProperties: false, title: 'RecurringOptionsInput' },
);
export type RecurringOptionsInput = Static<typeof RecurringOptionsInput>;

export const SubscriptionOptionsInput = Type.Object(
  {
    amount: AmountInput('Charged each period'),
    period: Type.Enum(SubscriptionPeriod),
    start_date: Type.Optional(
      DateInput(
        'First charge: a date means 10:00 service time on it, a date-time that instant (later charges keep its time of day); default: when the payer approves',
      ),
    ),
    end_date: Type.Optional(
      DateInput('No charges after this; a date means the end of that day in the service time zone'),
    ),
    total_count: Type.Optional(
      Type.Integer({
        minimum: 1,
        maximum: 10000,
        description: 'Number of successful charges after which it completes',
      }),
    ),
  },
  { additionalProperties: false, title: 'SubscriptionOptionsInput' },
);
export type SubscriptionOptionsInput = Static<typeof SubscriptionOptionsInput>;

export const CustInfoInput = Type.Object(
  {
    email: Type.String({
      format: 'email',
      maxLength: 254,
      description: 'Payer email; required for recurring and subscription requests',
      'x-expected': 'an email address',
    }),
    first_name: Type.Optional(Type.String({ maxLength: 100 })),
    last_name: Type.Optional(Type.String({ maxLength: 100 })),
    phone: Type.Optional(
      Type.String({
        maxLength: 32,
        pattern: '^\\+?[0-9 ()-]{5,31}$',
        'x-expected': 'a phone number of digits, spaces, ()- and an optional leading +',
      }),
    ),
  },
  { additionalProperties: false, title: 'CustInfoInput' },
);
export type CustInfoInput = Static<typeof CustInfoInput>;

const flag = (description: string) => Type.Optional(Type.Boolean({ description }));

export const CreateRequestBody = Type.Object(
  {
    bank_account_id: Type.String({ maxLength: 64, description: 'The merchant bank account paid into (bankaccount_…)' }),
    amount: Type.Optional(
      AmountInput('Fixed amount, at most 5000.00 NZD; not with dynamic amounts, recurring or subscription options'),
    ),
    message: Type.String({ minLength: 1, maxLength: 60, description: 'Shown to the payer, 1 to 60 characters' }),
    type: Type.Optional(
      Type.Enum(['single', 'multi'], { default: 'single', description: 'single: one payment; multi: reusable' }),
    ),
    reference: Type.Optional(ReferenceInput('Statement reference')),
    merchant_identifier: Type.Optional(Type.String({ maxLength: 255, description: 'Your own id for this request' })),
    expires_in: Type.Optional(
      Type.String({
        pattern: '^[1-9][0-9]{0,6}[mhd]$',
        description:
          'Lifetime: <n>m, <n>h or <n>d, from 1 minute to 365 days. A request with recurring_options or subscription_options expires at their end_date at the latest.',
        'x-expected': '<n>m, <n>h or <n>d, from 1 minute to 365 days',
      }),
    ),
    allow_dynamic_amount: flag('The payer chooses the amount'),
    suggested_amounts: Type.Optional(
      Type.String({
        maxLength: 200,
        description:
          'Comma-separated amounts offered as one-tap choices, in dollars or dollars and cents, e.g. "10,20,50" or "10.00,12.50"; answered with cents ("10.00,20.00,50.00")',
      }),
    ),
    minimum_payment_amount: Type.Optional(
      Type.Integer({
        minimum: 1,
        maximum: 500000,
        description: 'Lowest payer-chosen amount, in cents',
        'x-expected': CENTS_FORM,
      }),
    ),
    maximum_payment_amount: Type.Optional(
      Type.Integer({
        minimum: 1,
        maximum: 500000,
        description: 'Highest payer-chosen amount, in cents (at most 500000)',
        'x-expected': CENTS_FORM,
      }),
    ),
    require_customer_basic_info: flag('Email and name required before paying'),
    collect_customer_phone: flag('Show an optional phone field'),
    require_customer_phone: flag('Phone required before paying'),
    require_customer_address: flag('Postal address required before paying'),
    allow_marketing_opt_in: flag('Show a marketing opt-in checkbox'),
    is_donation: flag('Shown as a donation'),
    add_surcharge: flag('Recorded for your reporting; no surcharge is added by the service'),
    surcharge_optional: flag('Recorded for your reporting'),
    success_redirect_url: Type.Optional(UrlInput('Where the payer goes after a successful payment')),
    failure_redirect_url: Type.Optional(UrlInput('Where the payer goes after a failed or cancelled payment')),
    logo_image_url: Type.Optional(UrlInput('Logo shown on the payment page')),
    banner_image_url: Type.Optional(UrlInput('Banner shown on the payment page')),
    recurring_options: Type.Optional(RecurringOptionsInput),
    subscription_options: Type.Optional(SubscriptionOptionsInput),
    cust_info: Type.Optional(CustInfoInput),
  },
  { additionalProperties: false, title: 'CreateRequest' },
);
export type CreateRequestBody = Static<typeof CreateRequestBody>;

export const RequestStatus = ['active', 'paid', 'expired', 'deleted'] as const;
export type RequestStatus = (typeof RequestStatus)[number];

export const RequestObject = Type.Object(
  {
    id: Type.String({ examples: ['request_01JD2Q8Z7M3V4K5N6P7R8S9T0V'] }),
    url: Type.String(),
    status: Type.Enum(RequestStatus),
    type: Type.Enum(['single', 'multi']),
    message: Type.String(),
    amount: Nullable(AmountObject),
    bank_account_id: Type.String(),
    user_id: Type.String(),
    merchant_identifier: Nullable(Type.String()),
    pcr: Type.Object({ reference: Type.String() }),
    flow: Type.String(),
    qr_data: Type.String({ description: 'PNG data URI of a QR code of url' }),
    logo_image_url: Nullable(Type.String()),
    banner_image_url: Nullable(Type.String()),
    min_payment_amount: Nullable(Type.Integer()),
    max_payment_amount: Nullable(Type.Integer()),
    is_test_mode: Type.Boolean(),
    is_donation: Type.Boolean(),
    add_surcharge: Type.Boolean(),
    surcharge_optional: Type.Boolean(),
    allow_dynamic_amount: Type.Boolean(),
    suggested_amounts: Nullable(Type.String()),
    allow_marketing_opt_in: Type.Boolean(),
    collect_customer_phone: Type.Boolean(),
    require_customer_phone: Type.Boolean(),
    require_customer_basic_info: Type.Boolean(),
    require_customer_address: Type.Boolean(),
    success_redirect_url: Nullable(Type.String()),
    failure_redirect_url: Nullable(Type.String()),
    recurring_options: Type.Optional(
      Type.Object({
        period: Type.String(),
        max_per_period: Type.String(),
        max_per_payment: Type.Optional(Type.String()),
        total_count: Type.Optional(Type.Integer()),
        total_amount: Type.Optional(Type.String()),
        end_date: Type.Optional(Timestamp),
      }),
    ),
    subscription_options: Type.Optional(
      Type.Object({
        amount: Type.String(),
        period: Type.String(),
        start_date: Type.Optional(Timestamp),
        end_date: Type.Optional(Timestamp),
        total_count: Type.Optional(Type.Integer()),
      }),
    ),
    created_at: Timestamp,
    updated_at: Timestamp,
    expires_at: Type.Optional(Timestamp),
    deleted_at: Nullable(Timestamp),
  },
  { title: 'Request' },
);

export const RequestEnvelope = Type.Object({ request: RequestObject });

export const ListRequestsQuery = Type.Object(
  {
    ...listQueryFields('request'),
    status: Type.Optional(Type.Enum(RequestStatus)),
    type: Type.Optional(Type.Enum(['single', 'multi'])),
    merchant_identifier: Type.Optional(Type.String({ maxLength: 255 })),
  },
  { additionalProperties: false },
);
export type ListRequestsQuery = Static<typeof ListRequestsQuery>;
