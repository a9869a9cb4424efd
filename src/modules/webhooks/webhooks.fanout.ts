import type { Kysely } from 'kysely';
import { systemClock, type Clock } from '../../shared/time.ts';
import type { Database } from '../../store/tables.ts';
import { queueDeliveriesOfEvent, queueDelivery } from './deliveries.repo.ts';
import { engineOf } from '../../store/db.ts';
import { endpointTakes } from './event-filter.ts';
import { endpointFiltersOf } from './webhooks.repo.ts';
import type { Mode } from '../../shared/mode.ts';

/**
 * Runs inside emitEvent's transaction: one delivery and one job per matching endpoint of the
 * event's merchant and mode, so an event and its deliveries commit (or vanish) together. On
 * PostgreSQL one statement does it all, sent with the transaction's next (docs/webhooks.md).
 */
export async function fanOutToWebhooks(
  db: Kysely<Database>,
  event: { id: string; userId: string; mode: Mode; type: string; hasSecret?: boolean },
  realClock: Clock = systemClock,
): Promise<void> {
  if (engineOf(db) === 'postgres') return queueDeliveriesOfEvent(db, event, realClock.now());
  const endpoints = await endpointFiltersOf(db, { userId: event.userId, mode: event.mode });
  if (endpoints.length === 0) return;
  const now = realClock.now();
  for (const endpoint of endpoints) {
    if (!endpointTakes(endpoint.events, event.type)) continue;
    await queueDelivery(
      db,
      {
        eventId: event.id,
        endpointId: endpoint.id,
        userId: event.userId,
        mode: event.mode,
        withSecret: event.hasSecret ?? false,
      },
      now,
    );
  }
}
