import type { Kysely, Selectable } from 'kysely';
import type { Database } from '../../store/tables.ts';
import { inJsonArray } from '../../store/db.ts';
import { prepared } from '../../store/prepared.ts';
import type { Mode } from '../../shared/mode.ts';
import type { EventsTable } from './events.tables.ts';
import { countOwned, deleteOwned, idsOfOwned } from '../../store/owned-rows.ts';

export type EventRow = Selectable<EventsTable>;
export type Owner = { userId: string; mode: Mode };
type Db = Kysely<Database>;

export async function findEvent(db: Db, owner: Owner | null, id: string): Promise<EventRow | undefined> {
  let query = db.selectFrom('events').selectAll().where('id', '=', id);
  if (owner) query = query.where('user_id', '=', owner.userId).where('mode', '=', owner.mode);
  return query.executeTakeFirst();
}

export type EventFilters = { type?: string; object_id?: string; limit: number; starting_after?: string };

export async function listEvents(db: Db, owner: Owner, filters: EventFilters): Promise<EventRow[]> {
  let query = db.selectFrom('events').selectAll().where('user_id', '=', owner.userId).where('mode', '=', owner.mode);
  if (filters.type) query = query.where('type', '=', filters.type);
  if (filters.object_id !== undefined) query = query.where('object_id', '=', filters.object_id);
  if (filters.starting_after) query = query.where('id', '<', filters.starting_after);
  return query
    .orderBy('id', 'desc')
    .limit(filters.limit + 1)
    .execute();
}

/** Events newer than `after` (ids sort by time), oldest first: the feed `listen` follows. */
export async function eventsAfter(
  db: Db,
  owner: Owner,
  after: string,
  types: string[] | undefined,
  limit: number,
): Promise<EventRow[]> {
  let query = db
    .selectFrom('events')
    .selectAll()
    .where('user_id', '=', owner.userId)
    .where('mode', '=', owner.mode)
    .where('id', '>', after);
  if (types) query = query.where('type', 'in', types);
  return query.orderBy('id', 'asc').limit(limit).execute();
}

export async function newestEventId(db: Db, owner: Owner): Promise<string | null> {
  const row = await db
    .selectFrom('events')
    .select('id')
    .where('user_id', '=', owner.userId)
    .where('mode', '=', owner.mode)
    .orderBy('id', 'desc')
    .limit(1)
    .executeTakeFirst();
  return row?.id ?? null;
}

const eventBodiesQuery = prepared<{ ids: string }, { id: string; body: string; secret_sealed: string | null }>(
  (db, arg) =>
    db
      .selectFrom('events')
      .select(['id', 'body', 'secret_sealed'])
      .where(inJsonArray(db, 'id', arg('ids'))),
);

/** The stored envelopes (and sealed secrets) of these events, for their deliveries. */
export async function eventBodies(
  db: Db,
  ids: string[],
): Promise<Map<string, { body: string; secret_sealed: string | null }>> {
  const bodies = new Map<string, { body: string; secret_sealed: string | null }>();
  if (ids.length === 0) return bodies;
  for (const row of await eventBodiesQuery.all(db, { ids: JSON.stringify(ids) }))
    bodies.set(row.id, { body: row.body, secret_sealed: row.secret_sealed });
  return bodies;
}

/** The recurring token as the events API shows it: its prefix, an ellipsis and its last 4 characters. */
/** Events of these types whose secret is not sealed: those stored before secrets were sealed at rest. */
export async function eventsWithUnsealedSecret(db: Db, types: string[]): Promise<Array<{ id: string; body: string }>> {
  if (types.length === 0) return [];
  return db
    .selectFrom('events')
    .select(['id', 'body'])
    .where('type', 'in', types)
    .where('secret_sealed', 'is', null)
    .execute();
}

export async function setEventBodyAndSecret(db: Db, id: string, body: string, secretSealed: string): Promise<void> {
  await db.updateTable('events').set({ body, secret_sealed: secretSealed }).where('id', '=', id).execute();
}

const deliverySummariesQuery = prepared<{ ids: string }, { id: string; delivery_summary: string | null }>((db, arg) =>
  db
    .selectFrom('events')
    .select(['id', 'delivery_summary'])
    .where(inJsonArray(db, 'id', arg('ids'))),
);

/** The delivery summaries kept on these events (those that have one). */
export async function deliverySummaries(db: Db, ids: string[]): Promise<Map<string, string>> {
  const summaries = new Map<string, string>();
  if (ids.length === 0) return summaries;
  for (const row of await deliverySummariesQuery.all(db, { ids: JSON.stringify(ids) }))
    if (row.delivery_summary !== null) summaries.set(row.id, row.delivery_summary);
  return summaries;
}

export async function setDeliverySummary(db: Db, id: string, summary: string): Promise<void> {
  await db.updateTable('events').set({ delivery_summary: summary }).where('id', '=', id).execute();
}

// A merchant's test-mode events, counted and deleted with the rest of their test data
// (manifest.ts, TestData).

export function countTestEvents(db: Db, userId: string): Promise<number> {
  return countOwned(db, 'events', { userId, mode: 'test' });
}

export function deleteTestEvents(db: Db, userId: string): Promise<number> {
  return deleteOwned(db, 'events', { userId, mode: 'test' });
}

/** The ids of the owner's events, as a subquery. */
export function eventIdsOfOwner(db: Db, owner: Owner) {
  return idsOfOwned(db, 'events', owner);
}
