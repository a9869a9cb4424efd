import type { EventSubscriber } from '../manifest.ts';

// Who hears of an event as it is written. Modules declare a subscriber in their manifest
// (`onEvent`), src/modules/index.ts hands them all over once, and emitEvent runs each in the
// event's own transaction, so what a subscriber writes (webhook deliveries) commits or vanishes
// with the event. The events module so knows no subscriber by name.

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
