// Row types of the webhooks module, merged into the store's Database type.

import type { Generated } from 'kysely';

export interface WebhookEndpointsTable {
  id: string;
  user_id: string;
  mode: 'live' | 'test';
  url: string;
  /**
   * base64 of 32 random bytes, sealed (docs/security.md); kept so deliveries can be signed, returned only at creation
   * and rotation. After a rotation, the keyring of src/modules/webhooks/signing.ts (the new secret and, for 24 hours, the old).
   */
  secret: string;
  /** JSON array of event types, or null for every type. */
  events: string | null;
  created_at: number;
  deleted_at: number | null;
  /** Set while the merchant has the endpoint disabled: no new deliveries. */
  disabled_at: number | null;
  /**
   * When it was last enabled again after being disabled, null if it never was: its failing streak
   * (webhooks.health.ts) counts attempts from then on only (migration 0048).
   */
  enabled_at: number | null;
  /** The merchant's own label for the endpoint, trimmed, at most 200 characters; null when none (migration 0027). */
  description: string | null;
}

/** pending | succeeded | failed | cancelled (endpoint deleted before delivery). */
export type DeliveryStatus = 'pending' | 'succeeded' | 'failed' | 'cancelled';

export interface WebhookDeliveriesTable {
  id: string;
  event_id: string;
  endpoint_id: string;
  user_id: string;
  mode: 'live' | 'test';
  status: DeliveryStatus;
  /** Attempts recorded so far. */
  attempts: number;
  first_attempt_at: number | null;
  last_attempt_at: number | null;
  next_attempt_at: number | null;
  /** When status became failed; `recover` looks for these. */
  failed_at: number | null;
  succeeded_at: number | null;
  /** The delivery that re-sent this one after it failed (recover), so it is recovered once. */
  superseded_by: string | null;
  /**
   * 1 when the body goes out with the event's secret (the recurring token) in clear: deliveries to
   * endpoints that existed when the event happened, their retries, resends and recoveries, until
   * the endpoint's URL changes (then 0 on all of them).
   */
  with_secret: Generated<number>;
  created_at: number;
}

export interface WebhookAttemptsTable {
  id: string;
  delivery_id: string;
  /** 1-based number sent in X-Service-Delivery-Attempt. */
  attempt: number;
  started_at: number;
  latency_ms: number;
  status_code: number | null;
  /** First 1 kB of the reply body. */
  response_body: string | null;
  /** Timeout or network error, when there was no HTTP reply. */
  error: string | null;
}

export interface WebhookTables {
  webhook_endpoints: WebhookEndpointsTable;
  webhook_deliveries: WebhookDeliveriesTable;
  webhook_attempts: WebhookAttemptsTable;
}

declare module '../../store/tables.ts' {
  interface Database extends WebhookTables {}
}
