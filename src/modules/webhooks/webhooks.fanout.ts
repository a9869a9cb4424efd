import type { Kysely } from 'kysely';
import { setEventFanOut } from '../events/events.service.ts';
import type { EventType } from '../events/events.builders.ts';
import { systemClock, type Clock } from '../../shared/time.ts';
import { prepared } from '../../store/prepared.ts';
import type { Database, Mode } from '../../store/tables.ts';
import { queueDelivery } from './deliveries.repo.ts';
import { endpointTakes } from './event-filter.ts';

const liveEndpointsQuery = prepared<{ userId: string; mode: Mode }, { id: string; events: string | null }>((db, arg) =>
  db.selectFrom('webhook_endpoints').select(['id', 'events']).where('user_id', '=', arg('userId')).where('mode', '=', arg('mode')).where('deleted_at', 'is', null)
    .where('disabled_at', 'is', null));

/**
 * Runs inside emitEvent's transaction: one delivery and one job per matching endpoint of the
 * event's merchant and mode, so an event and its deliveries commit (or vanish) together.
 */
export async function fanOutToWebhooks(
  db: Kysely<Database>,
  event: { id: string; userId: string; mode: Mode; type: EventType; hasSecret?: boolean },
  realClock: Clock = systemClock,
): Promise<void> {
  const endpoints = await liveEndpointsQuery.all(db, { userId: event.userId, mode: event.mode });
  if (endpoints.length === 0) return;
  const now = realClock.now();
  for (const endpoint of endpoints) {
    if (!endpointTakes(endpoint.events, event.type)) continue;
    await queueDelivery(db, { eventId: event.id, endpointId: endpoint.id, userId: event.userId, mode: event.mode, withSecret: event.hasSecret ?? false }, now);
  }
}

let installed = false;
/** Plugs webhook fan-out into emitEvent; every process that emits events calls this once. */
export function installWebhookFanOut(): void {
  if (installed) return;
  installed = true;
  setEventFanOut((db, event) => fanOutToWebhooks(db, event));
}
