import type { Kysely, Selectable } from 'kysely';
import { notFound } from '../../shared/errors.ts';
import type { Database, Mode } from '../../store/tables.ts';
import type { WebhookEndpointsTable } from './webhooks.tables.ts';

export type EndpointRow = Selectable<WebhookEndpointsTable>;
export type Owner = { userId: string; mode: Mode };
type Db = Kysely<Database>;

export async function insertEndpoint(db: Db, row: EndpointRow): Promise<void> {
  await db.insertInto('webhook_endpoints').values(row).execute();
}

export async function findEndpoint(db: Db, owner: Owner, id: string): Promise<EndpointRow | undefined> {
  return db
    .selectFrom('webhook_endpoints')
    .selectAll()
    .where('id', '=', id)
    .where('user_id', '=', owner.userId)
    .where('mode', '=', owner.mode)
    .where('deleted_at', 'is', null)
    .executeTakeFirst();
}

export async function getEndpoint(db: Db, owner: Owner, id: string): Promise<EndpointRow> {
  const row = await findEndpoint(db, owner, id);
  if (!row) throw notFound('webhook', id);
  return row;
}

/** By id alone, for the admin CLI. */
export async function findEndpointById(db: Db, id: string): Promise<EndpointRow | undefined> {
  return db.selectFrom('webhook_endpoints').selectAll().where('id', '=', id).where('deleted_at', 'is', null).executeTakeFirst();
}

export async function listEndpoints(db: Db, owner: Owner, page: { limit: number; starting_after?: string }): Promise<EndpointRow[]> {
  let query = db
    .selectFrom('webhook_endpoints')
    .selectAll()
    .where('user_id', '=', owner.userId)
    .where('mode', '=', owner.mode)
    .where('deleted_at', 'is', null);
  if (page.starting_after) query = query.where('id', '<', page.starting_after);
  return query.orderBy('id', 'desc').limit(page.limit + 1).execute();
}

export async function liveEndpointsOf(db: Db, owner: Owner): Promise<EndpointRow[]> {
  return db.selectFrom('webhook_endpoints').selectAll().where('user_id', '=', owner.userId).where('mode', '=', owner.mode)
    .where('deleted_at', 'is', null).where('disabled_at', 'is', null).orderBy('id').execute();
}

export async function softDeleteEndpoint(db: Db, id: string, now: number): Promise<void> {
  await db.updateTable('webhook_endpoints').set({ deleted_at: now }).where('id', '=', id).execute();
}

export type EndpointChanges = Partial<Pick<EndpointRow, 'url' | 'events' | 'disabled_at' | 'secret'>>;

export async function updateEndpoint(db: Db, id: string, changes: EndpointChanges): Promise<void> {
  if (Object.keys(changes).length === 0) return;
  await db.updateTable('webhook_endpoints').set(changes).where('id', '=', id).execute();
}
