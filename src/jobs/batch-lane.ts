import { randomUUID } from 'node:crypto';
import type { Transaction } from 'kysely';
import type { Logger } from 'pino';
import { inJsonArray, lockSkipLocked, type Db } from '../store/db.ts';
import { prepared } from '../store/prepared.ts';
import type { Database } from '../store/tables.ts';
import { storeOf, transact } from '../store/store.ts';
import { systemClock, type Clock } from '../shared/time.ts';
import { keepLeases } from './leases.ts';
import { onJobEnqueued } from './queue.ts';

// A lane for one kind of job that must run many at once (webhook delivery): jobs are claimed in
// batches (FOR UPDATE SKIP LOCKED on PostgreSQL), run concurrently with a cap per key and overall,
// and their results are written back in batches (one transaction for every result that arrived
// while the previous one committed). The jobs table stays the durable source of truth: a claimed
// job holds a lease that the lane renews while the job runs, so after a crash another process (or
// this one, restarted) runs it again. The job kind's module says what to load, how to run one job
// and what to record; every statement on the jobs table is here.

/** One claimed job: `attempt` counts its claims so far, so a crash mid-run still counts. */
export type LaneJob<P> = { jobId: string; key: string; attempt: number; payload: P };

/** What became of one job: done (deleted), or to run again at `retryAt`. */
export type Settlement = { retryAt: null } | { retryAt: number; error: string };

export type BatchLaneKind<P, W, O> = {
  kind: string;
  /** Jobs with the same key share the per-key cap on runs under way (a webhook endpoint). */
  keyOf(payload: P): string;
  /**
   * Reads what the claimed jobs need, once their claim has committed: plain reads, which on
   * PostgreSQL go with the other reads of the moment rather than on the claim's connection. Returns
   * one work item per job, in order.
   */
  load(db: Db, jobs: LaneJob<P>[]): Promise<W[]>;
  run(work: W, job: LaneJob<P>): Promise<O>;
  settlement(outcome: O): Settlement;
  /** Writes the outcomes of jobs this lane still held, in the transaction that settles them. */
  record(trx: Transaction<Database>, outcomes: Array<{ job: LaneJob<P>; outcome: O }>): Promise<void>;
};

export type BatchLaneOptions = {
  db: Db;
  log: Logger;
  clock?: Clock;
  random?: () => number;
  maxInFlight?: number;
  perKey?: number;
  pollMs?: number;
  leaseMs?: number;
  /** How long finished jobs are gathered before they are recorded in one transaction. */
  flushGatherMs?: number;
};

const FLUSH_BATCH = 256;
const FLUSH_GATHER_MS = 5;
const CHUNK = 500;
/** A job of a full key is put back by this (plus up to 30 ms), doubled each time the key is still full, up to the maximum. */
const PUT_OFF_MS = 10;
const PUT_OFF_MAX_MS = 1_000;
/**
 * Claimed jobs are started this many milliseconds' worth at a time, with a turn of the event loop
 * between: a job's run does its synchronous part (rendering and composing a message, signing a
 * body) when it starts, and a claim of 256 receipts started at once held the loop for up to
 * 150 ms while API calls waited. 5 ms: slices of 2 ms cost a subscription run 15-20% of its rate
 * (more, smaller claims and records), 5 ms nothing measurable (docs/performance.md).
 */
const START_SLICE_MS = 5;

// The statements every batch runs, prepared: a lane runs them thousands of times a second.
const dueJobsQuery = prepared<
  { kind: string; now: number; room: number },
  { id: string; payload: string; attempts: number }
>((db, arg) =>
  lockSkipLocked(
    db,
    db
      .selectFrom('jobs')
      .select(['id', 'payload', 'attempts'])
      .where('kind', '=', arg('kind'))
      .where('failed_at', 'is', null)
      .where('run_at', '<=', arg('now'))
      .where((eb) => eb.or([eb('locked_until', 'is', null), eb('locked_until', '<', arg('now'))]))
      .orderBy('run_at')
      .limit(arg('room')),
  ),
);

const claimJobsQuery = prepared<{ ids: string; owner: string; until: number }>((db, arg) =>
  db
    .updateTable('jobs')
    .set((eb) => ({ locked_by: arg('owner'), locked_until: arg('until'), attempts: eb('attempts', '+', 1) }))
    .where(inJsonArray(db, 'id', arg('ids'))),
);

const putOffJobsQuery = prepared<{ ids: string; runAt: number }>((db, arg) =>
  db
    .updateTable('jobs')
    .set({ run_at: arg('runAt') })
    .where(inJsonArray(db, 'id', arg('ids'))),
);

const deleteHeldJobsQuery = prepared<{ ids: string; owner: string }, { id: string }>((db, arg) =>
  db
    .deleteFrom('jobs')
    .where(inJsonArray(db, 'id', arg('ids')))
    .where('locked_by', '=', arg('owner'))
    .returning('id'),
);

type Running<P, O> = { job: LaneJob<P>; outcome: O };

export class BatchLane<P, W, O> {
  readonly id: string;
  private readonly db: Db;
  private readonly log: Logger;
  private readonly clock: Clock;
  private readonly random: () => number;
  private readonly maxInFlight: number;
  private readonly perKey: number;
  private readonly pollMs: number;
  private readonly flushGatherMs: number;
  private readonly leaseMs: number;

  private running = false;
  private readonly inFlight = new Map<string, LaneJob<P>>();
  private readonly perKeyCount = new Map<string, number>();
  /** How many claims in a row found the key full since a run of it last finished. */
  private readonly putOffStreak = new Map<string, number>();
  private readonly runs = new Set<Promise<void>>();
  /** Claimed (counted in flight, their leases kept) but not started yet. */
  private toStart: Array<{ job: LaneJob<P>; work: W }> = [];
  private startScheduled = false;
  private finished: Array<Running<P, O>> = [];
  private flushing: Promise<void> | null = null;
  private claiming = false;
  /** The claim under way, if any (stop waits for it and the jobs it starts). */
  private claimed: Promise<void> | null = null;
  private claimAgain = false;
  private pollTimer: NodeJS.Timeout | null = null;
  private retryTimer: NodeJS.Timeout | null = null;
  private flushTimer: NodeJS.Timeout | null = null;
  private retryTimerAt = Infinity;
  private stopRenewing: (() => void) | null = null;
  private unregister: (() => void) | null = null;

  private readonly spec: BatchLaneKind<P, W, O>;

  constructor(spec: BatchLaneKind<P, W, O>, options: BatchLaneOptions) {
    this.spec = spec;
    this.id = `${spec.kind}-${randomUUID()}`;
    this.db = options.db;
    this.log = options.log;
    this.clock = options.clock ?? systemClock;
    this.random = options.random ?? Math.random;
    this.maxInFlight = options.maxInFlight ?? 1024;
    this.perKey = options.perKey ?? 256;
    this.pollMs = options.pollMs ?? 100;
    this.flushGatherMs = options.flushGatherMs ?? FLUSH_GATHER_MS;
    this.leaseMs = options.leaseMs ?? 10_000;
  }

  start(): void {
    if (this.running) return;
    this.running = true;
    this.unregister = onJobEnqueued(
      this.spec.kind,
      { poke: () => this.poke(), hasRoom: () => this.running && this.inFlight.size < this.maxInFlight },
      { db: this.db, log: this.log },
    );
    this.stopRenewing = keepLeases({
      db: this.db,
      log: this.log,
      clock: this.clock,
      owner: this.id,
      leaseMs: this.leaseMs,
      held: () => this.inFlight.keys(),
      jobKind: this.spec.kind,
    });
    this.poke();
  }

  /** Stops claiming, lets jobs under way finish and records them (SIGTERM). */
  async stop(): Promise<void> {
    this.running = false;
    this.unregister?.();
    for (const timer of [this.pollTimer, this.retryTimer]) if (timer) clearTimeout(timer);
    // A claim under way when the lane stops still starts its jobs: wait for it, then for them.
    await this.claimed;
    while (this.toStart.length > 0 || this.runs.size > 0 || this.flushing || this.finished.length > 0) {
      if (this.toStart.length > 0) await new Promise((resolve) => setImmediate(resolve));
      await Promise.allSettled([...this.runs]);
      await (this.flushing ?? this.flush());
    }
    this.stopRenewing?.();
  }

  /** Claim what is due now (called after a commit that queued a job, and on a timer). */
  poke(): void {
    if (!this.running) return;
    if (this.claiming) {
      this.claimAgain = true;
      return;
    }
    this.claimed = this.claimAndRun();
  }

  private async claimAndRun(): Promise<void> {
    this.claiming = true;
    let full = false;
    try {
      const room = this.maxInFlight - this.inFlight.size;
      if (room > 0) {
        const claimed = await this.claim(room);
        full = claimed.scanned >= room;
        for (const claim of claimed.work) this.admit(claim.job);
        this.toStart.push(...claimed.work);
        this.startSome();
      }
    } catch (error) {
      this.log.error({ err: error, job_kind: this.spec.kind }, 'job claim failed');
    } finally {
      this.claiming = false;
    }
    if (!this.running) return;
    if (full || this.claimAgain) {
      this.claimAgain = false;
      setImmediate(() => this.poke());
    } else {
      if (this.pollTimer) clearTimeout(this.pollTimer);
      this.pollTimer = setTimeout(() => this.poke(), this.pollMs);
      this.pollTimer.unref?.();
    }
  }

  /**
   * Locks due jobs. A job whose key already has its share in flight is put back a little later
   * instead, so a slow key (endpoint) waits on itself and not on others. Each time a key is found
   * still full it is put back twice as far, up to a second, until one of its runs finishes: a key
   * that hangs with a backlog costs a rewrite of each of its jobs a second, not every 25 ms.
   */
  private async claim(room: number): Promise<{ scanned: number; work: Array<{ job: LaneJob<P>; work: W }> }> {
    const now = this.clock.now();
    // A lease lost in a crash only lets the job be claimed again (at least once): relaxed durability.
    const { result: claimed, durable } = await storeOf(this.db).transaction(
      async (trx) => {
        const due = await dueJobsQuery.all(trx, { kind: this.spec.kind, now, room });
        if (due.length === 0) return { scanned: 0, jobs: [] };

        const take: LaneJob<P>[] = [];
        const later = new Map<string, string[]>();
        const counts = new Map(this.perKeyCount);
        for (const row of due) {
          const payload = JSON.parse(row.payload) as P;
          const key = this.spec.keyOf(payload);
          const busy = counts.get(key) ?? 0;
          if (busy >= this.perKey) {
            const ids = later.get(key);
            if (ids) ids.push(row.id);
            else later.set(key, [row.id]);
          } else {
            counts.set(key, busy + 1);
            // The rows are locked from the read to the commit: the claim below counts this one.
            take.push({ jobId: row.id, key, payload, attempt: Number(row.attempts) + 1 });
          }
        }
        for (const [key, ids] of later) {
          const streak = (this.putOffStreak.get(key) ?? 0) + 1;
          this.putOffStreak.set(key, streak);
          const runAt = now + Math.min(PUT_OFF_MAX_MS, PUT_OFF_MS * 2 ** (streak - 1)) + Math.floor(this.random() * 30);
          await putOffJobsQuery.later(trx, { ids: JSON.stringify(ids), runAt });
        }
        // Sent with the COMMIT (PostgreSQL): the claim is two round trips, the read and the commit.
        if (take.length > 0)
          await claimJobsQuery.later(trx, {
            ids: JSON.stringify(take.map((job) => job.jobId)),
            owner: this.id,
            until: now + this.leaseMs,
          });
        return { scanned: due.length, jobs: take };
      },
      { durability: 'relaxed' },
    );
    if (claimed.jobs.length === 0) return { scanned: claimed.scanned, work: [] };
    // Nothing starts before the jobs it read, and what they carry, are on disk.
    if (durable) await durable;
    // A load that fails leaves its jobs claimed: their leases lapse, and they run again, as after a crash.
    const loaded = await this.spec.load(this.db, claimed.jobs);
    return { scanned: claimed.scanned, work: claimed.jobs.map((job, i) => ({ job, work: loaded[i] })) };
  }

  /** A claimed job counts against the caps (and has its lease renewed) from its claim on. */
  private admit(job: LaneJob<P>): void {
    this.inFlight.set(job.jobId, job);
    this.perKeyCount.set(job.key, (this.perKeyCount.get(job.key) ?? 0) + 1);
  }

  /** Starts claimed jobs for START_SLICE_MS, and the rest after the event loop has had a turn. */
  private startSome(): void {
    const sliceEnds = performance.now() + START_SLICE_MS;
    let next = 0;
    while (next < this.toStart.length) {
      const { job, work } = this.toStart[next++];
      this.launch(job, work);
      if (performance.now() >= sliceEnds) break;
    }
    this.toStart = this.toStart.slice(next);
    if (this.toStart.length > 0 && !this.startScheduled) {
      this.startScheduled = true;
      setImmediate(() => {
        this.startScheduled = false;
        this.startSome();
      });
    }
  }

  private launch(job: LaneJob<P>, work: W): void {
    const run = this.spec.run(work, job).then((outcome) => {
      // The cap is on attempts under way (requests open to one endpoint): a finished job frees its
      // key's slot at once, though it holds its lease until its batch is recorded.
      const left = (this.perKeyCount.get(job.key) ?? 1) - 1;
      if (left > 0) this.perKeyCount.set(job.key, left);
      else this.perKeyCount.delete(job.key);
      this.putOffStreak.delete(job.key);
      this.finished.push({ job, outcome });
      // A key that was at its cap may have jobs waiting: claim them now, not at the next poll.
      if (left === this.perKey - 1) this.poke();
      this.scheduleFlush();
    });
    this.runs.add(run);
    void run.finally(() => this.runs.delete(run));
  }

  /**
   * Results are written in batches: SQLite commits synchronously, so without a short gathering
   * delay every result would cost a commit of its own.
   */
  private scheduleFlush(): void {
    if (this.flushing) return;
    if (this.finished.length < FLUSH_BATCH) {
      if (this.flushTimer) return;
      this.flushTimer = setTimeout(() => {
        this.flushTimer = null;
        this.startFlush();
      }, this.flushGatherMs);
      return;
    }
    this.startFlush();
  }

  private startFlush(): void {
    if (this.flushing) return;
    if (this.flushTimer) clearTimeout(this.flushTimer);
    this.flushTimer = null;
    this.flushing = this.flush().finally(() => {
      this.flushing = null;
      if (this.finished.length > 0) this.scheduleFlush();
    });
  }

  /** Settles every finished job in one transaction, then frees their slots. */
  private async flush(): Promise<void> {
    const batch = this.finished;
    this.finished = [];
    if (batch.length === 0) return;
    try {
      await transact(this.db, (trx) => this.settle(trx, batch));
    } catch (error) {
      // The jobs keep their leases; once those lapse they run again (at least once).
      this.log.error({ err: error, count: batch.length, job_kind: this.spec.kind }, 'could not record finished jobs');
    }
    let soonest = Infinity;
    for (const { job, outcome } of batch) {
      this.inFlight.delete(job.jobId);
      const settlement = this.spec.settlement(outcome);
      if (settlement.retryAt !== null) soonest = Math.min(soonest, settlement.retryAt);
    }
    if (soonest < Infinity) this.wakeAt(soonest);
    this.poke();
  }

  /**
   * Only jobs this lane still holds are settled and recorded; a job whose lease lapsed belongs to
   * whoever claimed it since, and that claimant records its own run.
   */
  private async settle(trx: Transaction<Database>, batch: Array<Running<P, O>>): Promise<void> {
    const owned = new Set<string>();
    const done = batch.filter((r) => this.spec.settlement(r.outcome).retryAt === null).map((r) => r.job.jobId);
    for (let i = 0; i < done.length; i += CHUNK) {
      const deleted = await deleteHeldJobsQuery.all(trx, {
        ids: JSON.stringify(done.slice(i, i + CHUNK)),
        owner: this.id,
      });
      for (const row of deleted) owned.add(row.id);
    }
    for (const { job, outcome } of batch) {
      const settlement = this.spec.settlement(outcome);
      if (settlement.retryAt === null) continue;
      const updated = await trx
        .updateTable('jobs')
        .set({
          run_at: settlement.retryAt,
          locked_by: null,
          locked_until: null,
          last_error: settlement.error.slice(0, 1000),
        })
        .where('id', '=', job.jobId)
        .where('locked_by', '=', this.id)
        .returning('id')
        .executeTakeFirst();
      if (updated) owned.add(updated.id);
    }
    await this.spec.record(
      trx,
      batch.filter((r) => owned.has(r.job.jobId)),
    );
  }

  private wakeAt(at: number): void {
    if (!this.running || at >= this.retryTimerAt) return;
    if (this.retryTimer) clearTimeout(this.retryTimer);
    this.retryTimerAt = at;
    this.retryTimer = setTimeout(
      () => {
        this.retryTimer = null;
        this.retryTimerAt = Infinity;
        this.poke();
      },
      Math.max(0, at - this.clock.now()),
    );
    this.retryTimer.unref?.();
  }
}
