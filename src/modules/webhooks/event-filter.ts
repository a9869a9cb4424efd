import { EVENT_TYPES } from '../events/events.builders.ts';

const known = new Set<string>(EVENT_TYPES);

/** An endpoint takes an event when it has no filter or its filter names the event's type. */
export function endpointTakes(filter: string | null, type: string): boolean {
  if (filter === null) return true;
  return (JSON.parse(filter) as string[]).includes(type);
}

/** Why an `events` filter is not acceptable (an unknown or repeated type), or null. */
export function eventFilterProblem(events: string[]): string | null {
  const seen = new Set<string>();
  for (const type of events) {
    if (!known.has(type))
      return `events contains ${JSON.stringify(type)}, which is not an event type; known types: ${EVENT_TYPES.join(', ')}`;
    if (seen.has(type)) return `events lists ${JSON.stringify(type)} twice`;
    seen.add(type);
  }
  return null;
}
