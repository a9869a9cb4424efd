import type { Kysely } from 'kysely';
import { newId } from '../shared/ids.ts';
import type { Database } from '../store/tables.ts';
import { insertRow } from '../store/prepared.ts';
import { afterCommit } from '../store/tx.ts';
import type { Clock } from '../shared/time.ts';

export type NewJob = {
  kind: string;
  /** Real epoch milliseconds at which the job becomes due. */
  runAt: number;
  payload: unknown;
  /** The merchant whose test clock this job follows; null for live-mode and real-time work. */
  clockId?: string | null;
  /** At most one job per key exists at a time; enqueueing a duplicate is a no-op. */
  dedupeKey?: string | null;
};

type Waker = () => void;
const wakers = new Set<Waker>();
const wakeWorkers = () => {
  for (const wake of wakers) wake();
};

/** Workers register here so that a committed job due now starts without waiting for a poll. */
export function onJobEnqueued(waker: Waker): () => void {
  wakers.add(waker);
  return () => wakers.delete(waker);
}

/** Inserts a job in the caller's transaction, so the job exists exactly when the change does. */
export async function enqueue(db: Kysely<Database>, job: NewJob, now = Date.now()): Promise<void> {
  await insertRow(db, 'jobs', {
    id: newId('job'),
    kind: job.kind,
    run_at: job.runAt,
    clock_id: job.clockId ?? null,
    payload: JSON.stringify(job.payload ?? {}),
    dedupe_key: job.dedupeKey ?? null,
    locked_by: null,
    locked_until: null,
    last_error: null,
    failed_at: null,
    created_at: now,
  }, job.dedupeKey ? 'dedupe_key' : undefined);
  if (job.runAt <= now + 50) afterCommit(db, wakeWorkers);
}

/**
 * Real time at which a moment on a clock arrives: the clock time less the clock's offset. Computed
 * from the offset, never from two readings of "now", so a test clock advanced exactly to the moment
 * finds the job due.
 */
export function realTimeOf(clockTime: number, clock: number | Pick<Clock, 'offsetMs'>): number {
  return clockTime - (typeof clock === 'number' ? clock : (clock.offsetMs ?? 0));
}
