import { Type, type Static, type TSchema } from 'typebox';
import { AmountObject, Nullable, Timestamp } from '../../http/schemas.ts';
import { AddressObject } from '../customers/customers.schemas.ts';
import { EVENT_TYPES, versionOf, type EventData, type EventType } from './events.builders.ts';

// The exact `data` of every event type (docs/webhooks.md, "The event"), as schemas: the API
// description's `webhooks` section is built from them, and so are the typed client's event types.
// events.openapi.test.ts checks that what the builders emit matches them.

const Id = (example: string) => Type.String({ examples: [example] });
const MerchantIdentifier = Nullable(
  Type.String({ description: 'Your own identifier of the request, when you gave one' }),
);
const UserId = Id('user_01JD2Q8Z7M3V4K5N6P7R8S9T0V');
const Address = AddressObject;

const data = <P extends Record<string, TSchema>>(properties: P) =>
  Type.Object(properties, { additionalProperties: false });
const subscriptionChange = data({
  id: Id('subscription_01JD2Q8Z7M3V4K5N6P7R8S9T0V'),
  user_id: UserId,
  merchant_identifier: MerchantIdentifier,
  updated_at: Timestamp,
});
const customerDetails = {
  email: Type.String({ format: 'email' }),
  first_name: Nullable(Type.String()),
  last_name: Nullable(Type.String()),
  phone: Nullable(Type.String()),
  address: Address,
};
const CustomerId = Id('customer_01JD2Q8Z7M3V4K5N6P7R8S9T0V');

export const EVENT_DATA_SCHEMAS = {
  'request.created': data({
    id: Id('request_01JD2Q8Z7M3V4K5N6P7R8S9T0V'),
    merchant_identifier: MerchantIdentifier,
    user_id: UserId,
    created_at: Timestamp,
    expires_at: Nullable(Timestamp),
  }),
  'request.expired': data({
    id: Id('request_01JD2Q8Z7M3V4K5N6P7R8S9T0V'),
    user_id: UserId,
    merchant_identifier: MerchantIdentifier,
    status: Type.Literal('expired'),
    updated_at: Timestamp,
  }),
  'request.status_updated': data({
    id: Id('request_01JD2Q8Z7M3V4K5N6P7R8S9T0V'),
    user_id: UserId,
    merchant_identifier: MerchantIdentifier,
    status: Type.String({ description: "The request's new status" }),
    updated_at: Timestamp,
  }),
  'payment.created': data({
    id: Id('payment_01JD2Q8Z7M3V4K5N6P7R8S9T0V'),
    request_id: Id('request_01JD2Q8Z7M3V4K5N6P7R8S9T0V'),
    user_id: UserId,
    merchant_identifier: MerchantIdentifier,
    status: Type.Literal('awaiting-consent'),
    updated_at: Timestamp,
  }),
  'payment.status_updated': data({
    id: Id('payment_01JD2Q8Z7M3V4K5N6P7R8S9T0V'),
    request_id: Id('request_01JD2Q8Z7M3V4K5N6P7R8S9T0V'),
    user_id: UserId,
    merchant_identifier: MerchantIdentifier,
    status: Type.Enum(['successful', 'cancelled', 'failed', 'unconfirmed']),
    updated_at: Timestamp,
  }),
  'recurring_payment.authorised': data({
    id: Id('recurringconsent_01JD2Q8Z7M3V4K5N6P7R8S9T0V'),
    merchant_identifier: MerchantIdentifier,
    status: Type.Literal('active'),
    token: Type.String({
      description: 'The secret token to charge with (POST /v1/payments), sent only in this event',
      examples: ['rct_…'],
    }),
  }),
  'recurring_payment.revoked': data({
    id: Id('recurringconsent_01JD2Q8Z7M3V4K5N6P7R8S9T0V'),
    merchant_identifier: MerchantIdentifier,
    status: Type.Literal('revoked'),
  }),
  'recurring_payment.expired': data({
    id: Id('recurringconsent_01JD2Q8Z7M3V4K5N6P7R8S9T0V'),
    merchant_identifier: MerchantIdentifier,
    status: Type.Literal('expired'),
  }),
  'subscription.created': data({
    id: Id('subscription_01JD2Q8Z7M3V4K5N6P7R8S9T0V'),
    request_id: Id('request_01JD2Q8Z7M3V4K5N6P7R8S9T0V'),
    user_id: UserId,
    merchant_identifier: MerchantIdentifier,
    created_at: Timestamp,
  }),
  'subscription.charge_failed': data({
    id: Id('subscription_01JD2Q8Z7M3V4K5N6P7R8S9T0V'),
    user_id: UserId,
    merchant_identifier: MerchantIdentifier,
    last_payment_id: Id('payment_01JD2Q8Z7M3V4K5N6P7R8S9T0V'),
    last_error: Type.String(),
    attempts: Type.Integer({ minimum: 1 }),
    charge_at: Timestamp,
    next_attempt_at: Type.Optional(Type.String({ format: 'date-time', description: 'Absent after the last retry' })),
    updated_at: Timestamp,
  }),
  'subscription.charge_skipped': data({
    id: Id('subscription_01JD2Q8Z7M3V4K5N6P7R8S9T0V'),
    user_id: UserId,
    merchant_identifier: MerchantIdentifier,
    attempts: Type.Integer({ minimum: 0 }),
    skipped_charge_at: Timestamp,
    next_charge_at: Nullable(Timestamp),
    updated_at: Timestamp,
  }),
  'subscription.completed': subscriptionChange,
  'subscription.cancelled': subscriptionChange,
  'subscription.paused': subscriptionChange,
  'subscription.resumed': subscriptionChange,
  'customer.created': data({ id: CustomerId, user_id: UserId, created_at: Timestamp, ...customerDetails }),
  'customer.updated': data({ id: CustomerId, user_id: UserId, updated_at: Timestamp, ...customerDetails }),
  'webhook_endpoint.disabled': data({
    id: Id('webhook_01JD2Q8Z7M3V4K5N6P7R8S9T0V'),
    url: Type.String(),
    disabled_at: Timestamp,
    failing_since: Timestamp,
  }),
  'refund.created': data({
    id: Id('refund_01JD2Q8Z7M3V4K5N6P7R8S9T0V'),
    payment_id: Id('payment_01JD2Q8Z7M3V4K5N6P7R8S9T0V'),
    request_id: Id('request_01JD2Q8Z7M3V4K5N6P7R8S9T0V'),
    user_id: UserId,
    amount: AmountObject,
    status: Type.Enum(['pending', 'requires_action']),
    created_at: Timestamp,
  }),
  'refund.status_updated': data({
    id: Id('refund_01JD2Q8Z7M3V4K5N6P7R8S9T0V'),
    payment_id: Id('payment_01JD2Q8Z7M3V4K5N6P7R8S9T0V'),
    request_id: Id('request_01JD2Q8Z7M3V4K5N6P7R8S9T0V'),
    user_id: UserId,
    status: Type.Enum(['pending', 'successful', 'failed', 'requires_action']),
    failure_reason: Nullable(Type.String({ description: 'Why the refund failed' })),
    action_reason: Nullable(
      Type.String({
        description: 'Why it requires action: payer_account_unknown, no_refund_authority or bank_outcome_unknown',
      }),
    ),
    updated_at: Timestamp,
  }),
  'refund_authority.status_updated': data({
    id: Id('refundauth_01JD2Q8Z7M3V4K5N6P7R8S9T0V'),
    user_id: UserId,
    status: Type.Enum(['active', 'declined', 'revoked']),
    revoked_by: Nullable(
      Type.String({ description: 'Who ended it: merchant, bank, or replaced (a newer authority was approved)' }),
    ),
    updated_at: Timestamp,
  }),
  'payment.reconciled': data({
    id: Id('payment_01JD2Q8Z7M3V4K5N6P7R8S9T0V'),
    request_id: Id('request_01JD2Q8Z7M3V4K5N6P7R8S9T0V'),
    user_id: UserId,
    statement_line_id: Id('stline_01JD2Q8Z7M3V4K5N6P7R8S9T0V'),
    posted_on: Type.String({ format: 'date', description: 'The date of the statement line' }),
    amount: AmountObject,
    method: Type.Enum(['particulars', 'reference', 'amount_date', 'manual'], {
      description: 'How the line was matched (docs/reconciliation.md)',
    }),
    reconciled_at: Timestamp,
  }),
} satisfies Record<EventType, TSchema>;

// A compile-time check that the schemas and the builders' types say the same.
type Same<A, B> = [A] extends [B] ? ([B] extends [A] ? true : false) : false;
const schemasMatchTypes: { [T in EventType]: Same<Static<(typeof EVENT_DATA_SCHEMAS)[T]>, EventData[T]> } = {
  'request.created': true,
  'request.expired': true,
  'request.status_updated': true,
  'payment.created': true,
  'payment.status_updated': true,
  'recurring_payment.authorised': true,
  'recurring_payment.revoked': true,
  'recurring_payment.expired': true,
  'subscription.created': true,
  'subscription.charge_failed': true,
  'subscription.charge_skipped': true,
  'subscription.completed': true,
  'subscription.cancelled': true,
  'subscription.paused': true,
  'subscription.resumed': true,
  'customer.created': true,
  'customer.updated': true,
  'webhook_endpoint.disabled': true,
  'refund.created': true,
  'refund.status_updated': true,
  'refund_authority.status_updated': true,
  'payment.reconciled': true,
};
void schemasMatchTypes;

/** `request.status_updated` → `RequestStatusUpdatedEvent`. */
export function eventSchemaName(type: EventType): string {
  return `${type
    .split(/[._]/)
    .map((word) => word[0]!.toUpperCase() + word.slice(1))
    .join('')}Event`;
}

const summaries: Record<EventType, string> = {
  'request.created': 'A payment request was created',
  'request.expired': 'A payment request reached its expiry without being paid',
  'request.status_updated': 'A payment request changed status',
  'payment.created': 'A payer started a payment',
  'payment.status_updated': 'A payment succeeded, failed, was cancelled or is unconfirmed',
  'recurring_payment.authorised': 'A payer approved a recurring consent; carries the token to charge with',
  'recurring_payment.revoked': 'A recurring consent was revoked',
  'recurring_payment.expired': 'A recurring consent reached its end_date: no more payments can be taken with it',
  'subscription.created': 'A payer approved a subscription',
  'subscription.charge_failed': 'A subscription charge failed (and may be retried)',
  'subscription.charge_skipped': 'A subscription charge was skipped after its retries',
  'subscription.completed': 'A subscription made its last charge',
  'subscription.cancelled': 'A subscription was cancelled',
  'subscription.paused': 'A subscription was paused',
  'subscription.resumed': 'A subscription was resumed',
  'customer.created': "A customer was created from a payer's details",
  'customer.updated': "A customer's details changed",
  'webhook_endpoint.disabled': 'Tono disabled a webhook endpoint whose deliveries had all failed for 3 days',
  'refund.created': 'A refund was created: it is pending at the bank, or requires you to pay it by hand',
  'refund.status_updated': 'A refund succeeded, failed, or now requires you to pay it by hand',
  'refund_authority.status_updated':
    'Your refund authority was approved at your bank, declined there, or ended (turned off, revoked at the bank, or replaced)',
  'payment.reconciled':
    'A line of a bank statement you imported was matched to a successful payment: the money was seen',
};

/** The envelope of one event type, exactly as POSTed: named `<Type>Event` in the API description. */
export function eventEnvelopeSchema(type: EventType): TSchema {
  const version = versionOf(type);
  return Type.Object(
    {
      id: Id('event_01JD2Q8Z7M3V4K5N6P7R8S9T0V'),
      type: Type.Literal(type),
      ...(version === undefined ? {} : { version: Type.Literal(1) }),
      created_at: Timestamp,
      data: EVENT_DATA_SCHEMAS[type],
    },
    { additionalProperties: false, title: eventSchemaName(type), description: summaries[type] },
  );
}

const signatureHeaders = [
  {
    name: 'X-Service-Signature',
    description:
      '`sha256=<hex HMAC-SHA256 of the raw body>` keyed with the base64-decoded endpoint secret; two, comma-separated, for 24 hours after a rotation',
  },
  { name: 'X-Service-Event-Id', description: 'The event id: deduplicate on it' },
  { name: 'X-Service-Delivery-Attempt', description: "This attempt's number, from 1" },
  { name: 'webhook-id', description: 'Standard Webhooks: the event id' },
  { name: 'webhook-timestamp', description: 'Standard Webhooks: seconds since the epoch when this attempt was signed' },
  {
    name: 'webhook-signature',
    description:
      'Standard Webhooks: `v1,<base64 HMAC-SHA256 of "id.timestamp.body">`, space-separated when two secrets sign',
  },
].map(({ name, description }) => ({ name, in: 'header', required: true, description, schema: { type: 'string' } }));

/** The OpenAPI 3.1 `webhooks` section: one POST per event type, with its exact body. */
export function eventWebhooks(): Record<string, unknown> {
  return Object.fromEntries(
    EVENT_TYPES.map((type) => [
      type,
      {
        post: {
          operationId: `on${eventSchemaName(type)}`,
          tags: ['Events'],
          summary: summaries[type],
          description: `Sent to every endpoint of the merchant and mode whose \`events\` filter takes \`${type}\`. Verify the signature on the raw body before parsing (docs/webhooks.md); any 2xx acknowledges, anything else is retried.`,
          parameters: signatureHeaders,
          requestBody: { required: true, content: { 'application/json': { schema: eventEnvelopeSchema(type) } } },
          responses: { '200': { description: 'Any 2xx acknowledges the delivery' } },
          security: [],
        },
      },
    ]),
  );
}
