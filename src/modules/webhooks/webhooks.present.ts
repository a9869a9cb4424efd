import { iso, isoOrNull } from '../../shared/time.ts';
import type { AttemptRow, DeliveryRow } from './deliveries.repo.ts';
import type { EndpointRow } from './webhooks.repo.ts';
import type { DeliveryObject, WebhookObject } from './webhooks.schemas.ts';

export function presentWebhook(
  row: EndpointRow,
  options: { withSecret?: boolean; previousSecretUntil?: number } = {},
): WebhookObject {
  return {
    id: row.id,
    url: row.url,
    description: row.description,
    events: row.events === null ? null : (JSON.parse(row.events) as string[]),
    is_test_mode: row.mode === 'test',
    disabled: row.disabled_at !== null,
    created_at: iso(Number(row.created_at)),
    ...(options.withSecret && { secret: row.secret }),
    ...(options.previousSecretUntil !== undefined && { previous_secret_expires_at: iso(options.previousSecretUntil) }),
  };
}

const time = (value: number | null) => isoOrNull(value === null ? null : Number(value));

export function presentDelivery(row: DeliveryRow, attempts?: AttemptRow[]): DeliveryObject {
  return {
    id: row.id,
    event_id: row.event_id,
    webhook_id: row.endpoint_id,
    status: row.status,
    attempt_count: Number(row.attempts),
    created_at: iso(Number(row.created_at)),
    first_attempt_at: time(row.first_attempt_at),
    last_attempt_at: time(row.last_attempt_at),
    next_attempt_at: row.status === 'pending' ? time(row.next_attempt_at) : null,
    succeeded_at: time(row.succeeded_at),
    failed_at: time(row.failed_at),
    resent_by: row.superseded_by,
    ...(attempts && {
      attempts: attempts.map((a) => ({
        attempt: Number(a.attempt),
        started_at: iso(Number(a.started_at)),
        latency_ms: Number(a.latency_ms),
        status_code: a.status_code === null ? null : Number(a.status_code),
        response_body: a.response_body,
        error: a.error,
      })),
    }),
  };
}
