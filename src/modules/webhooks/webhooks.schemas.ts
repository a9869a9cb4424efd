import { Type, type Static } from 'typebox';
import { Nullable, Timestamp } from '../../http/schemas.ts';
import { listQueryFields } from '../../shared/pagination.ts';
import { EVENT_TYPES } from '../events/events.builders.ts';
import { EventObject } from '../events/events.schemas.ts';

const WebhookUrl = Type.String({
  minLength: 1,
  maxLength: 2048,
  description: 'Where events are POSTed: https (http only to localhost with a test key)',
  'x-expected': 'an https URL (http only to localhost with a test key), at most 2048 characters',
});
const EventFilter = (description: string) =>
  Type.Array(Type.String({ maxLength: 64 }), {
    minItems: 1,
    maxItems: 64,
    description: `${description} Known types: ${EVENT_TYPES.join(', ')}`,
    'x-expected': 'a non-empty list of event types',
  });

const Description = (description: string) =>
  Nullable(
    Type.String({
      maxLength: 200,
      description: `${description} Trimmed; empty text is the same as null.`,
      'x-expected': 'text of at most 200 characters, or null',
    }),
  );

export const CreateWebhookBody = Type.Object(
  {
    url: WebhookUrl,
    events: Type.Optional(EventFilter('Event types to send; omit for every type.')),
    description: Type.Optional(
      Description('A label of your own, to tell endpoints apart (two may share a URL); omit for none.'),
    ),
  },
  { additionalProperties: false, title: 'CreateWebhook' },
);
export type CreateWebhookBody = Static<typeof CreateWebhookBody>;

export const UpdateWebhookBody = Type.Object(
  {
    url: Type.Optional(WebhookUrl),
    events: Type.Optional(Type.Union([EventFilter('Event types to send; null for every type.'), Type.Null()])),
    disabled: Type.Optional(
      Type.Boolean({
        description: 'true: no new deliveries (and those waiting are cancelled) until set back to false',
      }),
    ),
    description: Type.Optional(Description('A label of your own for the endpoint; null removes it.')),
  },
  { additionalProperties: false, title: 'UpdateWebhook' },
);
export type UpdateWebhookBody = Static<typeof UpdateWebhookBody>;

export const WebhookObject = Type.Object(
  {
    id: Type.String({ examples: ['webhook_01JD2Q8Z7M3V4K5N6P7R8S9T0V'] }),
    url: Type.String(),
    description: Nullable(Type.String({ description: 'Your label for the endpoint; null when it has none' })),
    events: Nullable(
      Type.Array(Type.String(), { description: 'Event types sent to this endpoint; null means every type' }),
    ),
    is_test_mode: Type.Boolean(),
    disabled: Type.Boolean({ description: 'A disabled endpoint gets no new deliveries' }),
    created_at: Timestamp,
    secret: Type.Optional(
      Type.String({
        description:
          'base64 of 32 random bytes; returned only when the endpoint is created and when its secret is rotated',
      }),
    ),
    previous_secret_expires_at: Type.Optional(Timestamp),
  },
  { title: 'WebhookEndpoint' },
);
export type WebhookObject = Static<typeof WebhookObject>;

export const WebhookEnvelope = Type.Object({ webhook: WebhookObject });
export const ListWebhooksQuery = Type.Object(listQueryFields('webhook'), { additionalProperties: false });
export type ListWebhooksQuery = Static<typeof ListWebhooksQuery>;

export const RecoverBody = Type.Object(
  {
    since: Type.String({
      format: 'date-time',
      description: 'Re-send every delivery to this endpoint that failed at or after this time',
      'x-expected': 'an ISO 8601 date-time such as 2026-11-21T10:00:00.000Z',
    }),
  },
  { additionalProperties: false },
);
export type RecoverBody = Static<typeof RecoverBody>;

export const AttemptObject = Type.Object(
  {
    attempt: Type.Integer({ description: 'The X-Service-Delivery-Attempt sent' }),
    started_at: Timestamp,
    latency_ms: Type.Integer(),
    status_code: Nullable(Type.Integer()),
    response_body: Nullable(Type.String({ description: 'First 1 kB of the reply' })),
    error: Nullable(Type.String({ description: 'Timeout or network error when there was no reply' })),
  },
  { title: 'DeliveryAttempt' },
);

export const DeliveryObject = Type.Object(
  {
    id: Type.String(),
    event_id: Type.String(),
    webhook_id: Type.String(),
    status: Type.Enum(['pending', 'succeeded', 'failed', 'cancelled']),
    attempt_count: Type.Integer(),
    created_at: Timestamp,
    first_attempt_at: Nullable(Timestamp),
    last_attempt_at: Nullable(Timestamp),
    next_attempt_at: Nullable(Timestamp),
    succeeded_at: Nullable(Timestamp),
    failed_at: Nullable(Timestamp),
    resent_by: Nullable(Type.String({ description: 'The delivery that re-sent this failed one (recover)' })),
    attempts: Type.Optional(Type.Array(AttemptObject)),
  },
  { title: 'Delivery' },
);
export type DeliveryObject = Static<typeof DeliveryObject>;
export const DeliveryList = Type.Object({ deliveries: Type.Array(DeliveryObject) });

export const PrunedDeliveries = Type.Object(
  {
    pruned_at: Timestamp,
    kept_days: Type.Integer({ description: 'How long a delivery is kept once it is no longer pending' }),
    webhooks: Type.Array(
      Type.Object({
        webhook_id: Type.String(),
        status: Type.Enum(['succeeded', 'failed', 'cancelled'], {
          description: 'How the newest pruned delivery to this endpoint ended',
        }),
        delivery_count: Type.Integer(),
        attempt_count: Type.Integer(),
        last_attempt_at: Nullable(Timestamp),
      }),
    ),
  },
  {
    title: 'PrunedDeliveries',
    description:
      'What the deliveries of the event that were pruned came to, per endpoint: a delivery and its attempts are kept for kept_days once it is no longer pending',
  },
);
export type PrunedDeliveries = Static<typeof PrunedDeliveries>;

/** An event with every delivery of it still kept and their attempts, and what the pruned ones came to. */
export const EventDetail = Type.Object({
  event: EventObject,
  deliveries: Type.Array(DeliveryObject),
  pruned_deliveries: Nullable(PrunedDeliveries),
});
