import { randomUUID } from 'node:crypto';
import { sql, type Kysely, type RawBuilder } from 'kysely';
import type { Logger } from 'pino';
import { newId } from '../shared/ids.ts';
import type { Database } from '../store/tables.ts';
import { engineOf } from '../store/db.ts';
import { insertLater, prepared } from '../store/prepared.ts';
import { afterCommit, storeOf, type Store } from '../store/store.ts';
import { notifySql } from '../store/postgres/listener.ts';
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

/** What claims the jobs of one lane in this process: the generic worker, or a batched lane. */
export type JobRunner = {
  /** Claim what is due now. */
  poke(): void;
  /** Whether it would start another job now (it runs, and is below its cap). */
  hasRoom(): boolean;
};

/** The runners of each lane in this process; null is the generic worker's. */
const runners = new Map<string | null, Set<JobRunner>>();
/** One function per lane, so a transaction that queues many jobs of a lane wakes its workers once (afterCommit). */
const wakeFunctions = new Map<string | null, () => void>();

function wakerOfLane(lane: string | null): () => void {
  let wake = wakeFunctions.get(lane);
  if (!wake) {
    wake = () => {
      for (const runner of runners.get(lane) ?? []) runner.poke();
    };
    wakeFunctions.set(lane, wake);
  }
  return wake;
}

function canStartHere(lane: string | null): boolean {
  for (const runner of runners.get(lane) ?? []) if (runner.hasRoom()) return true;
  return false;
}

// Across processes (PostgreSQL): a transaction that queues a job due now which no runner of this
// process can start sends a notification on JOBS_CHANNEL with the job's insert, delivered at
// commit, and the runners of the lane in every other process that listens claim at once rather than
// at their next poll. Only then: PostgreSQL serialises the commits of transactions that notify (they
// hold a database-wide lock until their commit is flushed), so a notification on every commit that
// queues mail or a webhook would undo the group commit of the busiest paths; and a runner here with
// room claims the job as soon as the commit returns, before any other process could. The payload
// names the lane and this process, which ignores its own notifications (it woke its runners already).

export const JOBS_CHANNEL = 'tono_jobs';
/** This process, in the notifications it sends. */
const PROCESS_ID = randomUUID();
let heard = 0;

/** Notifications of another process's jobs that woke this process's runners, since it started. */
export function jobNotificationsHeard(): number {
  return heard;
}

const listening = new Map<Store, { runners: number; stop: () => void }>();

/** Listens for jobs other processes queue, while any runner of this store runs (PostgreSQL). */
function listenForJobs(store: Store, log: Logger): () => void {
  let entry = listening.get(store);
  if (!entry) {
    const stop = store.listen(JOBS_CHANNEL, {
      notice(payload) {
        const space = payload.indexOf(' ');
        if (space < 0 || payload.slice(0, space) === PROCESS_ID) return;
        const lane = payload.slice(space + 1) || null;
        if (!runners.has(lane)) return;
        heard += 1;
        wakerOfLane(lane)();
      },
      listening() {
        // Whatever was queued while nobody listened is due now.
        for (const lane of runners.keys()) wakerOfLane(lane)();
      },
      lost(error, retryInMs) {
        log.warn(
          { err: error, retry_in_ms: retryInMs },
          "lost the connection that hears of other processes' jobs; polling meanwhile",
        );
      },
    });
    if (!stop) return () => {};
    entry = { runners: 0, stop };
    listening.set(store, entry);
  }
  const own = entry;
  own.runners += 1;
  let stopped = false;
  return () => {
    if (stopped) return;
    stopped = true;
    own.runners -= 1;
    if (own.runners === 0 && listening.get(store) === own) {
      listening.delete(store);
      own.stop();
    }
  };
}

/**
 * Workers register here so that a committed job due now starts without waiting for a poll: the
 * generic worker for jobs of no lane (null), a batched lane for its own kind's; with PostgreSQL,
 * also a job another process queued that no runner there could start.
 */
export function onJobEnqueued(
  lane: string | null,
  runner: JobRunner,
  options: { db: Kysely<Database>; log: Logger },
): () => void {
  let own = runners.get(lane);
  if (!own) runners.set(lane, (own = new Set()));
  own.add(runner);
  const stopListening = listenForJobs(storeOf(options.db), options.log);
  return () => {
    own.delete(runner);
    if (own.size === 0 && runners.get(lane) === own) runners.delete(lane);
    stopListening();
  };
}

type JobRow = Omit<Database['jobs'], 'attempts'>;

/** The insert that also tells other processes, at commit, that a job of its lane is due. */
const queueAndTell = (onDuplicate: 'fail' | 'ignore') =>
  prepared<JobRow & { wake: string }>((db, arg) => {
    const insert = db.insertInto('jobs').values({
      id: arg('id'),
      kind: arg('kind'),
      run_at: arg('run_at'),
      clock_id: arg('clock_id'),
      payload: arg('payload'),
      lane: arg('lane'),
      dedupe_key: arg('dedupe_key'),
      locked_by: arg('locked_by'),
      locked_until: arg('locked_until'),
      last_error: arg('last_error'),
      failed_at: arg('failed_at'),
      created_at: arg('created_at'),
    });
    return (onDuplicate === 'ignore' ? insert.onConflict((c) => c.column('dedupe_key').doNothing()) : insert).returning(
      notifySql(JOBS_CHANNEL, arg('wake')).as('told'),
    );
  });
const queueAndTellQuery = queueAndTell('fail');
const queueOnceAndTellQuery = queueAndTell('ignore');

/** Inserts a job in the caller's transaction, so the job exists exactly when the change does. */
export async function enqueue<K extends JobKindName>(
  db: Kysely<Database>,
  job: NewJob<K>,
  now = Date.now(),
): Promise<void> {
  const lane = job.batched ? job.kind : null;
  const row: JobRow = {
    id: newId('job'),
    kind: job.kind,
    run_at: job.runAt,
    clock_id: job.clockId ?? null,
    payload: JSON.stringify(job.payload ?? {}),
    lane,
    dedupe_key: job.dedupeKey ?? null,
    locked_by: null,
    locked_until: null,
    last_error: null,
    failed_at: null,
    created_at: now,
  };
  const wake = wakeAfterCommit(db, lane, job.runAt, now);
  if (wake !== null) {
    const query = job.dedupeKey ? queueOnceAndTellQuery : queueAndTellQuery;
    await query.later(db, { ...row, wake });
  } else {
    await insertLater(db, 'jobs', row, job.dedupeKey ? 'dedupe_key' : undefined);
  }
}

/**
 * PostgreSQL: the end of one statement that queues a job of `kind` for each row of the statement's
 * WITH query `rows`, in the caller's transaction (a job for each webhook delivery an event made, in
 * the statement that made them). `id` (idInSql) and `payload` are SQL over the row's columns; `now`
 * and `runAt` the statement's arguments. With `wake` (what queuingPerRow returned), the insert also
 * tells other processes, as enqueue's does.
 */
export function jobsPerRowSql(
  rows: string,
  job: { kind: JobKindName; batched: boolean; id: RawBuilder<string>; payload: RawBuilder<string> },
  args: { runAt: unknown; now: unknown; wake?: unknown },
): RawBuilder<unknown> {
  const lane = job.batched ? job.kind : null;
  const insert = sql`insert into jobs (id, kind, run_at, clock_id, payload, lane, dedupe_key, locked_by, locked_until, last_error, failed_at, created_at)
    select ${job.id}, ${job.kind}, ${args.runAt}, null, ${job.payload}, ${lane}, null, null, null, null, null, ${args.now}
    from ${sql.table(rows)}`;
  return args.wake === undefined ? insert : sql`${insert} returning ${notifySql(JOBS_CHANNEL, args.wake)}`;
}

/**
 * In the caller's transaction, before a statement made with jobsPerRowSql: this process's runners
 * of the lane claim after the commit, and the payload of the notification for other processes is
 * returned when they must be told (as enqueue decides), else null.
 */
export function queuingPerRow(
  db: Kysely<Database>,
  job: { kind: JobKindName; batched: boolean; runAt: number },
  now: number,
): string | null {
  return wakeAfterCommit(db, job.batched ? job.kind : null, job.runAt, now);
}

/**
 * For a job of `lane` queued in the caller's transaction: this process's runners of the lane claim
 * after the commit when it is due now. Returns the payload of the notification that tells other
 * processes, or null: they are told once per lane and transaction, with its first job due now, on
 * PostgreSQL, when no runner here has room for it.
 */
function wakeAfterCommit(db: Kysely<Database>, lane: string | null, runAt: number, now: number): string | null {
  const tell =
    runAt <= now + 50 && afterCommit(db, wakerOfLane(lane)) && engineOf(db) === 'postgres' && !canStartHere(lane);
  return tell ? `${PROCESS_ID} ${lane ?? ''}` : null;
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
