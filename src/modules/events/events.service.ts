import type { Kysely } from 'kysely';
import { newId } from '../../shared/ids.ts';
import { iso } from '../../shared/time.ts';
import type { Database, Mode } from '../../store/tables.ts';
import { buildEventData, versionOf, type EventData, type EventEnvelope, type EventType } from './events.builders.ts';

export type EventScope = { userId: string; mode: Mode };

type FanOut = (db: Kysely<Database>, event: { id: string; userId: string; mode: Mode; type: EventType; body: string }, now: number) => Promise<void>;
let fanOut: FanOut = async () => {};

/** The webhooks module plugs in here to create deliveries in the same transaction as the event. */
export function setEventFanOut(next: FanOut): void {
  fanOut = next;
}

/**
 * Writes an event in the caller's transaction (the outbox): it exists exactly when the change that
 * caused it does, and delivery picks it up from there.
 */
export async function emitEvent<T extends EventType>(
  db: Kysely<Database>,
  scope: EventScope,
  type: T,
  objectId: string,
  data: EventData[T],
  now: number,
): Promise<EventEnvelope<T>> {
  const envelope: EventEnvelope<T> = { id: newId('event'), type, version: versionOf(type), created_at: iso(now), data: buildEventData[type](data as any) as EventData[T] };
  if (envelope.version === undefined) delete envelope.version;
  const body = JSON.stringify(envelope);
  await db
    .insertInto('events')
    .values({ id: envelope.id, user_id: scope.userId, mode: scope.mode, type, object_id: objectId, body, created_at: now })
    .execute();
  await fanOut(db, { id: envelope.id, userId: scope.userId, mode: scope.mode, type, body }, now);
  return envelope;
}
