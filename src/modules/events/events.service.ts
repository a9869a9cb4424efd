import type { Kysely } from 'kysely';
import { newId } from '../../shared/ids.ts';
import { insertRow } from '../../store/prepared.ts';
import { iso } from '../../shared/time.ts';
import type { Database } from '../../store/tables.ts';
import { invalidParam, notFound } from '../../shared/errors.ts';
import { pageOf } from '../../shared/pagination.ts';
import { deliveriesWithAttempts, letDeliveriesCarrySecret, resendToWebhooks } from '../webhooks/webhooks.service.ts';
import { fanOutToWebhooks } from '../webhooks/webhooks.fanout.ts';
import {
  buildEventData,
  EVENT_TYPES,
  versionOf,
  type EventData,
  type EventEnvelope,
  type EventType,
} from './events.builders.ts';
import { eventsAfter, findEvent, listEvents, newestEventId, sealEventTokens, type EventRow } from './events.repo.ts';
import type { SecretBox } from '../../shared/secret-box.ts';

export { eventBodies } from './events.repo.ts';
import type { EventFeedQuery, ListEventsQuery, ResendBody } from './events.schemas.ts';
import type { Mode } from '../../shared/mode.ts';
import type { Ctx } from '../context.ts';

export type EventScope = { userId: string; mode: Mode };

/**
 * Writes an event in the caller's transaction (the outbox): it exists exactly when the change that
 * caused it does, and delivery picks it up from there. `sealedSecret` is a secret the data carries
 * masked (the recurring token): stored sealed beside it, and put back in clear only in deliveries to
 * the endpoints this event is fanned out to now (docs/security.md).
 */
export async function emitEvent<T extends EventType>(
  db: Kysely<Database>,
  scope: EventScope,
  type: T,
  objectId: string,
  data: EventData[T],
  now: number,
  sealedSecret: string | null = null,
): Promise<EventEnvelope<T>> {
  const envelope: EventEnvelope<T> = {
    id: newId('event'),
    type,
    version: versionOf(type),
    created_at: iso(now),
    data: buildEventData[type](data as any) as EventData[T],
  };
  if (envelope.version === undefined) delete envelope.version;
  const body = JSON.stringify(envelope);
  await insertRow(db, 'events', {
    id: envelope.id,
    user_id: scope.userId,
    mode: scope.mode,
    type,
    object_id: objectId,
    body,
    created_at: now,
    ...(sealedSecret !== null && { secret_sealed: sealedSecret }),
  });
  // Deliveries are created in the same transaction, so an event and its deliveries commit (or vanish) together.
  await fanOutToWebhooks(db, {
    id: envelope.id,
    userId: scope.userId,
    mode: scope.mode,
    type,
    hasSecret: sealedSecret !== null,
  });
  return envelope;
}

/** Recurring tokens in events stored before sealing at rest: sealed, masked, and still carried by the event's own deliveries. */
export async function sealEventSecrets(trx: Kysely<Database>, secrets: SecretBox): Promise<void> {
  const sealed = await sealEventTokens(trx, (token) => secrets.seal(token));
  await letDeliveriesCarrySecret(trx, sealed);
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

export async function retrieveEvent(ctx: Ctx, id: string) {
  const row = await findEvent(ctx.db, ownerOf(ctx), id);
  if (!row) throw notFound('event', id);
  return { event: presentEvent(row), deliveries: await deliveriesWithAttempts(ctx.db, row.id) };
}

/** Re-sends an event as new deliveries. `scope` null is the operator (CLI): any merchant's event. */
export async function resendEvent(
  db: Kysely<Database>,
  scope: EventScope | null,
  id: string,
  webhookId: string | undefined,
  realNow: number,
) {
  const row = await findEvent(db, scope, id);
  if (!row) throw notFound('event', id);
  return resendToWebhooks(db, { id: row.id, type: row.type, userId: row.user_id, mode: row.mode }, webhookId, realNow);
}

export async function resendEventFor(ctx: Ctx, id: string, body: ResendBody) {
  return resendEvent(ctx.db, ownerOf(ctx), id, body.webhook_id, ctx.deps.clock.now());
}

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
