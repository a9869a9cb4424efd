import type { Kysely } from 'kysely';
import { newId } from '../shared/ids.ts';
import type { Database } from '../store/tables.ts';
import { insertLater, prepared } from '../store/prepared.ts';
import { afterCommit } from '../store/store.ts';
import type { Clock } from '../shared/time.ts';

/**
 * Each kind of job's payload, by kind name. Every module adds its kinds from the file that names
 * them (declaration merging, as its tables do), so what enqueue is given and what the kind's
 * handler reads are one type.
 */
// biome-ignore lint/suspicious/noEmptyInterface: filled in by the modules
export interface JobPayloads {}
export type JobKindName = keyof JobPayloads;

export type NewJob<K extends JobKindName = JobKindName> = {
  kind: K;
  /** Real epoch milliseconds at which the job becomes due. */
  runAt: number;
  payload: JobPayloads[K];
  /** The merchant whose test clock this job follows; null for live-mode and real-time work. */
  clockId?: string | null;
  /** At most one job per key exists at a time; enqueueing a duplicate is a no-op. */
  dedupeKey?: string | null;
  /** Claimed by the batched lane of its kind (src/jobs/batch-lane.ts), not by the generic worker. */
  batched?: boolean;
};

type Waker = () => void;
/** The wakers of each lane; null is the generic worker's. */
const wakers = new Map<string | null, Set<Waker>>();
/** One function per lane, so a transaction that queues many jobs of a lane wakes its workers once (afterCommit). */
const wakeFunctions = new Map<string | null, () => void>();

function wakerOfLane(lane: string | null): () => void {
  let wake = wakeFunctions.get(lane);
  if (!wake) {
    wake = () => {
      for (const waker of wakers.get(lane) ?? []) waker();
    };
    wakeFunctions.set(lane, wake);
  }
  return wake;
}

/**
 * Workers register here so that a committed job due now starts without waiting for a poll: the
 * generic worker for jobs of no lane (null), a batched lane for its own kind's.
 */
export function onJobEnqueued(lane: string | null, waker: Waker): () => void {
  let own = wakers.get(lane);
  if (!own) wakers.set(lane, (own = new Set()));
  own.add(waker);
  return () => own.delete(waker);
}

/** Inserts a job in the caller's transaction, so the job exists exactly when the change does. */
export async function enqueue<K extends JobKindName>(
  db: Kysely<Database>,
  job: NewJob<K>,
  now = Date.now(),
): Promise<void> {
  await insertLater(
    db,
    'jobs',
    {
      id: newId('job'),
      kind: job.kind,
      run_at: job.runAt,
      clock_id: job.clockId ?? null,
      payload: JSON.stringify(job.payload ?? {}),
      lane: job.batched ? job.kind : null,
      dedupe_key: job.dedupeKey ?? null,
      locked_by: null,
      locked_until: null,
      last_error: null,
      failed_at: null,
      created_at: now,
    },
    job.dedupeKey ? 'dedupe_key' : undefined,
  );
  if (job.runAt <= now + 50) afterCommit(db, wakerOfLane(job.batched ? job.kind : null));
}

/**
 * Real time at which a moment on a clock arrives: the clock time less the clock's offset. Computed
 * from the offset, never from two readings of "now", so a test clock advanced exactly to the moment
 * finds the job due.
 */
export function realTimeOf(clockTime: number, clock: number | Pick<Clock, 'offsetMs'>): number {
  return clockTime - (typeof clock === 'number' ? clock : (clock.offsetMs ?? 0));
}

const cancelQueuedQuery = prepared<{ dedupeKey: string }>((db, arg) =>
  db.deleteFrom('jobs').where('dedupe_key', '=', arg('dedupeKey')).where('locked_by', 'is', null),
);

/**
 * Removes the queued job with this dedupe key, unless a worker holds it (a running job finds the
 * new state of its object and stops there). In the caller's transaction.
 */
export async function cancelQueuedJob(db: Kysely<Database>, dedupeKey: string): Promise<void> {
  await cancelQueuedQuery.run(db, { dedupeKey });
}

/** Makes the queued job with this dedupe key due by `runAt` at the latest, unless a worker holds it. */
export async function bringQueuedJobForward(db: Kysely<Database>, dedupeKey: string, runAt: number): Promise<void> {
  await db
    .updateTable('jobs')
    .set({ run_at: runAt })
    .where('dedupe_key', '=', dedupeKey)
    .where('locked_by', 'is', null)
    .where('run_at', '>', runAt)
    .execute();
}

/**
 * A test clock moved `deltaMs` ahead: its jobs keep their time on that clock, so their real due
 * time moves earlier by as much. In the caller's transaction, with the clock's own change.
 */
export async function shiftJobsOfClock(db: Kysely<Database>, clockId: string, deltaMs: number): Promise<void> {
  await db
    .updateTable('jobs')
    .set((eb) => ({ run_at: eb('run_at', '-', deltaMs) }))
    .where('clock_id', '=', clockId)
    .execute();
}

/** The real time the clock's next unfinished job is due, or null when it has none. */
export async function nextJobOfClock(db: Kysely<Database>, clockId: string): Promise<number | null> {
  const next = await db
    .selectFrom('jobs')
    .select('run_at')
    .where('clock_id', '=', clockId)
    .where('failed_at', 'is', null)
    .orderBy('run_at')
    .limit(1)
    .executeTakeFirst();
  return next ? Number(next.run_at) : null;
}

/** How many jobs follow this test clock: due later, running, or kept as failed. */
export async function countJobsOfClock(db: Kysely<Database>, clockId: string): Promise<number> {
  const row = await db
    .selectFrom('jobs')
    .select((eb) => eb.fn.countAll<number | string>().as('n'))
    .where('clock_id', '=', clockId)
    .executeTakeFirst();
  return Number(row?.n ?? 0);
}

/**
 * Deletes the jobs of this test clock, with its merchant's test data, in the caller's transaction;
 * how many. A job a worker holds is left to it, as cancelQueuedJob leaves one: it finds its object
 * gone, and ends.
 */
export async function deleteJobsOfClock(db: Kysely<Database>, clockId: string): Promise<number> {
  const result = await db
    .deleteFrom('jobs')
    .where('clock_id', '=', clockId)
    .where('locked_by', 'is', null)
    .executeTakeFirst();
  return Number(result.numDeletedRows);
}

/** For the metrics: jobs due now by kind, and jobs kept as failed. */
export async function jobCounts(
  db: Kysely<Database>,
  now: number,
): Promise<{ dueByKind: Map<string, number>; failed: number }> {
  const due = await db
    .selectFrom('jobs')
    .select(['kind', (eb) => eb.fn.countAll<number>().as('n')])
    .where('failed_at', 'is', null)
    .where('run_at', '<=', now)
    .groupBy('kind')
    .execute();
  const failed = await db
    .selectFrom('jobs')
    .select((eb) => eb.fn.countAll<number>().as('n'))
    .where('failed_at', 'is not', null)
    .executeTakeFirst();
  return { dueByKind: new Map(due.map((row) => [row.kind, Number(row.n)])), failed: Number(failed?.n ?? 0) };
}

/**
 * Deletes up to `limit` jobs given up on (kept failed, for an operator to look at) before
 * `before`, and answers how many.
 */
export async function pruneGivenUpJobs(db: Kysely<Database>, before: number, limit: number): Promise<number> {
  const old = await db
    .selectFrom('jobs')
    .select('id')
    .where('failed_at', '<', before)
    .where('locked_by', 'is', null)
    .limit(limit)
    .execute();
  if (old.length === 0) return 0;
  const result = await db
    .deleteFrom('jobs')
    .where(
      'id',
      'in',
      old.map((row) => row.id),
    )
    .where('failed_at', '<', before)
    .where('locked_by', 'is', null)
    .executeTakeFirst();
  return Number(result.numDeletedRows);
}
