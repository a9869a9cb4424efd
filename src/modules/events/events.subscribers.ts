import type { Kysely } from 'kysely';
import type { Mode } from '../../shared/mode.ts';
import type { Database } from '../../store/tables.ts';
import type { EventType } from './events.builders.ts';

// Who hears of an event as it is written. Modules declare a subscriber in their manifest
// (`onEvent`), src/modules/index.ts hands them all over once, and emitEvent runs each in the
// event's own transaction, so what a subscriber writes (webhook deliveries) commits or vanishes
// with the event. The events module so knows no subscriber by name.

/** An event as written: enough for a subscriber to decide what to do, without reading it back. */
export type EmittedEvent = { id: string; userId: string; mode: Mode; type: EventType; hasSecret: boolean };

export type EventSubscriber = (db: Kysely<Database>, event: EmittedEvent) => Promise<void>;

let subscribers: readonly EventSubscriber[] | null = null;

export function setEventSubscribers(list: readonly EventSubscriber[]): void {
  subscribers = list;
}

/** The subscribers, or a clear failure where nothing wired them: an event nobody hears would be lost to webhooks silently. */
export function eventSubscribers(): readonly EventSubscriber[] {
  if (subscribers === null)
    throw new Error('no event subscribers are wired: import src/modules/index.ts before writing events');
  return subscribers;
}
