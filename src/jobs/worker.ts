import { randomUUID } from 'node:crypto';
import type { Kysely, Selectable, Transaction } from 'kysely';
import type { Logger } from 'pino';
import { lazyChild } from '../logger.ts';
import { inJsonArray, lockSkipLocked, type Db } from '../store/db.ts';
import { storeOf } from '../store/store.ts';
import { prepared, type Arg } from '../store/prepared.ts';
import type { Database } from '../store/tables.ts';
import { shiftedClock, systemClock, type Clock } from '../shared/time.ts';
import { keepLeases } from './leases.ts';
import { onJobEnqueued } from './queue.ts';
import { backoffDelayMs, DEFAULT_BACKOFF, DEFAULT_MAX_ATTEMPTS, type Backoff } from './backoff.ts';
import type { JobsTable } from './jobs.tables.ts';

export type ClaimedJob = Omit<JobsTable, 'attempts'> & {
  attempts: number;
  /** The offset of the job's test clock when it was claimed (0 without one). */
  clock_offset_ms: number;
};

export type JobContext = {
  job: ClaimedJob;
  /** The clock the job lives on: real time, or its merchant's test clock. */
  clock: Clock;
  db: Db;
  log: Logger;
  /** Deletes the job inside the handler's own transaction, making its effect and completion atomic. */
  finishIn(trx: Transaction<Database>): Promise<void>;
};

/** A handler may ask to run again later (a webhook retry); throwing retries with a generic backoff. */
export type JobResult = undefined | { retryAt: number; error?: string };
/** Runs one job; `P` is its kind's payload (JobPayloads in queue.ts). */
export type JobHandler<P = any> = (payload: P, context: JobContext) => Promise<JobResult>;

/** How the worker runs one kind of job: its handler, and how it retries when the handler throws. */
export type RunnableKind = { handler: JobHandler; backoff?: Backoff; maxAttempts?: number };

export type WorkerOptions = {
  db: Db;
  log: Logger;
  kinds: ReadonlyMap<string, RunnableKind>;
  concurrency?: number;
  pollMs?: number;
  leaseMs?: number;
  realClock?: Clock;
  /** How far each test clock runs ahead of real time, by clock id (the merchants module keeps them). */
  clockOffsets?: (db: Kysely<Database>, clockIds: string[]) => Promise<Map<string, number>>;
};

// The claim's statements, prepared: the worker claims after every batch of jobs it runs.
type DueArgs = { now: number; limit: number };
const dueJobs = (db: Kysely<Database>, arg: Arg<DueArgs>) =>
  db
    .selectFrom('jobs')
    .select('id')
    .where('failed_at', 'is', null)
    .where('lane', 'is', null)
    .where('run_at', '<=', arg('now'))
    .where((eb) => eb.or([eb('locked_until', 'is', null), eb('locked_until', '<', arg('now'))]))
    .orderBy('run_at')
    .limit(arg('limit'));
const dueJobsQuery = prepared<DueArgs, { id: string }>((db, arg) => lockSkipLocked(db, dueJobs(db, arg)));
/** The same, of one test clock only (a clock being moved runs its own jobs). */
const dueJobsOfClockQuery = prepared<DueArgs & { clockId: string }, { id: string }>((db, arg) =>
  lockSkipLocked(db, dueJobs(db, arg).where('clock_id', '=', arg('clockId'))),
);
const leaseJobsQuery = prepared<{ ids: string; owner: string; until: number }, Selectable<JobsTable>>((db, arg) =>
  db
    .updateTable('jobs')
    .set((eb) => ({ locked_by: arg('owner'), locked_until: arg('until'), attempts: eb('attempts', '+', 1) }))
    .where(inJsonArray(db, 'id', arg('ids')))
    .returningAll(),
);

/** Deletes a job this worker still holds the lease of. */
const finishJobQuery = prepared<{ id: string; lockedBy: string }>((db, arg) =>
  db.deleteFrom('jobs').where('id', '=', arg('id')).where('locked_by', '=', arg('lockedBy')),
);

export class Worker {
  readonly id = randomUUID();
  private readonly options: Required<Omit<WorkerOptions, 'realClock'>> & { realClock: Clock };
  private running = false;
  private inFlight = new Set<Promise<void>>();
  private timer: NodeJS.Timeout | null = null;
  private polling = false;
  /** The claim under way, if any: its jobs are started once it returns, even after stop() began. */
  private polled: Promise<void> | null = null;
  private pollAgain = false;
  private unregister: (() => void) | null = null;
  /** The jobs claimed and not yet finished, whose leases are renewed while they are held. */
  private readonly held = new Set<string>();
  private stopRenewing: (() => void) | null = null;

  /** Kinds are set once the service's dependencies exist (their handlers may close over them). */
  setKinds(kinds: ReadonlyMap<string, RunnableKind>): void {
    this.options.kinds = kinds;
  }

  constructor(options: WorkerOptions) {
    this.options = {
      concurrency: 32,
      pollMs: 100,
      leaseMs: 10_000,
      realClock: systemClock,
      clockOffsets: async () => new Map(),
      ...options,
    };
  }

  start(): void {
    if (this.running) return;
    this.running = true;
    this.unregister = onJobEnqueued(
      null,
      { poke: () => this.poke(), hasRoom: () => this.running && this.inFlight.size < this.options.concurrency },
      this.options,
    );
    this.poke();
  }

  /** Stops claiming, then waits for jobs already running, and for those of a claim under way (SIGTERM). */
  async stop(): Promise<void> {
    this.running = false;
    this.unregister?.();
    if (this.timer) clearTimeout(this.timer);
    await this.polled;
    await Promise.allSettled([...this.inFlight]);
    this.stopRenewing?.();
    this.stopRenewing = null;
  }

  poke(): void {
    if (!this.running) return;
    if (this.polling) {
      this.pollAgain = true;
      return;
    }
    if (this.timer) clearTimeout(this.timer);
    this.timer = null;
    this.polled = this.poll();
  }

  private async poll(): Promise<void> {
    this.polling = true;
    let claimedAny = false;
    try {
      const room = this.options.concurrency - this.inFlight.size;
      if (room > 0) {
        const { jobs, ready } = await this.lease(room);
        claimedAny = jobs.length === room;
        // The next claim need not wait while these wait for the durability of what they read.
        const durable = ready ? this.durabilityOf(ready, jobs.length) : null;
        for (const job of jobs)
          this.track(durable ? durable.then((ok) => (ok ? this.run(job) : this.letGo(job))) : this.run(job));
      }
    } catch (error) {
      this.options.log.error({ err: error }, 'job claim failed');
    } finally {
      this.polling = false;
    }
    if (!this.running) return;
    if (claimedAny || this.pollAgain) {
      this.pollAgain = false;
      setImmediate(() => this.poke());
    } else {
      this.timer = setTimeout(() => this.poke(), this.options.pollMs);
      this.timer.unref?.();
    }
  }

  private track(run: Promise<void>): void {
    this.inFlight.add(run);
    void run.finally(() => {
      this.inFlight.delete(run);
      if (this.running) this.poke();
    });
  }

  /**
   * Claims due jobs with a lease, ready to run; on PostgreSQL several processes can claim side by
   * side.
   */
  async claim(limit: number, clockId?: string): Promise<ClaimedJob[]> {
    const { jobs, ready } = await this.lease(limit, clockId);
    if (ready)
      await ready.catch((error: unknown) => {
        for (const job of jobs) this.letGo(job);
        throw error;
      });
    return jobs;
  }

  /** A claimed job this worker will not run: its lease is no longer renewed, and lapses. */
  private letGo(job: ClaimedJob): void {
    this.held.delete(job.id);
  }

  /**
   * Whether the rows a claim read became durable: jobs claimed by `lease` run once they are, never
   * if their commit failed. Settles either way, so a failed commit is logged once per claim.
   */
  private durabilityOf(ready: Promise<void>, count: number): Promise<boolean> {
    return ready.then(
      () => true,
      (error: unknown) => {
        // The leases went with the failed commit: the jobs, if they exist, are claimed again.
        this.options.log.error({ err: error, count }, 'claimed jobs not run: the commit they were read from failed');
        return false;
      },
    );
  }

  /**
   * Due jobs with their leases taken, and `ready`: the leases need not reach the disk (a relaxed
   * transaction, docs/store.md), but the jobs must not run before the rows they were read from have.
   */
  private async lease(limit: number, clockId?: string): Promise<{ jobs: ClaimedJob[]; ready: Promise<void> | null }> {
    const { db, leaseMs } = this.options;
    const now = this.options.realClock.now();
    const { result: jobs, durable: ready } = await storeOf(db).transaction(
      async (trx) => {
        const due =
          clockId === undefined
            ? await dueJobsQuery.all(trx, { now, limit })
            : await dueJobsOfClockQuery.all(trx, { now, limit, clockId });
        if (due.length === 0) return [];
        const ids = JSON.stringify(due.map((row) => row.id));
        const rows = await leaseJobsQuery.all(trx, { ids, owner: this.id, until: now + leaseMs });
        // The test clocks' offsets, read once for the batch rather than once per job.
        const clockIds = [...new Set(rows.map((row) => row.clock_id).filter((id): id is string => id !== null))];
        const offsets =
          clockIds.length > 0 ? await this.options.clockOffsets(trx, clockIds) : new Map<string, number>();
        return rows
          .map((row) => ({ ...row, clock_offset_ms: row.clock_id ? (offsets.get(row.clock_id) ?? 0) : 0 }))
          .sort((a, b) => a.run_at - b.run_at) as ClaimedJob[];
        // A lease lost in a crash only lets the job be claimed again, which handlers allow for.
      },
      { durability: 'relaxed' },
    );
    for (const job of jobs) this.held.add(job.id);
    if (jobs.length > 0 && !this.stopRenewing)
      this.stopRenewing = keepLeases({
        db,
        log: this.options.log,
        clock: this.options.realClock,
        owner: this.id,
        leaseMs,
        held: () => this.held,
      });
    return { jobs, ready };
  }

  async run(job: ClaimedJob): Promise<void> {
    const { db, log, kinds } = this.options;
    const kind = kinds.get(job.kind);
    const handler = kind?.handler;
    const jobLog = lazyChild(log, { job_id: job.id, job_kind: job.kind });
    let finished = false;
    const mine = (trx: Kysely<Database>) => {
      finished = true;
      return finishJobQuery.run(trx, { id: job.id, lockedBy: this.id }).then(() => undefined);
    };
    try {
      if (!handler) throw new Error(`no handler for job kind ${job.kind}`);
      const clock = job.clock_id ? shiftedClock(this.options.realClock, job.clock_offset_ms) : this.options.realClock;
      const result = await handler(JSON.parse(job.payload), { job, clock, db, log: jobLog, finishIn: mine });
      jobLog.debug(
        { attempts: job.attempts, outcome: result && 'retryAt' in result ? 'again later' : 'done' },
        'job ran',
      );
      if (result && 'retryAt' in result) {
        await db
          .updateTable('jobs')
          .set({ run_at: result.retryAt, locked_by: null, locked_until: null, last_error: result.error ?? null })
          .where('id', '=', job.id)
          .where('locked_by', '=', this.id)
          .execute();
      } else if (!finished) {
        // (A handler that finished the job in its own transaction needs no second delete.)
        await mine(db);
      }
    } catch (error) {
      const message = error instanceof Error ? error.message : String(error);
      const giveUp = job.attempts >= (kind?.maxAttempts ?? DEFAULT_MAX_ATTEMPTS);
      jobLog[giveUp ? 'error' : 'warn']({ err: error, attempts: job.attempts, gave_up: giveUp }, 'job failed');
      const now = this.options.realClock.now();
      await db
        .updateTable('jobs')
        .set({
          run_at: now + backoffDelayMs(job.attempts, kind?.backoff ?? DEFAULT_BACKOFF),
          locked_by: null,
          locked_until: null,
          last_error: message.slice(0, 1000),
          failed_at: giveUp ? now : null,
        })
        .where('id', '=', job.id)
        .where('locked_by', '=', this.id)
        .execute()
        .catch((err) => jobLog.error({ err }, 'could not record job failure'));
    } finally {
      this.letGo(job);
    }
  }

  /**
   * Runs, in due order, every job of one clock that is due now, including jobs those jobs create,
   * and waits for ones another worker holds. Used when a test clock moves. Stops after `budget`
   * jobs; returns how many ran.
   */
  async drain(clockId: string, budget = Number.POSITIVE_INFINITY): Promise<number> {
    let ran = 0;
    for (;;) {
      if (ran >= budget) return ran;
      const jobs = await this.claim(Math.min(16, budget - ran), clockId);
      if (jobs.length > 0) {
        for (const job of jobs) await this.run(job);
        ran += jobs.length;
        continue;
      }
      const now = this.options.realClock.now();
      const held = await this.options.db
        .selectFrom('jobs')
        .select('id')
        .where('clock_id', '=', clockId)
        .where('failed_at', 'is', null)
        .where('run_at', '<=', now)
        .limit(1)
        .executeTakeFirst();
      if (!held) return ran;
      await new Promise((resolve) => setTimeout(resolve, 20));
    }
  }
}
