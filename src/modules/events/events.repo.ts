import type { Kysely, Selectable } from 'kysely';
import type { Database } from '../../store/tables.ts';
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
  return query.orderBy('id', 'desc').limit(filters.limit + 1).execute();
}

/** The stored envelopes (and sealed secrets) of these events, for their deliveries. */
export async function eventBodies(db: Db, ids: string[]): Promise<Map<string, { body: string; secret_sealed: string | null }>> {
  const bodies = new Map<string, { body: string; secret_sealed: string | null }>();
  for (let i = 0; i < ids.length; i += 500) {
    const rows = await db.selectFrom('events').select(['id', 'body', 'secret_sealed']).where('id', 'in', ids.slice(i, i + 500)).execute();
    for (const row of rows) bodies.set(row.id, { body: row.body, secret_sealed: row.secret_sealed });
  }
  return bodies;
}
