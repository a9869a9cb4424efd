import { enqueue } from '../../jobs/queue.ts';
import type { JobHandler } from '../../jobs/worker.ts';
import { iso } from '../../shared/time.ts';
import { queueMail } from '../mail/mail.service.ts';
import { merchantContact } from '../merchants/merchants.service.ts';
import { emitEvent } from '../events/events.service.ts';
import type { Deps } from '../context.ts';
import { allLiveEndpoints, failingSinceOf, lockEndpointIfThere, updateEndpoint } from './webhooks.repo.ts';

// Tells a merchant by email when every delivery to one of their webhook endpoints has failed for
// 24 hours, and after 3 days disables the endpoint, with an event and a mail (docs/webhooks.md):
// once per failing streak, checked every hour by a job that reschedules itself.

export const WEBHOOK_HEALTH_JOB = 'webhooks.health';

declare module '../../jobs/queue.ts' {
  interface JobPayloads {
    'webhooks.health': Record<string, never>;
  }
}
const DAY_MS = 24 * 60 * 60_000;
export const DISABLE_AFTER_MS = 3 * DAY_MS;
const CHECK_EVERY_MS = 60 * 60_000;

export type FailingEndpoint = { id: string; userId: string; mode: 'live' | 'test'; url: string; failingSince: number };

/** Endpoints whose attempts have all failed since a time at least 24 hours ago. */
export async function failingEndpoints(deps: Deps, now: number): Promise<FailingEndpoint[]> {
  const failing: FailingEndpoint[] = [];
  for (const endpoint of await allLiveEndpoints(deps.db)) {
    const since = await failingSinceOf(deps.db, endpoint);
    if (since !== null && since <= now - DAY_MS)
      failing.push({
        id: endpoint.id,
        userId: endpoint.user_id,
        mode: endpoint.mode,
        url: endpoint.url,
        failingSince: since,
      });
  }
  return failing;
}

/** Queues the merchant's notice for each endpoint failing for 24 hours, once per streak. */
export async function noticeFailingEndpoints(deps: Deps, now: number): Promise<number> {
  let queued = 0;
  for (const endpoint of await failingEndpoints(deps, now)) {
    const merchant = await merchantContact(deps.db, endpoint.userId);
    const id = await deps.store.transaction((trx) =>
      queueMail(
        trx,
        {
          to: merchant.email,
          template: 'webhook_failing',
          data: {
            url: endpoint.url,
            endpoint_id: endpoint.id,
            since: iso(endpoint.failingSince),
            test: endpoint.mode === 'test',
          },
          related: { type: 'webhook', id: endpoint.id },
          owner: { userId: endpoint.userId, mode: endpoint.mode },
          dedupeKey: `webhook_failing:${endpoint.id}:${endpoint.failingSince}`,
        },
        now,
      ),
    );
    if (id) queued++;
  }
  return queued;
}

/**
 * Disables each endpoint whose deliveries have all failed for 3 days: no new deliveries (those
 * under way run out their retries, so `recover` can replay them), a webhook_endpoint.disabled event
 * to the merchant's other endpoints, and a mail. Returns how many it disabled.
 */
export async function disableLongFailingEndpoints(deps: Deps, now: number): Promise<number> {
  let disabled = 0;
  for (const endpoint of await failingEndpoints(deps, now)) {
    if (endpoint.failingSince > now - DISABLE_AFTER_MS) continue;
    const merchant = await merchantContact(deps.db, endpoint.userId);
    const owner = { userId: endpoint.userId, mode: endpoint.mode };
    const done = await deps.store.transaction(async (trx) => {
      // Held and read again: disabled, enabled again or deleted by its merchant since the list was
      // read, it starts over (a fresh streak) or is gone, and is not disabled on the old streak.
      const locked = await lockEndpointIfThere(trx, null, endpoint.id);
      if (!locked || locked.disabled_at !== null) return false;
      if ((await failingSinceOf(trx, locked)) !== endpoint.failingSince) return false;
      // disabled before the event, so the event is not queued to the endpoint that cannot take it
      await updateEndpoint(trx, endpoint.id, { disabled_at: now });
      await emitEvent(
        trx,
        owner,
        'webhook_endpoint.disabled',
        endpoint.id,
        { id: endpoint.id, url: endpoint.url, disabled_at: iso(now), failing_since: iso(endpoint.failingSince) },
        now,
      );
      await queueMail(
        trx,
        {
          to: merchant.email,
          template: 'webhook_disabled',
          data: {
            url: endpoint.url,
            endpoint_id: endpoint.id,
            since: iso(endpoint.failingSince),
            test: endpoint.mode === 'test',
          },
          related: { type: 'webhook', id: endpoint.id },
          owner,
          dedupeKey: `webhook_disabled:${endpoint.id}:${endpoint.failingSince}`,
        },
        now,
      );
      return true;
    });
    if (done) disabled++;
  }
  return disabled;
}

/** The hourly check: runs, then asks to run again in an hour (the same job, so there is always one). */
export function webhookHealthJob(deps: Deps): JobHandler {
  return async () => {
    const now = deps.clock.now();
    await disableLongFailingEndpoints(deps, now);
    await noticeFailingEndpoints(deps, now);
    return { retryAt: now + CHECK_EVERY_MS };
  };
}

/** Makes sure the hourly check exists (at start; a no-op when it does). */
export async function scheduleWebhookHealth(deps: Deps): Promise<void> {
  const now = deps.clock.now();
  await deps.store.transaction((trx) =>
    enqueue(
      trx,
      { kind: WEBHOOK_HEALTH_JOB, runAt: now + CHECK_EVERY_MS, payload: {}, dedupeKey: WEBHOOK_HEALTH_JOB },
      now,
    ),
  );
}
