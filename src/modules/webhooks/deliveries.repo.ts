import { sql, type Kysely, type Selectable } from 'kysely';
import { idPrefixAt, idSeed, newId } from '../../shared/ids.ts';
import { enqueue, jobsPerRowSql, queuingPerRow } from '../../jobs/queue.ts';
import { insertLater, prepared, updateByIdLater } from '../../store/prepared.ts';
import { holdRows, idInSql, inJsonArray, lockForUpdate } from '../../store/db.ts';
import type { IdsQuery } from '../../store/owned-rows.ts';
import type { Database } from '../../store/tables.ts';
import type { WebhookAttemptsTable, WebhookDeliveriesTable, WebhookEndpointsTable } from './webhooks.tables.ts';
import type { Mode } from '../../shared/mode.ts';

export type DeliveryRow = Selectable<WebhookDeliveriesTable>;
export type AttemptRow = Selectable<WebhookAttemptsTable>;
type Db = Kysely<Database>;
type Owner = { userId: string; mode: Mode };

export const WEBHOOK_DELIVERY_JOB = 'webhook.deliver';

declare module '../../jobs/queue.ts' {
  interface JobPayloads {
    'webhook.deliver': DeliveryJobPayload;
  }
}
export type DeliveryJobPayload = { delivery_id: string; endpoint_id: string };

/**
 * A pending delivery and the durable job that sends it, in the caller's transaction. Deliveries
 * run on real time (no test clock): a webhook is a message to the merchant's server, now.
 */
export async function queueDelivery(
  db: Db,
  target: { eventId: string; endpointId: string; userId: string; mode: Mode; withSecret?: boolean },
  realNow: number,
): Promise<DeliveryRow> {
  const row: DeliveryRow = {
    id: newId('delivery'),
    event_id: target.eventId,
    endpoint_id: target.endpointId,
    user_id: target.userId,
    mode: target.mode,
    status: 'pending',
    attempts: 0,
    first_attempt_at: null,
    last_attempt_at: null,
    next_attempt_at: realNow,
    failed_at: null,
    succeeded_at: null,
    superseded_by: null,
    with_secret: target.withSecret ? 1 : 0,
    created_at: realNow,
  };
  await insertLater(db, 'webhook_deliveries', row);
  const payload: DeliveryJobPayload = { delivery_id: row.id, endpoint_id: target.endpointId };
  await enqueue(db, { kind: WEBHOOK_DELIVERY_JOB, runAt: realNow, clockId: null, payload, batched: true }, realNow);
  return row;
}

type EventToFanOut = { id: string; userId: string; mode: Mode; type: string; hasSecret?: boolean };

type FanOutArgs = {
  eventId: string;
  userId: string;
  mode: Mode;
  type: string;
  withSecret: number;
  now: number;
  deliveryHead: string;
  deliverySalt: string;
  jobHead: string;
  jobSalt: string;
  wake?: string;
};

/**
 * PostgreSQL: queueDelivery for every live endpoint of the event's merchant and mode that takes its
 * type, in one statement: the endpoints are read, and their deliveries and jobs written, by the
 * database, so an event's fan-out costs neither a round trip nor a statement a row.
 */
const fanOutQuery = (tell: boolean) =>
  prepared<FanOutArgs>((db, arg) => {
    const statement = sql`with deliveries as (
        insert into webhook_deliveries (id, event_id, endpoint_id, user_id, mode, status, attempts, next_attempt_at, with_secret, created_at)
        select ${idInSql(arg('deliveryHead'), arg('deliverySalt'), sql`w.id`)}, ${arg('eventId')}, w.id, w.user_id, w.mode,
          'pending', 0, ${arg('now')}, ${arg('withSecret')}, ${arg('now')}
        from webhook_endpoints w
        where w.user_id = ${arg('userId')} and w.mode = ${arg('mode')} and w.deleted_at is null and w.disabled_at is null
          and (w.events is null or cast(w.events as jsonb) @> jsonb_build_array(cast(${arg('type')} as text)))
        returning id, endpoint_id
      )
      ${jobsPerRowSql(
        'deliveries',
        {
          kind: WEBHOOK_DELIVERY_JOB,
          batched: true,
          id: idInSql(arg('jobHead'), arg('jobSalt'), sql`deliveries.id`),
          payload: sql<string>`json_build_object('delivery_id', deliveries.id, 'endpoint_id', deliveries.endpoint_id)::text`,
        },
        { runAt: arg('now'), now: arg('now'), wake: tell ? arg('wake') : undefined },
      )}`;
    return { compile: () => statement.compile(db) };
  });
const fanOutSilently = fanOutQuery(false);
const fanOutAndTell = fanOutQuery(true);

/** queueDelivery for each of the event's endpoints that takes it, in one unawaited statement (PostgreSQL). */
export async function queueDeliveriesOfEvent(db: Db, event: EventToFanOut, realNow: number): Promise<void> {
  const wake = queuingPerRow(db, { kind: WEBHOOK_DELIVERY_JOB, batched: true, runAt: realNow }, realNow);
  const deliveryIds = idSeed('delivery', realNow);
  const jobIds = idSeed('job', realNow);
  const args: FanOutArgs = {
    eventId: event.id,
    userId: event.userId,
    mode: event.mode,
    type: event.type,
    withSecret: event.hasSecret ? 1 : 0,
    now: realNow,
    deliveryHead: deliveryIds.head,
    deliverySalt: deliveryIds.salt,
    jobHead: jobIds.head,
    jobSalt: jobIds.salt,
  };
  if (wake === null) await fanOutSilently.later(db, args);
  else await fanOutAndTell.later(db, { ...args, wake });
}

export async function deliveriesOfEvent(db: Db, eventId: string): Promise<DeliveryRow[]> {
  return db.selectFrom('webhook_deliveries').selectAll().where('event_id', '=', eventId).orderBy('id').execute();
}

export async function attemptsOfDeliveries(db: Db, deliveryIds: string[]): Promise<AttemptRow[]> {
  if (deliveryIds.length === 0) return [];
  return db
    .selectFrom('webhook_attempts')
    .selectAll()
    .where('delivery_id', 'in', deliveryIds)
    .orderBy('delivery_id')
    .orderBy('attempt')
    .execute();
}

/** Failed deliveries to an endpoint since a time that no later delivery has re-sent yet. */
export async function unrecoveredFailures(db: Db, endpointId: string, since: number): Promise<DeliveryRow[]> {
  // The status is a literal, so that SQLite can take the index of failed deliveries (migration 0043).
  return db
    .selectFrom('webhook_deliveries')
    .selectAll()
    .where('endpoint_id', '=', endpointId)
    .where('status', '=', sql.lit('failed'))
    .where('failed_at', '>=', since)
    .where('superseded_by', 'is', null)
    .orderBy('id')
    .execute();
}

/**
 * Whether this endpoint was sent the event's secret when the event happened, at the URL it has now
 * (so its resends may carry it too).
 */
export async function endpointHadSecret(db: Db, eventId: string, endpointId: string): Promise<boolean> {
  const row = await db
    .selectFrom('webhook_deliveries')
    .select('id')
    .where('event_id', '=', eventId)
    .where('endpoint_id', '=', endpointId)
    .where('with_secret', '=', 1)
    .limit(1)
    .executeTakeFirst();
  return row !== undefined;
}

/**
 * None of the endpoint's deliveries carries its event's secret any more, those still to be sent
 * included: its URL changed, and the new one was not there when the events happened.
 */
export async function withholdSecretsFrom(db: Db, endpointId: string): Promise<void> {
  await db
    .updateTable('webhook_deliveries')
    .set({ with_secret: 0 })
    .where('endpoint_id', '=', endpointId)
    .where('with_secret', '=', 1)
    .execute();
}

export async function markSuperseded(db: Db, deliveryId: string, by: string): Promise<void> {
  await db.updateTable('webhook_deliveries').set({ superseded_by: by }).where('id', '=', deliveryId).execute();
}

/** Cancels an endpoint's deliveries still waiting to be sent; their jobs then end without sending. */
export async function cancelPendingDeliveries(db: Db, endpointId: string): Promise<number> {
  const result = await db
    .updateTable('webhook_deliveries')
    .set({ status: 'cancelled', next_attempt_at: null })
    .where('endpoint_id', '=', endpointId)
    .where('status', '=', 'pending')
    .executeTakeFirst();
  return Number(result.numUpdatedRows);
}

type DeliveryToSend = { delivery_id: string } & Pick<
  DeliveryRow,
  'status' | 'first_attempt_at' | 'mode' | 'with_secret' | 'event_id'
> &
  Pick<Selectable<WebhookEndpointsTable>, 'url' | 'secret' | 'deleted_at'>;

const deliveriesToSendQuery = prepared<{ ids: string }, DeliveryToSend>((db, arg) =>
  db
    .selectFrom('webhook_deliveries as d')
    .innerJoin('webhook_endpoints as w', 'w.id', 'd.endpoint_id')
    .select([
      'd.id as delivery_id',
      'd.status',
      'd.first_attempt_at',
      'd.mode',
      'd.with_secret',
      'd.event_id',
      'w.url',
      'w.secret',
      'w.deleted_at',
    ])
    .where(inJsonArray(db, 'd.id', arg('ids'))),
);

/** Deliveries with their endpoint's url and sealed secret, for the attempts about to be made. */
export async function deliveriesToSend(db: Db, deliveryIds: string[]) {
  if (deliveryIds.length === 0) return [];
  return deliveriesToSendQuery.all(db, { ids: JSON.stringify(deliveryIds) });
}

/** The attempts, sent with the recording transaction's COMMIT on PostgreSQL (insertLater). */
export async function insertAttempts(db: Db, attempts: AttemptRow[]): Promise<void> {
  for (const attempt of attempts) await insertLater(db, 'webhook_attempts', attempt);
}

export async function endDelivery(
  db: Db,
  deliveryId: string,
  end: { status: 'cancelled' } | { status: 'failed'; at: number },
): Promise<void> {
  await db
    .updateTable('webhook_deliveries')
    .set(
      end.status === 'cancelled'
        ? { status: 'cancelled', next_attempt_at: null }
        : { status: 'failed', next_attempt_at: null, failed_at: end.at },
    )
    .where('id', '=', deliveryId)
    .where('status', '=', 'pending')
    .execute();
}

export async function recordAttemptOn(
  db: Db,
  deliveryId: string,
  changes: Partial<WebhookDeliveriesTable>,
): Promise<void> {
  // Inside the lane's transaction that records a batch: sent with its COMMIT, not a round trip a delivery.
  await updateByIdLater(db, 'webhook_deliveries', deliveryId, changes);
}

/** Deliveries made of these events so far were the events' own, so their retries may carry the secret. */
export async function letDeliveriesCarrySecret(db: Db, eventIds: string[]): Promise<void> {
  for (let i = 0; i < eventIds.length; i += 500) {
    await db
      .updateTable('webhook_deliveries')
      .set({ with_secret: 1 })
      .where('event_id', 'in', eventIds.slice(i, i + 500))
      .execute();
  }
}

/** The newest deliveries to an endpoint, for the dashboard. */
export async function recentDeliveriesOfEndpoint(db: Db, endpointId: string, limit: number): Promise<DeliveryRow[]> {
  return db
    .selectFrom('webhook_deliveries')
    .selectAll()
    .where('endpoint_id', '=', endpointId)
    .orderBy('id', 'desc')
    .limit(limit)
    .execute();
}

/** Failed deliveries of an owner since a time that were not re-sent: what needs the merchant's attention. */
export async function unrecoveredFailuresOf(
  db: Db,
  owner: { userId: string; mode: string },
  since: number,
): Promise<Array<DeliveryRow & { url: string; description: string | null }>> {
  return db
    .selectFrom('webhook_deliveries')
    .innerJoin('webhook_endpoints', 'webhook_endpoints.id', 'webhook_deliveries.endpoint_id')
    .selectAll('webhook_deliveries')
    .select(['webhook_endpoints.url', 'webhook_endpoints.description'])
    .where('webhook_deliveries.user_id', '=', owner.userId)
    .where('webhook_deliveries.mode', '=', owner.mode as 'live' | 'test')
    .where('webhook_deliveries.status', '=', sql.lit('failed'))
    .where('webhook_deliveries.failed_at', '>=', since)
    .where('webhook_deliveries.superseded_by', 'is', null)
    .orderBy('webhook_deliveries.id', 'desc')
    .limit(200)
    .execute();
}

export type EventDeliveryRow = Pick<DeliveryRow, 'id' | 'event_id' | 'endpoint_id' | 'status' | 'attempts'> & {
  endpoint_gone: boolean;
};

/** Every delivery of some events of an owner, oldest first per event, and whether its endpoint was deleted or disabled since. */
export async function deliveriesOfEvents(db: Db, owner: Owner, eventIds: string[]): Promise<EventDeliveryRow[]> {
  if (eventIds.length === 0) return [];
  const rows = await db
    .selectFrom('webhook_deliveries as d')
    .innerJoin('webhook_endpoints as w', 'w.id', 'd.endpoint_id')
    .select(['d.id', 'd.event_id', 'd.endpoint_id', 'd.status', 'd.attempts', 'w.deleted_at', 'w.disabled_at'])
    .where('d.event_id', 'in', eventIds)
    .where('d.user_id', '=', owner.userId)
    .where('d.mode', '=', owner.mode)
    .orderBy('d.event_id')
    .orderBy('d.id')
    .execute();
  return rows.map(({ deleted_at, disabled_at, ...row }) => ({
    ...row,
    endpoint_gone: deleted_at !== null || disabled_at !== null,
  }));
}

/** Per endpoint, over its deliveries made since a time: how many attempts they took, and how many of them succeeded. */
export async function attemptCountsOfEndpoints(
  db: Db,
  owner: Owner,
  endpointIds: string[],
  since: number,
): Promise<Array<{ endpoint_id: string; attempts: number; succeeded: number }>> {
  if (endpointIds.length === 0) return [];
  const rows = await db
    .selectFrom('webhook_deliveries')
    .select(({ fn }) => [
      'endpoint_id',
      fn.sum<number | string>('attempts').as('attempts'),
      fn.count<number | string>('id').filterWhere('status', '=', 'succeeded').as('succeeded'),
    ])
    .where('endpoint_id', 'in', endpointIds)
    .where('created_at', '>=', since)
    .where('user_id', '=', owner.userId)
    .where('mode', '=', owner.mode)
    .groupBy('endpoint_id')
    .execute();
  return rows.map((row) => ({
    endpoint_id: row.endpoint_id,
    attempts: Number(row.attempts ?? 0),
    succeeded: Number(row.succeeded),
  }));
}

/** Each endpoint's newest delivery that was attempted (by when it was made), in one statement. */
export async function lastAttemptedDeliveries(
  db: Db,
  owner: Owner,
  endpointIds: string[],
): Promise<Array<Pick<DeliveryRow, 'endpoint_id' | 'status' | 'attempts' | 'last_attempt_at'>>> {
  if (endpointIds.length === 0) return [];
  return db
    .selectFrom('webhook_deliveries')
    .select(['endpoint_id', 'status', 'attempts', 'last_attempt_at'])
    .where('id', 'in', (eb) =>
      eb
        .selectFrom('webhook_endpoints as w')
        .select((inner) =>
          inner
            .selectFrom('webhook_deliveries as n')
            .select('n.id')
            .whereRef('n.endpoint_id', '=', 'w.id')
            .where('n.last_attempt_at', 'is not', null)
            .orderBy('n.created_at', 'desc')
            .limit(1)
            .$asScalar()
            .as('id'),
        )
        .where('w.id', 'in', endpointIds)
        .where('w.user_id', '=', owner.userId)
        .where('w.mode', '=', owner.mode),
    )
    .execute();
}

export type OldDelivery = Pick<
  DeliveryRow,
  'id' | 'event_id' | 'endpoint_id' | 'status' | 'attempts' | 'last_attempt_at'
>;

const oldDeliveriesQuery = prepared<{ below: string; before: number; limit: number }, OldDelivery>((db, arg) =>
  db
    .selectFrom('webhook_deliveries')
    .select(['id', 'event_id', 'endpoint_id', 'status', 'attempts', 'last_attempt_at'])
    .where('id', '<', arg('below'))
    .where('created_at', '<', arg('before'))
    .where('status', '<>', 'pending')
    .orderBy('id')
    .limit(arg('limit')),
);

/**
 * The oldest deliveries made before `before` that are no longer pending, oldest first. Their ids
 * begin with the time they were made (ULIDs), so they are read from the start of the primary key,
 * up to the first id of `before`'s millisecond, with no index of their own to keep up on every
 * insert; `created_at` is checked too.
 */
export async function oldDeliveries(db: Db, before: number, limit: number): Promise<OldDelivery[]> {
  return oldDeliveriesQuery.all(db, { below: idPrefixAt('delivery', before), before, limit });
}

const deleteAttemptsQuery = prepared<{ ids: string }>((db, arg) =>
  db.deleteFrom('webhook_attempts').where(inJsonArray(db, 'delivery_id', arg('ids'))),
);
const deleteDeliveriesQuery = prepared<{ ids: string }>((db, arg) =>
  db
    .deleteFrom('webhook_deliveries')
    .where(inJsonArray(db, 'id', arg('ids')))
    .where('status', '<>', 'pending'),
);

/** Deletes these deliveries, unless pending, with their attempts; answers how many deliveries went. */
export async function deleteDeliveries(db: Db, ids: string[]): Promise<number> {
  if (ids.length === 0) return 0;
  const json = JSON.stringify(ids);
  await deleteAttemptsQuery.run(db, { ids: json });
  return Number((await deleteDeliveriesQuery.run(db, { ids: json })).numAffectedRows ?? 0);
}

// A merchant's test-mode deliveries, with their attempts, counted, held and deleted with the rest of
// their test data (manifest.ts, TestData). Found by their events (`eventIds`, the merchant's test
// events), whose index they have.

function testDeliveries(db: Db, userId: string, eventIds: IdsQuery) {
  return db
    .selectFrom('webhook_deliveries')
    .where('event_id', 'in', eventIds)
    .where('user_id', '=', userId)
    .where('mode', '=', 'test');
}

export async function countTestDeliveries(db: Db, userId: string, eventIds: IdsQuery): Promise<number> {
  const row = await testDeliveries(db, userId, eventIds)
    .select((eb) => eb.fn.countAll<number | string>().as('n'))
    .executeTakeFirst();
  return Number(row?.n ?? 0);
}

export async function holdTestDeliveries(db: Db, userId: string, eventIds: IdsQuery): Promise<void> {
  await holdRows(db, testDeliveries(db, userId, eventIds).select('id'));
}

export async function deleteTestDeliveries(db: Db, userId: string, eventIds: IdsQuery): Promise<number> {
  await db
    .deleteFrom('webhook_attempts')
    .where('delivery_id', 'in', testDeliveries(db, userId, eventIds).select('id'))
    .execute();
  const result = await db
    .deleteFrom('webhook_deliveries')
    .where('event_id', 'in', eventIds)
    .where('user_id', '=', userId)
    .where('mode', '=', 'test')
    .executeTakeFirst();
  return Number(result.numDeletedRows);
}

/**
 * Which of these deliveries still exist, locked until the transaction ends (PostgreSQL): a
 * merchant's test data deleted while their attempts were under way takes the deliveries with it,
 * and an attempt is recorded only on a delivery that is still there.
 */
export async function deliveriesStillThere(db: Db, deliveryIds: string[]): Promise<Set<string>> {
  if (deliveryIds.length === 0) return new Set();
  const rows = await lockForUpdate(
    db,
    db
      .selectFrom('webhook_deliveries')
      .select('id')
      .where(inJsonArray(db, 'id', JSON.stringify(deliveryIds))),
  ).execute();
  return new Set(rows.map((row) => row.id));
}
