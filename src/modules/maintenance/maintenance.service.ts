import { pruneExpiredIdempotencyKeys } from '../../http/idempotency.ts';
import { bringQueuedJobForward, enqueue, pruneGivenUpJobs } from '../../jobs/queue.ts';
import type { JobHandler } from '../../jobs/worker.ts';
import { pruneRateBuckets } from '../../store/rate-buckets.ts';
import { DAY_MS } from '../../shared/time.ts';
import type { Deps } from '../context.ts';
import { pruneOldDeliveries } from '../webhooks/webhooks.service.ts';

// Housekeeping of the tables every module writes through the lower layers, so that what the hot
// paths read does not grow without end (docs/configuration.md, "Retention"): stored idempotent
// replies once their key has expired (24 hours), jobs given up on after 30 days, webhook
// deliveries with their attempts 30 days after they were made (what they came to stays on their
// event), and API keys' shared rate buckets an hour after their last use (refilled long since).
// One job, due
// every hour and at every start; each run deletes in batches, and stops after a bounded number so a
// large backlog is worked off over a few runs rather than in one long one.

export const PRUNE_JOB = 'maintenance.prune';

declare module '../../jobs/queue.ts' {
  interface JobPayloads {
    'maintenance.prune': Record<string, never>;
  }
}

const PRUNE_EVERY_MS = 60 * 60_000;
/** How long a job given up on is kept for an operator to look at. */
export const GIVEN_UP_JOBS_KEPT_MS = 30 * DAY_MS;
/** A rate bucket unused this long is full again, as a bucket with no row is. */
const RATE_BUCKETS_KEPT_MS = 60 * 60_000;
const BATCH = 1000;
const BATCHES_A_RUN = 50;

/** Deletes what has outlived its retention, in batches; answers how many rows of each went. */
export async function pruneOnce(
  deps: Deps,
): Promise<{ idempotency_keys: number; jobs: number; rate_buckets: number; webhook_deliveries: number }> {
  const now = deps.clock.now();
  // One row per API key used within the hour: few enough for one statement.
  const pruned = {
    idempotency_keys: 0,
    jobs: 0,
    rate_buckets: await pruneRateBuckets(deps.db, now - RATE_BUCKETS_KEPT_MS),
    webhook_deliveries: 0,
  };
  for (let batch = 0; batch < BATCHES_A_RUN; batch += 1) {
    const keys = await pruneExpiredIdempotencyKeys(deps.db, now, BATCH);
    const jobs = await pruneGivenUpJobs(deps.db, now - GIVEN_UP_JOBS_KEPT_MS, BATCH);
    const deliveries = await pruneOldDeliveries(deps.db, now, BATCH);
    pruned.idempotency_keys += keys;
    pruned.jobs += jobs;
    pruned.webhook_deliveries += deliveries;
    if (keys < BATCH && jobs < BATCH && deliveries < BATCH) break;
  }
  return pruned;
}

/** Job: the hourly prune (the same job, so there is always one). */
export function pruneJob(deps: Deps): JobHandler {
  return async (_payload, { log }) => {
    try {
      const pruned = await pruneOnce(deps);
      if (pruned.idempotency_keys + pruned.jobs + pruned.rate_buckets + pruned.webhook_deliveries > 0)
        log.info(pruned, 'pruned what outlived its retention');
    } catch (error) {
      // A prune that failed is simply run again at the next hour; the job must not give up.
      log.error({ err: error }, 'could not prune');
    }
    return { retryAt: deps.clock.now() + PRUNE_EVERY_MS };
  };
}

/** At start: makes sure the prune job exists, and makes it due now. */
export async function schedulePrune(deps: Deps): Promise<void> {
  const now = deps.clock.now();
  await deps.store.transaction(async (trx) => {
    await enqueue(trx, { kind: PRUNE_JOB, runAt: now, payload: {}, dedupeKey: PRUNE_JOB }, now);
    await bringQueuedJobForward(trx, PRUNE_JOB, now);
  });
}
