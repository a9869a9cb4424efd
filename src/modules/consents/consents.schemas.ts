import { Type, type Static } from 'typebox';
import { AmountInput, AmountObject, Nullable, ReferenceInput, Timestamp } from '../../http/schemas.ts';
import { listQueryFields } from '../../shared/pagination.ts';
import { ConsentStatus } from './consents.rules.ts';
import { LimitPeriod } from './limits.ts';

export const ExecutePaymentBody = Type.Object(
  {
    token: Type.String({
      minLength: 1,
      maxLength: 200,
      description: 'The consent token from the recurring_payment.authorised event',
    }),
    amount: AmountInput('Amount to charge'),
    idempotency_key: Type.String({
      minLength: 1,
      maxLength: 255,
      description:
        'Derive it from your own records (an invoice id, say): the same key and parameters return the first payment, kept forever',
    }),
    reference: Type.Optional(ReferenceInput("Statement reference; default: the request's")),
    merchant_identifier: Type.Optional(
      Type.String({ maxLength: 255, description: "Your own id for this payment; default: the consent's" }),
    ),
  },
  { additionalProperties: false, title: 'ExecutePayment' },
);
export type ExecutePaymentBody = Static<typeof ExecutePaymentBody>;

export const ConsentObject = Type.Object(
  {
    id: Type.String({ examples: ['recurring_01JD2Q8Z7M3V4K5N6P7R8S9T0V'] }),
    status: Type.Enum(ConsentStatus),
    request_id: Type.String(),
    merchant_identifier: Nullable(Type.String()),
    customer_id: Nullable(Type.String()),
    email: Type.String(),
    description: Type.String({
      description: "What the consent is for: the request's message, its title on every page and email",
      examples: ['Top-ups'],
    }),
    provider: Type.String({ description: "The payer's bank" }),
    is_test_mode: Type.Boolean(),
    limits: Type.Object({
      period: Type.Enum(LimitPeriod),
      max_per_period: Type.String(),
      max_per_payment: Nullable(Type.String()),
      total_count: Nullable(Type.Integer()),
      total_amount: Nullable(Type.String()),
      end_date: Nullable(Timestamp),
    }),
    usage: Type.Object(
      {
        period: Type.Object(
          {
            start: Timestamp,
            end: Timestamp,
            amount: AmountObject,
            count: Type.Integer(),
            remaining: AmountObject,
          },
          {
            description:
              'The current period in the service time zone; a fortnight is counted from the week the consent starts in at the bank',
          },
        ),
        total: Type.Object({
          amount: AmountObject,
          count: Type.Integer(),
          remaining_amount: Nullable(AmountObject),
          remaining_count: Nullable(Type.Integer()),
        }),
      },
      { description: 'Successful, unconfirmed and in-flight payments count; failed ones do not' },
    ),
    created_at: Timestamp,
    updated_at: Timestamp,
    revoked_at: Nullable(Timestamp),
  },
  { title: 'RecurringConsent' },
);
export const ConsentEnvelope = Type.Object({ recurring_consent: ConsentObject });
export const ConsentList = Type.Object({ recurring_consents: Type.Array(ConsentObject), has_more: Type.Boolean() });

export const ListConsentsQuery = Type.Object(
  {
    ...listQueryFields('recurring'),
    status: Type.Optional(Type.Enum(ConsentStatus)),
    email: Type.Optional(Type.String({ maxLength: 254, description: "The payer's email" })),
    request_id: Type.Optional(Type.String({ maxLength: 64 })),
    merchant_identifier: Type.Optional(Type.String({ maxLength: 255 })),
  },
  { additionalProperties: false },
);
export type ListConsentsQuery = Static<typeof ListConsentsQuery>;

export const DeclineNextBody = Type.Object(
  {
    count: Type.Optional(
      Type.Integer({ minimum: 1, maximum: 1000, default: 1, description: 'How many executions the bank refuses' }),
    ),
    reason: Type.Optional(
      Type.String({
        pattern: '^[a-z][a-z_]{0,39}$',
        description: 'e.g. insufficient_funds, fraud_check',
        'x-expected': 'snake_case, e.g. insufficient_funds',
      }),
    ),
  },
  { additionalProperties: false },
);
export type DeclineNextBody = Static<typeof DeclineNextBody>;
