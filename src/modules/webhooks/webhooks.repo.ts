import type { Kysely, Selectable } from 'kysely';
import { notFound } from '../../shared/errors.ts';
import type { Database } from '../../store/tables.ts';
import { prepared } from '../../store/prepared.ts';
import { notSealed } from '../../store/seal-at-rest.ts';
import { lockForUpdate } from '../../store/db.ts';
import type { WebhookEndpointsTable } from './webhooks.tables.ts';
import type { Mode } from '../../shared/mode.ts';

export type EndpointRow = Selectable<WebhookEndpointsTable>;
export type Owner = { userId: string; mode: Mode };
type Db = Kysely<Database>;

export async function insertEndpoint(db: Db, row: EndpointRow): Promise<void> {
  await db.insertInto('webhook_endpoints').values(row).execute();
}

/** An endpoint not deleted, by id; of that owner only, unless `owner` is null (the operator, CLI). */
function endpointById(db: Db, owner: Owner | null, id: string) {
  const query = db.selectFrom('webhook_endpoints').selectAll().where('id', '=', id).where('deleted_at', 'is', null);
  return owner ? query.where('user_id', '=', owner.userId).where('mode', '=', owner.mode) : query;
}

export async function findEndpoint(db: Db, owner: Owner, id: string): Promise<EndpointRow | undefined> {
  return endpointById(db, owner, id).executeTakeFirst();
}

export async function getEndpoint(db: Db, owner: Owner, id: string): Promise<EndpointRow> {
  const row = await findEndpoint(db, owner, id);
  if (!row) throw notFound('webhook', id);
  return row;
}

/**
 * getEndpoint, with the endpoint's row locked until the transaction ends (PostgreSQL; SQLite's
 * writers take turns already). What changes the endpoint, or queues deliveries from its past ones
 * (recover, resend), holds it: two recoveries never both re-send the same failed delivery, and a
 * resend never reads whether the endpoint may have an event's secret while its URL is changing.
 */
export async function lockEndpoint(db: Db, owner: Owner | null, id: string): Promise<EndpointRow> {
  const row = await lockEndpointIfThere(db, owner, id);
  if (!row) throw notFound('webhook', id);
  return row;
}

/** lockEndpoint, answering undefined for an endpoint deleted (or never there). */
export function lockEndpointIfThere(db: Db, owner: Owner | null, id: string): Promise<EndpointRow | undefined> {
  return lockForUpdate(db, endpointById(db, owner, id)).executeTakeFirst();
}

export async function listEndpoints(
  db: Db,
  owner: Owner,
  page: { limit: number; starting_after?: string },
): Promise<EndpointRow[]> {
  let query = db
    .selectFrom('webhook_endpoints')
    .selectAll()
    .where('user_id', '=', owner.userId)
    .where('mode', '=', owner.mode)
    .where('deleted_at', 'is', null);
  if (page.starting_after) query = query.where('id', '<', page.starting_after);
  return query
    .orderBy('id', 'desc')
    .limit(page.limit + 1)
    .execute();
}

/** The owner's endpoints neither deleted nor disabled, locked as lockEndpoint locks one (resending an event to them all). */
export async function lockLiveEndpointsOf(db: Db, owner: Owner): Promise<EndpointRow[]> {
  const query = db
    .selectFrom('webhook_endpoints')
    .selectAll()
    .where('user_id', '=', owner.userId)
    .where('mode', '=', owner.mode)
    .where('deleted_at', 'is', null)
    .where('disabled_at', 'is', null)
    .orderBy('id');
  return lockForUpdate(db, query).execute();
}

export async function softDeleteEndpoint(db: Db, id: string, now: number): Promise<void> {
  await db.updateTable('webhook_endpoints').set({ deleted_at: now }).where('id', '=', id).execute();
}

export type EndpointChanges = Partial<
  Pick<EndpointRow, 'url' | 'events' | 'disabled_at' | 'enabled_at' | 'secret' | 'description'>
>;

export async function updateEndpoint(db: Db, id: string, changes: EndpointChanges): Promise<void> {
  if (Object.keys(changes).length === 0) return;
  await db.updateTable('webhook_endpoints').set(changes).where('id', '=', id).execute();
}

/** Endpoint secrets stored in clear before secrets were sealed at rest. */
export async function sealEndpointSecrets(db: Db, seal: (secret: string) => string): Promise<void> {
  const rows = await db
    .selectFrom('webhook_endpoints')
    .select(['id', 'secret'])
    .where('secret', '!=', '')
    .where(notSealed('secret'))
    .execute();
  for (const row of rows)
    await db
      .updateTable('webhook_endpoints')
      .set({ secret: seal(row.secret) })
      .where('id', '=', row.id)
      .execute();
}

export type LiveEndpoint = Pick<EndpointRow, 'id' | 'user_id' | 'mode' | 'url' | 'enabled_at'>;

/** Every endpoint neither deleted nor disabled, of every merchant (the health check). */
export async function allLiveEndpoints(db: Db): Promise<LiveEndpoint[]> {
  return db
    .selectFrom('webhook_endpoints')
    .select(['id', 'user_id', 'mode', 'url', 'enabled_at'])
    .where('deleted_at', 'is', null)
    .where('disabled_at', 'is', null)
    .execute();
}

/**
 * When the endpoint's current run of failed attempts began, or null when there is none. A run
 * starts after its last 2xx, and after it was last enabled again: enabling it is the merchant
 * saying they fixed what failed, so the failures before do not count against it.
 */
export async function failingSinceOf(
  db: Db,
  endpoint: Pick<LiveEndpoint, 'id' | 'enabled_at'>,
): Promise<number | null> {
  const attempts = db
    .selectFrom('webhook_attempts as a')
    .innerJoin('webhook_deliveries as d', 'd.id', 'a.delivery_id')
    .where('d.endpoint_id', '=', endpoint.id);
  const success = await attempts
    .select(({ fn }) => fn.max('a.started_at').as('at'))
    .where('a.status_code', '>=', 200)
    .where('a.status_code', '<', 300)
    .executeTakeFirst();
  const lastSuccess = success?.at == null ? 0 : Number(success.at);
  const runAfter = Math.max(lastSuccess, Number(endpoint.enabled_at ?? 0));
  const failure = await attempts
    .select(({ fn }) => fn.min('a.started_at').as('at'))
    .where('a.started_at', '>', runAfter)
    .executeTakeFirst();
  return failure?.at == null ? null : Number(failure.at);
}

export async function forgetEndpointSecret(db: Db, id: string): Promise<void> {
  await db.updateTable('webhook_endpoints').set({ secret: '' }).where('id', '=', id).execute();
}

// Every event runs this, inside its transaction: prepared once rather than rebuilt per event.
const endpointFiltersQuery = prepared<{ userId: string; mode: Mode }, { id: string; events: string | null }>(
  (db, arg) =>
    db
      .selectFrom('webhook_endpoints')
      .select(['id', 'events'])
      .where('user_id', '=', arg('userId'))
      .where('mode', '=', arg('mode'))
      .where('deleted_at', 'is', null)
      .where('disabled_at', 'is', null),
);

/** The merchant's endpoints in a mode, with the event types each takes. */
export async function endpointFiltersOf(db: Db, owner: Owner): Promise<Array<{ id: string; events: string | null }>> {
  return endpointFiltersQuery.all(db, { userId: owner.userId, mode: owner.mode });
}
