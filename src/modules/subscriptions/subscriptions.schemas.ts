import { Type, type Static } from 'typebox';
import { Nullable, Timestamp } from '../../http/schemas.ts';
import { listQueryFields } from '../../shared/pagination.ts';
import { SubscriptionPeriod } from './schedule.ts';
import { CancelledBy, SubscriptionStatus } from './subscriptions.rules.ts';

export const SubscriptionObject = Type.Object(
  {
    id: Type.String({ description: 'subscription_…' }),
    status: Type.Enum(SubscriptionStatus),
    request_id: Type.String(),
    user_id: Type.String(),
    merchant_identifier: Nullable(Type.String()),
    customer_id: Nullable(Type.String()),
    email: Type.String({ description: "The payer's email from the request's cust_info" }),
    description: Type.String({
      description: "What the subscription is for: the request's message, its title on every page and email",
      examples: ['Veg box'],
    }),
    subscription_options: Type.Object({
      amount: Type.String({ examples: ['15.00 NZD'] }),
      period: Type.Enum(SubscriptionPeriod),
      start_date: Type.Optional(Timestamp),
      end_date: Type.Optional(Timestamp),
      total_count: Type.Optional(Type.Integer()),
    }),
    next_charge_at: Nullable(Timestamp),
    successful_charges: Type.Integer({ description: 'Successful charges so far (total_count counts these)' }),
    failed_charges: Type.Integer({ description: 'Failed charge attempts, retries included' }),
    skipped_charges: Type.Integer({ description: 'Charges given up after their last retry failed' }),
    is_test_mode: Type.Boolean(),
    cancelled_by: Nullable(Type.Enum(CancelledBy)),
    created_at: Timestamp,
    updated_at: Timestamp,
    paused_at: Nullable(Timestamp),
    resumed_at: Nullable(Timestamp),
    cancelled_at: Nullable(Timestamp),
    completed_at: Nullable(Timestamp),
  },
  { title: 'Subscription' },
);

export const SubscriptionEnvelope = Type.Object({ subscription: SubscriptionObject });

export const ListSubscriptionsQuery = Type.Object(
  {
    ...listQueryFields('subscription'),
    status: Type.Optional(Type.Enum(SubscriptionStatus)),
    merchant_identifier: Type.Optional(Type.String({ maxLength: 255 })),
    email: Type.Optional(Type.String({ maxLength: 320 })),
    request_id: Type.Optional(Type.String({ maxLength: 64 })),
  },
  { additionalProperties: false },
);
export type ListSubscriptionsQuery = Static<typeof ListSubscriptionsQuery>;

export const DeclineNextBody = Type.Object(
  {
    count: Type.Integer({
      minimum: 1,
      maximum: 100,
      description: 'How many of the next charge attempts the bank refuses',
    }),
    reason: Type.Optional(
      Type.String({
        pattern: '^[a-z][a-z_]{0,39}$',
        description: 'snake_case reason, e.g. insufficient_funds',
        'x-expected': 'a snake_case reason such as insufficient_funds',
      }),
    ),
  },
  { additionalProperties: false },
);
export type DeclineNextBody = Static<typeof DeclineNextBody>;
