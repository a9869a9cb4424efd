import type { Kysely } from 'kysely';
import { cancelQueuedJob, enqueue, realTimeOf } from '../../jobs/queue.ts';
import { testClockOffsetOf as clockOffset } from '../merchants/merchants.service.ts';
import { shiftedClock, type Clock } from '../../shared/time.ts';
import type { Database } from '../../store/tables.ts';
import type { Deps } from '../context.ts';

// The one job that drives a subscription: "charge whatever is due", at most one per subscription
// (dedupe key), on the merchant's test clock in test mode and on real time in live mode.

export const CHARGE_SUBSCRIPTION_JOB = 'subscription.charge';

const dedupeKeyOf = (subscriptionId: string) => `${CHARGE_SUBSCRIPTION_JOB}:${subscriptionId}`;

type Owned = { id: string; user_id: string; mode: string };

/** The clock a subscription lives on: real time live, its merchant's test clock in test mode. */
export async function clockOfSubscription(deps: Deps, db: Kysely<Database>, sub: Omit<Owned, 'id'>): Promise<Clock> {
  return sub.mode === 'test' ? shiftedClock(deps.clock, await clockOffset(db, sub.user_id)) : deps.clock;
}

/**
 * Schedules the subscription's charge job at `at` on its clock, in the caller's transaction. The
 * job row keeps real time: clock time minus the clock's stored offset.
 */
export async function scheduleCharge(trx: Kysely<Database>, deps: Deps, sub: Owned, at: number): Promise<void> {
  const realNow = deps.clock.now();
  const offset = sub.mode === 'test' ? await clockOffset(trx, sub.user_id) : 0;
  await enqueue(
    trx,
    {
      kind: CHARGE_SUBSCRIPTION_JOB,
      runAt: realTimeOf(at, offset),
      clockId: sub.mode === 'test' ? sub.user_id : null,
      payload: { subscription_id: sub.id },
      dedupeKey: dedupeKeyOf(sub.id),
    },
    realNow,
  );
}

/** Drops the subscription's pending charge job (pause, cancel). A running one finds the new status. */
export async function unscheduleCharge(trx: Kysely<Database>, subscriptionId: string): Promise<void> {
  await cancelQueuedJob(trx, dedupeKeyOf(subscriptionId));
}
