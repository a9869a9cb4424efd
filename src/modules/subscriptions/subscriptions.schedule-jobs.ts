import type { Kysely } from 'kysely';
import { cancelQueuedJob, enqueue, realTimeOf } from '../../jobs/queue.ts';
import { clockIdOf } from '../merchants/merchants.clock.ts';
import { testClockOffsetOf } from '../merchants/merchants.service.ts';
import type { Database } from '../../store/tables.ts';
import type { Deps } from '../context.ts';

// The one job that drives a subscription: "charge whatever is due", at most one per subscription
// (dedupe key), on the merchant's test clock in test mode and on real time in live mode.

export const CHARGE_SUBSCRIPTION_JOB = 'subscription.charge';

declare module '../../jobs/queue.ts' {
  interface JobPayloads {
    'subscription.charge': { subscription_id: string };
  }
}

const dedupeKeyOf = (subscriptionId: string) => `${CHARGE_SUBSCRIPTION_JOB}:${subscriptionId}`;

type Owned = { id: string; user_id: string; mode: string };

/**
 * Schedules the subscription's charge job at `at` on its clock, in the caller's transaction. The
 * job row keeps real time: clock time minus the clock's stored offset.
 */
export async function scheduleCharge(
  trx: Kysely<Database>,
  deps: Pick<Deps, 'clock'>,
  sub: Owned,
  at: number,
): Promise<void> {
  const offset = sub.mode === 'test' ? await testClockOffsetOf(trx, sub.user_id) : 0;
  await queueCharge(trx, deps, sub, realTimeOf(at, offset));
}

/** Queues the subscription's charge job due now, unless it has one queued already (the dedupe key keeps that one). */
export async function queueChargeUnlessQueued(trx: Kysely<Database>, deps: Deps, sub: Owned): Promise<void> {
  await queueCharge(trx, deps, sub, deps.clock.now());
}

/** The subscription's one charge job, due at a real time. */
async function queueCharge(
  trx: Kysely<Database>,
  deps: Pick<Deps, 'clock'>,
  sub: Owned,
  realRunAt: number,
): Promise<void> {
  await enqueue(
    trx,
    {
      kind: CHARGE_SUBSCRIPTION_JOB,
      runAt: realRunAt,
      clockId: clockIdOf(sub),
      payload: { subscription_id: sub.id },
      dedupeKey: dedupeKeyOf(sub.id),
    },
    deps.clock.now(),
  );
}

/**
 * Drops the subscription's pending charge job (pause, cancel, when no charge is at the bank: the job
 * of one in flight is kept to follow it). A running one finds the new status.
 */
export async function unscheduleCharge(trx: Kysely<Database>, subscriptionId: string): Promise<void> {
  await cancelQueuedJob(trx, dedupeKeyOf(subscriptionId));
}
