// One builder per event type of docs/webhooks.md ("The event"): each takes exactly the fields that type's `data` carries,
// so no call site assembles an event payload by hand.
import type { AddressFields } from '../customers/customers.rules.ts';

export type AddressData = AddressFields;

export type EventData = {
  'request.created': {
    id: string;
    merchant_identifier: string | null;
    user_id: string;
    created_at: string;
    expires_at: string | null;
  };
  'request.expired': {
    id: string;
    user_id: string;
    merchant_identifier: string | null;
    status: 'expired';
    updated_at: string;
  };
  'request.status_updated': {
    id: string;
    user_id: string;
    merchant_identifier: string | null;
    status: string;
    updated_at: string;
  };
  'payment.created': {
    id: string;
    request_id: string;
    user_id: string;
    merchant_identifier: string | null;
    status: 'awaiting-consent';
    updated_at: string;
  };
  'payment.status_updated': {
    id: string;
    request_id: string;
    user_id: string;
    merchant_identifier: string | null;
    status: 'successful' | 'cancelled' | 'failed' | 'unconfirmed';
    updated_at: string;
  };
  'recurring_payment.authorised': { id: string; merchant_identifier: string | null; status: 'active'; token: string };
  'recurring_payment.revoked': { id: string; merchant_identifier: string | null; status: 'revoked' };
  'recurring_payment.expired': { id: string; merchant_identifier: string | null; status: 'expired' };
  'subscription.created': {
    id: string;
    request_id: string;
    user_id: string;
    merchant_identifier: string | null;
    created_at: string;
  };
  'subscription.charge_failed': {
    id: string;
    user_id: string;
    merchant_identifier: string | null;
    last_payment_id: string;
    last_error: string;
    attempts: number;
    charge_at: string;
    next_attempt_at?: string;
    updated_at: string;
  };
  'subscription.charge_skipped': {
    id: string;
    user_id: string;
    merchant_identifier: string | null;
    attempts: number;
    skipped_charge_at: string;
    next_charge_at: string | null;
    updated_at: string;
  };
  'subscription.completed': { id: string; user_id: string; merchant_identifier: string | null; updated_at: string };
  'subscription.cancelled': { id: string; user_id: string; merchant_identifier: string | null; updated_at: string };
  'subscription.paused': { id: string; user_id: string; merchant_identifier: string | null; updated_at: string };
  'subscription.resumed': { id: string; user_id: string; merchant_identifier: string | null; updated_at: string };
  'customer.created': {
    id: string;
    user_id: string;
    created_at: string;
    email: string;
    first_name: string | null;
    last_name: string | null;
    phone: string | null;
    address: AddressData;
  };
  'customer.updated': {
    id: string;
    user_id: string;
    updated_at: string;
    email: string;
    first_name: string | null;
    last_name: string | null;
    phone: string | null;
    address: AddressData;
  };
  'webhook_endpoint.disabled': { id: string; url: string; disabled_at: string; failing_since: string };
  'refund.created': {
    id: string;
    payment_id: string;
    request_id: string;
    user_id: string;
    amount: { value: string; formatted: string };
    status: 'pending' | 'requires_action';
    created_at: string;
  };
  'refund.status_updated': {
    id: string;
    payment_id: string;
    request_id: string;
    user_id: string;
    status: 'pending' | 'successful' | 'failed' | 'requires_action';
    failure_reason: string | null;
    action_reason: string | null;
    updated_at: string;
  };
  'refund_authority.status_updated': {
    id: string;
    user_id: string;
    status: 'active' | 'declined' | 'revoked';
    revoked_by: string | null;
    updated_at: string;
  };
  'payment.reconciled': {
    id: string;
    request_id: string;
    user_id: string;
    statement_line_id: string;
    posted_on: string;
    amount: { value: string; formatted: string };
    method: 'particulars' | 'reference' | 'amount_date' | 'manual';
    reconciled_at: string;
  };
};

export type EventType = keyof EventData;
export const EVENT_TYPES = [
  'request.created',
  'request.expired',
  'request.status_updated',
  'payment.created',
  'payment.status_updated',
  'recurring_payment.authorised',
  'recurring_payment.revoked',
  'recurring_payment.expired',
  'subscription.created',
  'subscription.charge_failed',
  'subscription.charge_skipped',
  'subscription.completed',
  'subscription.cancelled',
  'subscription.paused',
  'subscription.resumed',
  'customer.created',
  'customer.updated',
  'webhook_endpoint.disabled',
  'refund.created',
  'refund.status_updated',
  'refund_authority.status_updated',
  'payment.reconciled',
] as const satisfies readonly EventType[];

/**
 * The secret an event's data may carry, by type: today only the recurring token of
 * `recurring_payment.authorised`. The stored event holds it masked, with the secret sealed beside
 * it; a delivery to an endpoint the event was fanned out to when it was written carries it in clear
 * (docs/security.md, "Secrets at rest").
 */
const SECRET_FIELDS: Partial<Record<EventType, string>> = { 'recurring_payment.authorised': 'token' };

/** The data field that holds a secret in events of this type, if any. */
export function secretFieldOf(type: EventType): string | null {
  return SECRET_FIELDS[type] ?? null;
}

/** How a secret shows in the stored event and the events API: its prefix and last four characters (`rct_…a1b2`). */
export function maskSecret(secret: string): string {
  return `${secret.slice(0, secret.indexOf('_') + 1)}…${secret.slice(-4)}`;
}

/** `request.status_updated` carries no `version` (docs/webhooks.md); every other type carries version 1. */
export function versionOf(type: EventType): 1 | undefined {
  return type === 'request.status_updated' ? undefined : 1;
}

export type EventEnvelope<T extends EventType = EventType> = {
  id: string;
  type: T;
  version?: 1;
  created_at: string;
  data: EventData[T];
};

// The builders pick exactly the documented keys, in the documented order, from whatever object they are given.
function pick<T extends EventType>(keys: ReadonlyArray<keyof EventData[T]>) {
  return (source: EventData[T]): EventData[T] => {
    const data: Record<string, unknown> = {};
    for (const key of keys) if (source[key] !== undefined) data[key as string] = source[key];
    return data as EventData[T];
  };
}

export const buildEventData = {
  'request.created': pick<'request.created'>(['id', 'merchant_identifier', 'user_id', 'created_at', 'expires_at']),
  'request.expired': pick<'request.expired'>(['id', 'user_id', 'merchant_identifier', 'status', 'updated_at']),
  'request.status_updated': pick<'request.status_updated'>([
    'id',
    'user_id',
    'merchant_identifier',
    'status',
    'updated_at',
  ]),
  'payment.created': pick<'payment.created'>([
    'id',
    'request_id',
    'user_id',
    'merchant_identifier',
    'status',
    'updated_at',
  ]),
  'payment.status_updated': pick<'payment.status_updated'>([
    'id',
    'request_id',
    'user_id',
    'merchant_identifier',
    'status',
    'updated_at',
  ]),
  'recurring_payment.authorised': pick<'recurring_payment.authorised'>([
    'id',
    'merchant_identifier',
    'status',
    'token',
  ]),
  'recurring_payment.revoked': pick<'recurring_payment.revoked'>(['id', 'merchant_identifier', 'status']),
  'recurring_payment.expired': pick<'recurring_payment.expired'>(['id', 'merchant_identifier', 'status']),
  'subscription.created': pick<'subscription.created'>([
    'id',
    'request_id',
    'user_id',
    'merchant_identifier',
    'created_at',
  ]),
  'subscription.charge_failed': pick<'subscription.charge_failed'>([
    'id',
    'user_id',
    'merchant_identifier',
    'last_payment_id',
    'last_error',
    'attempts',
    'charge_at',
    'next_attempt_at',
    'updated_at',
  ]),
  'subscription.charge_skipped': pick<'subscription.charge_skipped'>([
    'id',
    'user_id',
    'merchant_identifier',
    'attempts',
    'skipped_charge_at',
    'next_charge_at',
    'updated_at',
  ]),
  'subscription.completed': pick<'subscription.completed'>(['id', 'user_id', 'merchant_identifier', 'updated_at']),
  'subscription.cancelled': pick<'subscription.cancelled'>(['id', 'user_id', 'merchant_identifier', 'updated_at']),
  'subscription.paused': pick<'subscription.paused'>(['id', 'user_id', 'merchant_identifier', 'updated_at']),
  'subscription.resumed': pick<'subscription.resumed'>(['id', 'user_id', 'merchant_identifier', 'updated_at']),
  'customer.created': pick<'customer.created'>([
    'id',
    'user_id',
    'created_at',
    'email',
    'first_name',
    'last_name',
    'phone',
    'address',
  ]),
  'customer.updated': pick<'customer.updated'>([
    'id',
    'user_id',
    'updated_at',
    'email',
    'first_name',
    'last_name',
    'phone',
    'address',
  ]),
  'webhook_endpoint.disabled': pick<'webhook_endpoint.disabled'>(['id', 'url', 'disabled_at', 'failing_since']),
  'refund.created': pick<'refund.created'>([
    'id',
    'payment_id',
    'request_id',
    'user_id',
    'amount',
    'status',
    'created_at',
  ]),
  'refund.status_updated': pick<'refund.status_updated'>([
    'id',
    'payment_id',
    'request_id',
    'user_id',
    'status',
    'failure_reason',
    'action_reason',
    'updated_at',
  ]),
  'refund_authority.status_updated': pick<'refund_authority.status_updated'>([
    'id',
    'user_id',
    'status',
    'revoked_by',
    'updated_at',
  ]),
  'payment.reconciled': pick<'payment.reconciled'>([
    'id',
    'request_id',
    'user_id',
    'statement_line_id',
    'posted_on',
    'amount',
    'method',
    'reconciled_at',
  ]),
} satisfies { [T in EventType]: (source: EventData[T]) => EventData[T] };
