import type { Kysely } from 'kysely';
import { newId } from '../../shared/ids.ts';
import { insertLater } from '../../store/prepared.ts';
import { iso } from '../../shared/time.ts';
import type { Database } from '../../store/tables.ts';
import { invalidParam, notFound } from '../../shared/errors.ts';
import { pageOf } from '../../shared/pagination.ts';
import {
  buildEventData,
  EVENT_TYPES,
  maskSecret,
  secretFieldOf,
  versionOf,
  type EventData,
  type EventEnvelope,
  type EventType,
} from './events.builders.ts';
import {
  deliverySummaries,
  eventBodies as storedBodies,
  eventIdsOfOwner,
  eventsAfter,
  eventsWithUnsealedSecret,
  findEvent,
  listEvents,
  newestEventId,
  setDeliverySummary,
  setEventBodyAndSecret,
  type EventRow,
} from './events.repo.ts';
import type { SecretBox } from '../../shared/secret-box.ts';

import type { EventFeedQuery, ListEventsQuery } from './events.schemas.ts';
import { eventSubscribers } from './events.subscribers.ts';
import type { Mode } from '../../shared/mode.ts';
import type { Ctx } from '../context.ts';

export type EventScope = { userId: string; mode: Mode };

/**
 * Writes an event in the caller's transaction (the outbox): it exists exactly when the change that
 * caused it does, and delivery picks it up from there. Every subscriber (webhooks' fan-out) runs in
 * that transaction too. An event whose type carries a secret (secretFieldOf) takes it in clear in
 * `data` and needs `secrets`: it is stored masked, sealed beside it (docs/security.md).
 */
export async function emitEvent<T extends EventType>(
  db: Kysely<Database>,
  scope: EventScope,
  type: T,
  objectId: string,
  data: EventData[T],
  now: number,
  options: { secrets?: SecretBox; subject?: unknown } = {},
): Promise<EventEnvelope<T>> {
  const envelope: EventEnvelope<T> = {
    id: newId('event'),
    type,
    version: versionOf(type),
    created_at: iso(now),
    data: buildEventData[type](data as any) as EventData[T],
  };
  if (envelope.version === undefined) delete envelope.version;
  let sealedSecret: string | null = null;
  const secretField = secretFieldOf(type);
  if (secretField !== null) {
    const fields = envelope.data as Record<string, unknown>;
    const secret = fields[secretField];
    if (typeof secret !== 'string' || !options.secrets)
      throw new Error(`a ${type} event needs its ${secretField} in clear and the secret box to seal it`);
    sealedSecret = options.secrets.seal(secret);
    fields[secretField] = maskSecret(secret);
  }
  const body = JSON.stringify(envelope);
  await insertLater(db, 'events', {
    id: envelope.id,
    user_id: scope.userId,
    mode: scope.mode,
    type,
    object_id: objectId,
    body,
    created_at: now,
    ...(sealedSecret !== null && { secret_sealed: sealedSecret }),
  });
  const emitted = {
    id: envelope.id,
    userId: scope.userId,
    mode: scope.mode,
    type,
    objectId,
    hasSecret: sealedSecret !== null,
    subject: options.subject,
  };
  for (const subscriber of eventSubscribers()) await subscriber(db, emitted);
  return envelope;
}

/** An event's stored body with its secret put back in clear, for a delivery that may carry it. */
export function revealSecret(storedBody: string, secret: string): string {
  const envelope = JSON.parse(storedBody) as { type: EventType; data: Record<string, unknown> };
  const field = secretFieldOf(envelope.type);
  if (field === null) return storedBody;
  envelope.data[field] = secret;
  return JSON.stringify(envelope);
}

/** Secrets in events stored before sealing at rest: sealed and masked. Returns the events sealed, whose own deliveries still carry them. */
export async function sealStoredEventSecrets(trx: Kysely<Database>, secrets: SecretBox): Promise<string[]> {
  const types = EVENT_TYPES.filter((type) => secretFieldOf(type) !== null);
  const sealed: string[] = [];
  for (const event of await eventsWithUnsealedSecret(trx, types)) {
    const envelope = JSON.parse(event.body) as { type: EventType; data: Record<string, unknown> };
    const field = secretFieldOf(envelope.type)!;
    const secret = envelope.data[field];
    if (typeof secret !== 'string' || secret.includes('…')) continue;
    envelope.data[field] = maskSecret(secret);
    await setEventBodyAndSecret(trx, event.id, JSON.stringify(envelope), secrets.seal(secret));
    sealed.push(event.id);
  }
  return sealed;
}

// The event log: what was sent, to whom, and how each attempt went; and re-sending.

const ownerOf = (ctx: Ctx) => ({ userId: ctx.merchant.id, mode: ctx.mode });

/** The stored body is the exact envelope that was POSTed. */
export function presentEvent(row: EventRow): EventEnvelope {
  return JSON.parse(row.body) as EventEnvelope;
}

export async function listEventsFor(ctx: Ctx, query: ListEventsQuery) {
  const limit = query.limit ?? 100;
  const { items, hasMore } = pageOf(await listEvents(ctx.db, ownerOf(ctx), { ...query, limit }), limit);
  return { events: items.map(presentEvent), has_more: hasMore };
}

/** One of the caller's events (any merchant's for the operator, `scope` null); not_found.event otherwise. */
export async function getEvent(db: Kysely<Database>, scope: EventScope | null, id: string): Promise<EventRow> {
  const row = await findEvent(db, scope, id);
  if (!row) throw notFound('event', id);
  return row;
}

export type { EventRow };

const FEED_POLL_MS = 250;
const FEED_PAGE = 100;
const knownTypes = new Set<string>(EVENT_TYPES);

/** `types` of the feed: comma-separated known event types, or undefined for every type. */
export function parseEventTypes(types: string | undefined): string[] | undefined {
  if (types === undefined) return undefined;
  const list = types
    .split(',')
    .map((type) => type.trim())
    .filter(Boolean);
  const unknown = list.find((type) => !knownTypes.has(type));
  if (list.length === 0 || unknown !== undefined) {
    throw invalidParam(
      'types',
      `types must be comma-separated event types${unknown ? `; ${JSON.stringify(unknown)} is not one` : ''}; known types: ${EVENT_TYPES.join(', ')}`,
    );
  }
  return [...new Set(list)];
}

/**
 * The events after a cursor, oldest first, waiting up to `wait` seconds for one to arrive (long
 * polling; the database is looked at every quarter second, so events written by any process
 * count). `stop` ends the wait early: the caller went away, or the service is closing.
 */
export async function eventFeedFor(ctx: Ctx, query: EventFeedQuery, stop: AbortSignal) {
  const types = parseEventTypes(query.types);
  const owner = ownerOf(ctx);
  const after = query.after ?? (await newestEventId(ctx.db, owner));
  const until = Date.now() + (query.wait ?? 0) * 1000;
  for (;;) {
    const rows = await eventsAfter(ctx.db, owner, after ?? 'event_', types, FEED_PAGE);
    if (rows.length > 0 || Date.now() >= until || stop.aborted) {
      return { events: rows.map(presentEvent), cursor: rows.at(-1)?.id ?? after };
    }
    await new Promise<void>((resolve) => {
      const timer = setTimeout(done, Math.min(FEED_POLL_MS, Math.max(0, until - Date.now())));
      function done() {
        clearTimeout(timer);
        stop.removeEventListener('abort', done);
        resolve();
      }
      stop.addEventListener('abort', done, { once: true });
    });
  }
}

/** The stored envelopes (and sealed secrets) of these events, for their deliveries. */
export function eventBodies(
  db: Kysely<Database>,
  ids: string[],
): Promise<Map<string, { body: string; secret_sealed: string | null }>> {
  return storedBodies(db, ids);
}

/**
 * The ids of an owner's events, as a subquery: how another module finds its rows that belong to
 * them, to delete a merchant's test data with theirs.
 */
export function eventIdsOf(db: Kysely<Database>, owner: { userId: string; mode: Mode }) {
  return eventIdsOfOwner(db, owner);
}

/**
 * The summaries a subscriber kept on these events when it pruned its records of them
 * (`delivery_summary`), by event id; an event without one is left out.
 */
export function deliverySummariesOf(db: Kysely<Database>, ids: string[]): Promise<Map<string, string>> {
  return deliverySummaries(db, ids);
}

/** Keeps a subscriber's summary of its pruned records of an event on the event, in place of any earlier one. */
export function keepDeliverySummary(db: Kysely<Database>, id: string, summary: string): Promise<void> {
  return setDeliverySummary(db, id, summary);
}
