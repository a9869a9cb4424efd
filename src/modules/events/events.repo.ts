import type { Kysely, Selectable } from 'kysely';
import type { Database, EventsTable, Mode } from '../../store/tables.ts';

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
  return query.orderBy('id', 'desc').limit(filters.limit + 1).execute();
}

/** Events newer than `after` (ids sort by time), oldest first: the feed `listen` follows. */
export async function eventsAfter(db: Db, owner: Owner, after: string, types: string[] | undefined, limit: number): Promise<EventRow[]> {
  let query = db.selectFrom('events').selectAll().where('user_id', '=', owner.userId).where('mode', '=', owner.mode).where('id', '>', after);
  if (types) query = query.where('type', 'in', types);
  return query.orderBy('id', 'asc').limit(limit).execute();
}

export async function newestEventId(db: Db, owner: Owner): Promise<string | null> {
  const row = await db.selectFrom('events').select('id').where('user_id', '=', owner.userId).where('mode', '=', owner.mode).orderBy('id', 'desc').limit(1).executeTakeFirst();
  return row?.id ?? null;
}
