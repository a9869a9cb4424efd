import type { Kysely, Selectable } from 'kysely';
import type { Database } from '../../store/tables.ts';
import { inJsonArray } from '../../store/db.ts';
import { prepared } from '../../store/prepared.ts';
import type { Mode } from '../../shared/mode.ts';
import type { EventsTable } from './events.tables.ts';

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
  if (filters.object_id) query = query.where('object_id', '=', filters.object_id);
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
function masked(token: string): string {
  return `${token.slice(0, 4)}…${token.slice(-4)}`;
}

/**
 * Seals recurring tokens stored in clear before secrets were sealed at rest, masking them in the
 * envelope; returns the ids of the events changed.
 */
export async function sealEventTokens(db: Db, seal: (secret: string) => string): Promise<string[]> {
  const events = await db
    .selectFrom('events')
    .select(['id', 'body'])
    .where('type', '=', 'recurring_payment.authorised')
    .where('secret_sealed', 'is', null)
    .execute();
  const sealed: string[] = [];
  for (const event of events) {
    const envelope = JSON.parse(event.body) as { data: { token?: unknown } };
    const token = envelope.data.token;
    if (typeof token !== 'string' || token.includes('…')) continue;
    envelope.data.token = masked(token);
    await db
      .updateTable('events')
      .set({ body: JSON.stringify(envelope), secret_sealed: seal(token) })
      .where('id', '=', event.id)
      .execute();
    sealed.push(event.id);
  }
  return sealed;
}
