import { randomBytes } from 'node:crypto';
import { recordAudit, recordAuditFor, type AuditBy } from '../audit/audit.service.ts';
import type { Kysely } from 'kysely';
import { idempotent, replayIfAnswered } from '../../http/idempotency.ts';
import { DAY_MS, iso } from '../../shared/time.ts';
import { parseDateTime } from '../../shared/date-time.ts';
import { AppError, invalidParam } from '../../shared/errors.ts';
import { openStored } from '../../shared/secret-box.ts';
import { newId } from '../../shared/ids.ts';
import { pageOf } from '../../shared/pagination.ts';
import type { Database } from '../../store/tables.ts';
import { transact } from '../../store/store.ts';
import {
  deleteDeliveries,
  oldDeliveries,
  attemptCountsOfEndpoints,
  attemptsOfDeliveries,
  deliveriesOfEvent,
  deliveriesOfEvents,
  lastAttemptedDeliveries,
  endpointHadSecret,
  cancelPendingDeliveries,
  markSuperseded,
  queueDelivery,
  withholdSecretsFrom,
  recentDeliveriesOfEndpoint,
  unrecoveredFailures,
  unrecoveredFailuresOf,
} from './deliveries.repo.ts';
import { decodeKeyring, encodeKeyring, rotated } from './signing.ts';
import { validateWebhookUrl } from './url-policy.ts';
import { endpointTakes, eventFilterProblem } from './event-filter.ts';
import { presentDelivery, presentWebhook } from './webhooks.present.ts';
import {
  forgetEndpointSecret,
  getEndpoint,
  insertEndpoint,
  listEndpoints,
  lockEndpoint,
  lockLiveEndpointsOf,
  softDeleteEndpoint,
  updateEndpoint,
  type EndpointChanges,
  type EndpointRow,
  type Owner,
} from './webhooks.repo.ts';
import type {
  CreateWebhookBody,
  DeliveryObject,
  ListWebhooksQuery,
  PrunedDeliveries,
  UpdateWebhookBody,
} from './webhooks.schemas.ts';
import type { Ctx } from '../context.ts';
import {
  deliverySummariesOf,
  getEvent,
  keepDeliverySummary,
  presentEvent,
  sealStoredEventSecrets,
  type EventScope,
} from '../events/events.service.ts';
import { parseDeliverySummary, withPruned, type DeliverySummary } from './delivery-summary.ts';
import type { SecretBox } from '../../shared/secret-box.ts';
import { letDeliveriesCarrySecret } from './deliveries.repo.ts';

import { sealEndpointSecrets } from './webhooks.repo.ts';

type Db = Kysely<Database>;
const owner = (ctx: Ctx): Owner => ({ userId: ctx.merchant.id, mode: ctx.mode });
/** Creates an endpoint; with an Idempotency-Key a retried call returns the same endpoint (and secret). */
export async function createWebhook(ctx: Ctx, body: CreateWebhookBody, idempotencyKey?: string) {
  // Before the URL's DNS check: a retry answers with the endpoint it made, whatever DNS says now.
  const answered = await replayIfAnswered<{ webhook: ReturnType<typeof presentWebhook> }>(
    ctx,
    idempotencyKey,
    'POST /v1/webhooks',
    body,
  );
  if (answered) return answered;
  if (body.events) {
    const problem = eventFilterProblem(body.events);
    if (problem) throw invalidParam('events', problem);
  }
  const url = await validateWebhookUrl(body.url, ctx.mode, { reach: ctx.deps.config.targetReach[ctx.mode] });
  const secret = randomBytes(32).toString('base64');
  const row: EndpointRow = {
    id: newId('webhook'),
    user_id: ctx.merchant.id,
    mode: ctx.mode,
    url,
    // Stored sealed; shown in clear this once.
    secret: ctx.deps.secrets.seal(secret),
    events: body.events ? JSON.stringify(body.events) : null,
    created_at: ctx.clock.now(),
    deleted_at: null,
    disabled_at: null,
    enabled_at: null,
    description: descriptionOf(body.description),
  };
  return idempotent(ctx, idempotencyKey, 'POST /v1/webhooks', body, 201, async (trx) => {
    await insertEndpoint(trx, row);
    await recordAuditFor(trx, ctx, 'webhook_endpoint.create', row.id, {
      url,
      events: body.events ?? null,
      description: row.description,
    });
    return { webhook: presentWebhook({ ...row, secret }, { withSecret: true }) };
  });
}

/** A description as stored: trimmed, and null when nothing is left (the schema has checked its length). */
function descriptionOf(given: string | null | undefined): string | null {
  const trimmed = given?.trim() ?? '';
  return trimmed === '' ? null : trimmed;
}

export async function retrieveWebhook(ctx: Ctx, id: string) {
  return { webhook: presentWebhook(await getEndpoint(ctx.db, owner(ctx), id)) };
}

export async function listWebhooksFor(ctx: Ctx, query: ListWebhooksQuery) {
  const limit = query.limit ?? 100;
  const { items, hasMore } = pageOf(await listEndpoints(ctx.db, owner(ctx), { ...query, limit }), limit);
  return { webhooks: items.map((row) => presentWebhook(row)), has_more: hasMore };
}

/**
 * Changes an endpoint's url, event filter, description or disabled flag. Disabling cancels the
 * deliveries still waiting to be sent, and no new ones are queued until it is enabled again.
 * A new url is not sent the secrets of events that happened before it (docs/security.md).
 */
export async function updateWebhook(ctx: Ctx, id: string, body: UpdateWebhookBody) {
  if (Object.values(body).every((value) => value === undefined)) {
    throw new AppError('bad_request.empty_update', 'Give at least one of url, events, description and disabled', {});
  }
  if (body.events) {
    const problem = eventFilterProblem(body.events);
    if (problem) throw invalidParam('events', problem);
  }
  const url =
    body.url === undefined
      ? undefined
      : await validateWebhookUrl(body.url, ctx.mode, { reach: ctx.deps.config.targetReach[ctx.mode] });
  return transact(ctx.db, async (trx) => {
    const row = await lockEndpoint(trx, owner(ctx), id);
    const changes: EndpointChanges = {};
    if (url !== undefined) changes.url = url;
    if (body.events !== undefined) changes.events = body.events === null ? null : JSON.stringify(body.events);
    if (body.description !== undefined) changes.description = descriptionOf(body.description);
    if (body.disabled !== undefined) Object.assign(changes, disabledChanges(row, body.disabled, ctx.deps.clock.now()));
    await updateEndpoint(trx, id, changes);
    if (changes.disabled_at) await cancelPendingDeliveries(trx, id);
    if (changes.url !== undefined && changes.url !== row.url) await withholdSecretsFrom(trx, id);
    await recordAuditFor(trx, ctx, 'webhook_endpoint.update', id, changeSummary(row, changes));
    return { webhook: presentWebhook({ ...row, ...changes }) };
  });
}

/**
 * Disabling or enabling, when it changes anything. Enabling starts a fresh failing streak: the
 * failures that got the endpoint disabled do not count towards disabling it again.
 */
function disabledChanges(row: EndpointRow, disabled: boolean, now: number): EndpointChanges {
  if (disabled === (row.disabled_at !== null)) return {};
  return disabled ? { disabled_at: now } : { disabled_at: null, enabled_at: now };
}

/** What an update changed, field by field, as the audit trail records it. */
function changeSummary(row: EndpointRow, changes: EndpointChanges): Record<string, unknown> {
  const summary: Record<string, unknown> = {};
  for (const [field, to] of Object.entries(changes)) {
    const from = row[field as keyof EndpointRow];
    if (from !== to) summary[field] = { from, to };
  }
  return summary;
}

/**
 * Gives an endpoint a new secret, shown in this reply only. The secret it replaces keeps signing
 * beside the new one for 24 hours (a second signature in each header), so receivers can switch at
 * their pace; a secret older than that is dropped. With an Idempotency-Key a retried call returns
 * the same new secret instead of rotating again.
 */
export async function rotateWebhookSecret(ctx: Ctx, id: string, idempotencyKey?: string) {
  const fresh = randomBytes(32).toString('base64');
  return idempotent(ctx, idempotencyKey, `POST /v1/webhooks/${id}/rotate-secret`, {}, 200, async (trx) => {
    // Held: two rotations at once each keep the other's secret in the keyring, not overwrite it.
    const row = await lockEndpoint(trx, owner(ctx), id);
    const keyring = rotated(decodeKeyring(openStored(ctx.deps.secrets, row.secret)), fresh, ctx.deps.clock.now());
    await updateEndpoint(trx, id, { secret: ctx.deps.secrets.seal(encodeKeyring(keyring)) });
    // The new secret itself is never recorded, masked or not.
    await recordAuditFor(trx, ctx, 'webhook_endpoint.rotate_secret', id, {
      previous_secret_until: iso(keyring.previous!.until),
    });
    return {
      webhook: presentWebhook(
        { ...row, secret: fresh },
        { withSecret: true, previousSecretUntil: keyring.previous!.until },
      ),
    };
  });
}

function refuseDisabled(endpoint: EndpointRow): void {
  if (endpoint.disabled_at !== null) {
    throw new AppError(
      'conflict.webhook_disabled',
      `Webhook endpoint ${endpoint.id} is disabled: enable it first (PATCH /v1/webhooks/${endpoint.id} {"disabled": false})`,
      { id: endpoint.id },
    );
  }
}

/** Removes an endpoint: nothing more is sent to it and its secret is forgotten. */
export async function deleteWebhook(ctx: Ctx, id: string) {
  return transact(ctx.db, async (trx) => {
    const row = await getEndpoint(trx, owner(ctx), id);
    await softDeleteEndpoint(trx, id, ctx.clock.now());
    await forgetEndpointSecret(trx, id);
    await recordAuditFor(trx, ctx, 'webhook_endpoint.delete', id, { url: row.url });
    return { webhook: presentWebhook(row), deleted: true };
  });
}

/**
 * Re-sends every delivery to an endpoint that failed at or after `since` and was not re-sent yet,
 * each as a new delivery with a fresh 20 attempts / 10 minutes: for outages longer than the window.
 * `scope` null is the operator (CLI), who may name any merchant's endpoint.
 */
export async function recoverDeliveries(
  db: Db,
  scope: Owner | null,
  webhookId: string,
  since: number,
  realNow: number,
  by: AuditBy,
): Promise<{ deliveries: DeliveryObject[] }> {
  return transact(db, async (trx) => {
    const endpoint = await lockEndpoint(trx, scope, webhookId);
    refuseDisabled(endpoint);
    const failed = await unrecoveredFailures(trx, endpoint.id, since);
    const deliveries: DeliveryObject[] = [];
    for (const old of failed) {
      const fresh = await queueDelivery(
        trx,
        {
          eventId: old.event_id,
          endpointId: endpoint.id,
          userId: endpoint.user_id,
          mode: endpoint.mode,
          withSecret: old.with_secret === 1,
        },
        realNow,
      );
      await markSuperseded(trx, old.id, fresh.id);
      deliveries.push(presentDelivery(fresh));
    }
    await recordAudit(trx, {
      userId: endpoint.user_id,
      mode: endpoint.mode,
      ...by,
      action: 'webhook_endpoint.recover',
      objectId: endpoint.id,
      summary: { since: iso(since), deliveries: deliveries.length },
      at: realNow,
    });
    return { deliveries };
  });
}

export async function recoverWebhook(ctx: Ctx, id: string, since: string) {
  const at = parseDateTime(since);
  if (at === null) throw invalidParam('since', 'since must be an ISO 8601 date-time such as 2026-11-21T10:00:00.000Z');
  return recoverDeliveries(ctx.db, owner(ctx), id, at, ctx.deps.clock.now(), ctx);
}

/**
 * Sends an event again as new deliveries: to one endpoint of its merchant and mode (whatever that
 * endpoint's filter), or to every endpoint whose filter takes the event's type.
 */
export async function resendToWebhooks(
  db: Db,
  event: { id: string; type: string; userId: string; mode: Owner['mode'] },
  webhookId: string | undefined,
  realNow: number,
  by: AuditBy,
): Promise<{ deliveries: DeliveryObject[] }> {
  return transact(db, async (trx) => {
    const scope = { userId: event.userId, mode: event.mode };
    const targets = webhookId
      ? [await lockEndpoint(trx, scope, webhookId)]
      : (await lockLiveEndpointsOf(trx, scope)).filter((endpoint) => endpointTakes(endpoint.events, event.type));
    targets.forEach(refuseDisabled);
    const deliveries: DeliveryObject[] = [];
    for (const endpoint of targets) {
      // The event's secret goes only to endpoints that were sent it when the event happened, and
      // whose URL has not changed since.
      const withSecret = await endpointHadSecret(trx, event.id, endpoint.id);
      const row = await queueDelivery(
        trx,
        { eventId: event.id, endpointId: endpoint.id, userId: event.userId, mode: event.mode, withSecret },
        realNow,
      );
      deliveries.push(presentDelivery(row));
    }
    await recordAudit(trx, {
      userId: event.userId,
      mode: event.mode,
      ...by,
      action: 'event.resend',
      objectId: event.id,
      summary: { webhook_id: webhookId ?? null, deliveries: deliveries.length },
      at: realNow,
    });
    return { deliveries };
  });
}

/** Every delivery of an event with its attempts, oldest first. */
export async function deliveriesWithAttempts(db: Db, eventId: string): Promise<DeliveryObject[]> {
  const deliveries = await deliveriesOfEvent(db, eventId);
  const attempts = await attemptsOfDeliveries(
    db,
    deliveries.map((d) => d.id),
  );
  return deliveries.map((delivery) =>
    presentDelivery(
      delivery,
      attempts.filter((a) => a.delivery_id === delivery.id),
    ),
  );
}

/** An endpoint's newest deliveries with every attempt, newest first (the dashboard). */
export async function recentDeliveriesFor(ctx: Ctx, webhookId: string, limit = 25): Promise<DeliveryObject[]> {
  const endpoint = await getEndpoint(ctx.db, owner(ctx), webhookId);
  const deliveries = await recentDeliveriesOfEndpoint(ctx.db, endpoint.id, limit);
  const attempts = await attemptsOfDeliveries(
    ctx.db,
    deliveries.map((d) => d.id),
  );
  return deliveries.map((delivery) =>
    presentDelivery(
      delivery,
      attempts.filter((a) => a.delivery_id === delivery.id),
    ),
  );
}

export const ACTIVITY_DAYS = 7;

export type EndpointActivity = {
  /** The endpoint's newest delivery that was attempted: when its last attempt was, and how it stands. */
  lastDelivery: { at: string; status: DeliveryObject['status']; attempts: number } | null;
  /** Attempts made for the deliveries of the last ACTIVITY_DAYS days, and how many of those failed. */
  attempts: number;
  failedAttempts: number;
};

/**
 * How each of the caller's endpoints has been doing (the dashboard's endpoint list and page), in two
 * statements whatever the number of endpoints. A delivery ends at its first acknowledged attempt, so
 * its failed attempts are all of them but that one. Deliveries run on real time, so the window does
 * too, not the test clock.
 */
export async function endpointActivityFor(ctx: Ctx, webhookIds: string[]): Promise<Map<string, EndpointActivity>> {
  const since = ctx.deps.clock.now() - ACTIVITY_DAYS * DAY_MS;
  const [counts, lasts] = await Promise.all([
    attemptCountsOfEndpoints(ctx.db, owner(ctx), webhookIds, since),
    lastAttemptedDeliveries(ctx.db, owner(ctx), webhookIds),
  ]);
  const activity = new Map<string, EndpointActivity>(
    webhookIds.map((id) => [id, { lastDelivery: null, attempts: 0, failedAttempts: 0 }]),
  );
  for (const count of counts) {
    const entry = activity.get(count.endpoint_id);
    if (entry) Object.assign(entry, { attempts: count.attempts, failedAttempts: count.attempts - count.succeeded });
  }
  for (const last of lasts) {
    const entry = activity.get(last.endpoint_id);
    if (entry && last.last_attempt_at !== null)
      entry.lastDelivery = {
        at: iso(Number(last.last_attempt_at)),
        status: last.status,
        attempts: Number(last.attempts),
      };
  }
  return activity;
}

/**
 * Where an event stands with the endpoints it went to, from the newest delivery to each (kept, or
 * pruned and summarised on the event): `failed` when one ran out of attempts, `retrying` while one
 * is between attempts, `sending` while one has not been tried yet, `delivered` when each that was
 * not cancelled arrived, `cancelled` when every one was (its endpoint disabled or deleted first),
 * `no_endpoint` when no endpoint took it.
 */
export type EventDeliveryState = {
  state: 'delivered' | 'retrying' | 'sending' | 'failed' | 'cancelled' | 'no_endpoint';
  /** Attempts over every delivery of the event, resends and pruned ones included. */
  attempts: number;
  /** How many endpoints it was sent to. */
  endpoints: number;
  /** Endpoints whose newest delivery, still kept, failed and that can take it again (neither deleted nor disabled). */
  failedWebhookIds: string[];
  /** Whether records of some of its deliveries were pruned (their outcome is from the event's summary). */
  pruned: boolean;
};

const STATE_ORDER: EventDeliveryState['state'][] = ['failed', 'retrying', 'sending', 'delivered', 'cancelled'];

/** The delivery state of each of a page of the caller's events, in two statements (the dashboard's events list). */
export async function deliveryStatesOf(ctx: Ctx, eventIds: string[]): Promise<Map<string, EventDeliveryState>> {
  const [rows, summaries] = await Promise.all([
    deliveriesOfEvents(ctx.db, owner(ctx), eventIds),
    deliverySummariesOf(ctx.db, eventIds),
  ]);
  const states = new Map<string, EventDeliveryState>();
  for (const eventId of eventIds) {
    const own = rows.filter((row) => row.event_id === eventId);
    const pruned = Object.entries(parseDeliverySummary(summaries.get(eventId))?.webhooks ?? {}).map(
      ([endpointId, summary]) => ({
        endpoint_id: endpointId,
        status: summary.status,
        attempts: summary.attempts,
        endpoint_gone: false,
        kept: false,
      }),
    );
    // Pruned deliveries are older than any kept, and kept rows come oldest first: the last one for
    // an endpoint is its newest delivery.
    const newest = new Map(
      [...pruned, ...own.map((row) => ({ ...row, kept: true }))].map((row) => [row.endpoint_id, row]),
    );
    const stateOf = (row: { status: string; attempts: number }): EventDeliveryState['state'] =>
      row.status === 'succeeded'
        ? 'delivered'
        : row.status === 'pending'
          ? Number(row.attempts) > 0
            ? 'retrying'
            : 'sending'
          : (row.status as EventDeliveryState['state']);
    const found = new Set([...newest.values()].map(stateOf));
    states.set(eventId, {
      state: STATE_ORDER.find((state) => found.has(state)) ?? 'no_endpoint',
      attempts: [...pruned, ...own].reduce((sum, row) => sum + Number(row.attempts), 0),
      endpoints: newest.size,
      failedWebhookIds: [...newest.values()]
        .filter((row) => row.kept && row.status === 'failed' && !row.endpoint_gone)
        .map((row) => row.endpoint_id),
      pruned: pruned.length > 0,
    });
  }
  return states;
}

/** Failed deliveries since a time that were not recovered, with the endpoint's URL and description (the dashboard's home). */
export async function failuresNeedingAttention(
  ctx: Ctx,
  since: number,
): Promise<Array<DeliveryObject & { url: string; description: string | null }>> {
  const rows = await unrecoveredFailuresOf(ctx.db, owner(ctx), since);
  return rows.map((row) => ({ ...presentDelivery(row), url: row.url, description: row.description }));
}

/**
 * An event of the caller with every delivery of it still kept and their attempts, and what the
 * pruned ones came to (`GET /v1/events/{id}`).
 */
export async function retrieveEvent(ctx: Ctx, id: string) {
  const row = await getEvent(ctx.db, owner(ctx), id);
  return {
    event: presentEvent(row),
    deliveries: await deliveriesWithAttempts(ctx.db, row.id),
    pruned_deliveries: presentPruned(parseDeliverySummary(row.delivery_summary)),
  };
}

/** How long a delivery's record, with its attempts, is kept once it is no longer pending. */
export const DELIVERIES_KEPT_DAYS = 30;

/**
 * Deletes up to `limit` of the oldest deliveries made more than DELIVERIES_KEPT_DAYS before `now`
 * that are no longer pending, with their attempts, keeping on each of their events what they came
 * to; answers how many went. In one transaction, so an event never shows a delivery both kept and
 * summarised.
 */
export async function pruneOldDeliveries(db: Db, now: number, limit: number): Promise<number> {
  return transact(db, async (trx) => {
    const old = await oldDeliveries(trx, now - DELIVERIES_KEPT_DAYS * DAY_MS, limit);
    if (old.length === 0) return 0;
    const byEvent = Map.groupBy(old, (delivery) => delivery.event_id);
    const earlier = await deliverySummariesOf(trx, [...byEvent.keys()]);
    for (const [eventId, deliveries] of byEvent)
      await keepDeliverySummary(
        trx,
        eventId,
        JSON.stringify(withPruned(parseDeliverySummary(earlier.get(eventId)), deliveries, now)),
      );
    return deleteDeliveries(
      trx,
      old.map((delivery) => delivery.id),
    );
  });
}

function presentPruned(summary: DeliverySummary | null): PrunedDeliveries | null {
  if (!summary) return null;
  return {
    pruned_at: iso(summary.pruned_at),
    kept_days: DELIVERIES_KEPT_DAYS,
    webhooks: Object.entries(summary.webhooks).map(([webhookId, pruned]) => ({
      webhook_id: webhookId,
      status: pruned.status,
      delivery_count: pruned.deliveries,
      attempt_count: pruned.attempts,
      last_attempt_at: pruned.last_attempt_at === null ? null : iso(pruned.last_attempt_at),
    })),
  };
}

/** Re-sends an event as new deliveries. `scope` null is the operator (CLI): any merchant's event. */
export async function resendEvent(
  db: Db,
  scope: EventScope | null,
  id: string,
  webhookId: string | undefined,
  realNow: number,
  by: AuditBy,
) {
  const row = await getEvent(db, scope, id);
  return resendToWebhooks(
    db,
    { id: row.id, type: row.type, userId: row.user_id, mode: row.mode },
    webhookId,
    realNow,
    by,
  );
}

export async function resendEventFor(ctx: Ctx, id: string, body: { webhook_id?: string }) {
  return resendEvent(ctx.db, owner(ctx), id, body.webhook_id, ctx.deps.clock.now(), ctx);
}

/**
 * Seals what this module stored in clear before secrets were sealed at rest: endpoint secrets, and
 * the secrets of events written then, which their own deliveries go on carrying.
 */
export async function sealWebhookSecrets(trx: Db, secrets: SecretBox): Promise<void> {
  await sealEndpointSecrets(trx, (secret) => secrets.seal(secret));
  await letDeliveriesCarrySecret(trx, await sealStoredEventSecrets(trx, secrets));
}
