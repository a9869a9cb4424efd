import { randomUUID } from 'node:crypto';
import type { Logger } from 'pino';
import { onJobEnqueued } from '../../jobs/queue.ts';
import { newId } from '../../shared/ids.ts';
import { systemClock, type Clock } from '../../shared/time.ts';
import { lockSkipLocked, relaxDurability, type Db } from '../../store/db.ts';
import { transact } from '../../store/tx.ts';
import { WEBHOOK_DELIVERY_JOB, type DeliveryJobPayload } from './deliveries.repo.ts';
import { DELIVERY_POLICY, isAcknowledged, nextAttemptAt, type DeliveryPolicy } from './retry-policy.ts';
import { createUndiciSender, type SendResult, type Sender } from './webhooks.sender.ts';
import { deliverySignatureHeaders } from './signing.ts';
import type { WebhookAttemptsTable } from './webhooks.tables.ts';
import { openStored, type SecretBox } from '../../shared/secret-box.ts';

// Webhook delivery has its own dispatcher rather than the generic Worker, for throughput and
// fairness: jobs are claimed in batches (FOR UPDATE SKIP LOCKED on PostgreSQL), sent concurrently
// with a cap per endpoint and overall, and their results are written back in batches (one
// transaction for every result that arrived while the previous one committed). The jobs table
// stays the durable source of truth: a claimed job holds a lease that this process renews while
// the attempt runs, so after a crash another process (or this one, restarted) retries it.

export type DispatcherOptions = {
  db: Db;
  log: Logger;
  /** Real time by default; tests inject a clock to reach the 10-minute cap without waiting. */
  clock?: Clock;
  random?: () => number;
  sender?: Sender;
  /** Opens endpoint secrets and the event secrets some deliveries carry (docs/security.md). */
  secrets: SecretBox;
  allowPrivate?: boolean;
  timeoutMs?: number;
  policy?: DeliveryPolicy;
  maxInFlight?: number;
  perEndpoint?: number;
  pollMs?: number;
  leaseMs?: number;
};

const FLUSH_BATCH = 256;
const FLUSH_GATHER_MS = 5;

type Work = {
  jobId: string;
  deliveryId: string;
  endpointId: string;
  /** This attempt's number: claims of the job so far, so a crash mid-attempt still counts. */
  attempt: number;
  firstAttemptAt: number | null;
  live: boolean;
  url: string | null;
  secret: string | null;
  eventId: string;
  body: string;
  /** False when the endpoint was deleted or the delivery is no longer pending. */
  sendable: boolean;
};

/** The body a delivery sends: the stored envelope, with the event's secret (the recurring token) in clear when it may carry it. */
export function deliveredBody(stored: string, secret: string | null): string {
  if (secret === null) return stored;
  const envelope = JSON.parse(stored) as { data: Record<string, unknown> };
  envelope.data.token = secret;
  return JSON.stringify(envelope);
}

type Outcome =
  | { work: Work; kind: 'cancelled' }
  | { work: Work; kind: 'exhausted'; at: number }
  | { work: Work; kind: 'attempted'; startedAt: number; result: SendResult; retryAt: number | null };

export class WebhookDispatcher {
  readonly id = `webhooks-${randomUUID()}`;
  private readonly db: Db;
  private readonly log: Logger;
  private readonly clock: Clock;
  private readonly random: () => number;
  private readonly sender: Sender;
  private readonly secrets: SecretBox;
  private readonly timeoutMs: number;
  private readonly policy: DeliveryPolicy;
  private readonly maxInFlight: number;
  private readonly perEndpoint: number;
  private readonly pollMs: number;
  private readonly leaseMs: number;

  private running = false;
  private readonly inFlight = new Map<string, Work>();
  private readonly perEndpointCount = new Map<string, number>();
  private readonly sends = new Set<Promise<void>>();
  private outcomes: Outcome[] = [];
  private flushing: Promise<void> | null = null;
  private claiming = false;
  private claimAgain = false;
  private pollTimer: NodeJS.Timeout | null = null;
  private retryTimer: NodeJS.Timeout | null = null;
  private flushTimer: NodeJS.Timeout | null = null;
  private retryTimerAt = Infinity;
  private heartbeat: NodeJS.Timeout | null = null;
  private unregister: (() => void) | null = null;

  constructor(options: DispatcherOptions) {
    this.db = options.db;
    this.log = options.log;
    this.clock = options.clock ?? systemClock;
    this.random = options.random ?? Math.random;
    this.timeoutMs = options.timeoutMs ?? DELIVERY_POLICY.timeoutMs;
    this.policy = options.policy ?? DELIVERY_POLICY;
    this.maxInFlight = options.maxInFlight ?? 1024;
    this.perEndpoint = options.perEndpoint ?? 256;
    this.pollMs = options.pollMs ?? 100;
    this.leaseMs = options.leaseMs ?? 10_000;
    this.secrets = options.secrets;
    this.sender = options.sender ?? createUndiciSender({ allowPrivate: options.allowPrivate ?? false, connectionsPerOrigin: this.perEndpoint, log: this.log });
  }

  start(): void {
    if (this.running) return;
    this.running = true;
    this.unregister = onJobEnqueued(() => this.poke());
    this.heartbeat = setInterval(() => void this.renewLeases(), Math.max(50, Math.floor(this.leaseMs / 3)));
    this.heartbeat.unref?.();
    this.poke();
  }

  /** Stops claiming, lets attempts under way finish and records them (SIGTERM). */
  async stop(): Promise<void> {
    this.running = false;
    this.unregister?.();
    for (const timer of [this.pollTimer, this.retryTimer]) if (timer) clearTimeout(timer);
    while (this.sends.size > 0 || this.flushing || this.outcomes.length > 0) {
      await Promise.allSettled([...this.sends]);
      await (this.flushing ?? this.flush());
    }
    if (this.heartbeat) clearInterval(this.heartbeat);
    await this.sender.close();
  }

  /** Claim what is due now (called after a commit that queued a delivery, and on a timer). */
  poke(): void {
    if (!this.running) return;
    if (this.claiming) {
      this.claimAgain = true;
      return;
    }
    void this.claimAndSend();
  }

  private async claimAndSend(): Promise<void> {
    this.claiming = true;
    let full = false;
    try {
      const room = this.maxInFlight - this.inFlight.size;
      if (room > 0) {
        const claimed = await this.claim(room);
        full = claimed.scanned >= room;
        for (const work of claimed.work) this.send(work);
      }
    } catch (error) {
      this.log.error({ err: error }, 'webhook claim failed');
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
   * Locks due delivery jobs. A job whose endpoint already has its share of attempts in flight is
   * put back a little later instead, so a slow endpoint waits on itself and not on others.
   */
  private async claim(room: number): Promise<{ scanned: number; work: Work[] }> {
    const now = this.clock.now();
    return transact(this.db, async (trx) => {
      const due = await lockSkipLocked(
        trx,
        trx
          .selectFrom('jobs')
          .select(['id', 'payload'])
          .where('kind', '=', WEBHOOK_DELIVERY_JOB)
          .where('failed_at', 'is', null)
          .where('run_at', '<=', now)
          .where((eb) => eb.or([eb('locked_until', 'is', null), eb('locked_until', '<', now)]))
          .orderBy('run_at')
          .limit(room),
      ).execute();
      if (due.length === 0) return { scanned: 0, work: [] };
      // A lease lost in a crash only lets the delivery be claimed again (at least once).
      await relaxDurability(trx);

      const take: Array<{ jobId: string; payload: DeliveryJobPayload }> = [];
      const later: string[] = [];
      const counts = new Map(this.perEndpointCount);
      for (const job of due) {
        const payload = JSON.parse(job.payload) as DeliveryJobPayload;
        const busy = counts.get(payload.endpoint_id) ?? 0;
        if (busy >= this.perEndpoint) later.push(job.id);
        else {
          counts.set(payload.endpoint_id, busy + 1);
          take.push({ jobId: job.id, payload });
        }
      }
      if (later.length > 0) {
        await trx.updateTable('jobs').set({ run_at: now + 10 + Math.floor(this.random() * 30) }).where('id', 'in', later).execute();
      }
      if (take.length === 0) return { scanned: due.length, work: [] };

      const claimed = await trx
        .updateTable('jobs')
        .set((eb) => ({ locked_by: this.id, locked_until: now + this.leaseMs, attempts: eb('attempts', '+', 1) }))
        .where('id', 'in', take.map((t) => t.jobId))
        .returning(['id', 'attempts'])
        .execute();
      const attemptsByJob = new Map(claimed.map((row) => [row.id, Number(row.attempts)]));
      const rows = await trx
        .selectFrom('webhook_deliveries as d')
        .innerJoin('events as e', 'e.id', 'd.event_id')
        .innerJoin('webhook_endpoints as w', 'w.id', 'd.endpoint_id')
        .select(['d.id as delivery_id', 'd.status', 'd.first_attempt_at', 'd.mode', 'd.with_secret', 'e.id as event_id', 'e.body', 'e.secret_sealed', 'w.url', 'w.secret', 'w.deleted_at'])
        .where('d.id', 'in', take.map((t) => t.payload.delivery_id))
        .execute();
      const byDelivery = new Map(rows.map((row) => [row.delivery_id, row]));
      const work: Work[] = [];
      for (const { jobId, payload } of take) {
        const row = byDelivery.get(payload.delivery_id);
        work.push({
          jobId,
          deliveryId: payload.delivery_id,
          endpointId: payload.endpoint_id,
          attempt: attemptsByJob.get(jobId) ?? 1,
          firstAttemptAt: row?.first_attempt_at == null ? null : Number(row.first_attempt_at),
          live: row?.mode === 'live',
          url: row?.url ?? null,
          secret: row?.secret ? openStored(this.secrets, row.secret) : null,
          eventId: row?.event_id ?? '',
          body: row ? deliveredBody(row.body, row.with_secret === 1 && row.secret_sealed ? this.secrets.open(row.secret_sealed) : null) : '',
          sendable: !!row && row.status === 'pending' && row.deleted_at === null,
        });
      }
      return { scanned: due.length, work };
    });
  }

  private send(work: Work): void {
    this.inFlight.set(work.jobId, work);
    this.perEndpointCount.set(work.endpointId, (this.perEndpointCount.get(work.endpointId) ?? 0) + 1);
    const sending = this.attempt(work).then((outcome) => {
      this.outcomes.push(outcome);
      this.scheduleFlush();
    });
    this.sends.add(sending);
    void sending.finally(() => this.sends.delete(sending));
  }

  private async attempt(work: Work): Promise<Outcome> {
    if (!work.sendable || !work.url || !work.secret) return { work, kind: 'cancelled' };
    const startedAt = this.clock.now();
    // A job re-claimed after a crash, or held up past its window, is not sent beyond the caps.
    const late = work.firstAttemptAt !== null && startedAt - work.firstAttemptAt > this.policy.maxDurationMs;
    if (work.attempt > this.policy.maxAttempts || late) return { work, kind: 'exhausted', at: startedAt };
    const result = await this.sender.send(
      { url: work.url, live: work.live },
      work.body,
      {
        'content-type': 'application/json',
        'user-agent': 'Tono-Webhooks/1',
        ...deliverySignatureHeaders(work.body, work.secret, work.eventId, this.clock.now()),
        'x-service-event-id': work.eventId,
        'x-service-delivery-attempt': String(work.attempt),
      },
      this.timeoutMs,
    );
    const retryAt = isAcknowledged(result.statusCode)
      ? null
      : nextAttemptAt({ attempt: work.attempt, firstAttemptAt: work.firstAttemptAt ?? startedAt, now: this.clock.now(), random: this.random() }, this.policy);
    return { work, kind: 'attempted', startedAt, result, retryAt };
  }

  /**
   * Results are written in batches: SQLite commits synchronously, so without a short gathering
   * delay every result would cost a commit of its own.
   */
  private scheduleFlush(): void {
    if (this.flushing) return;
    if (this.outcomes.length < FLUSH_BATCH) {
      if (this.flushTimer) return;
      this.flushTimer = setTimeout(() => {
        this.flushTimer = null;
        this.startFlush();
      }, FLUSH_GATHER_MS);
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
      if (this.outcomes.length > 0) this.scheduleFlush();
    });
  }

  /** Writes every finished attempt in one transaction, then frees their slots. */
  private async flush(): Promise<void> {
    const batch = this.outcomes;
    this.outcomes = [];
    if (batch.length === 0) return;
    try {
      await this.record(batch);
    } catch (error) {
      // The jobs keep their leases; once those lapse the attempts are made again (at least once).
      this.log.error({ err: error, count: batch.length }, 'could not record webhook attempts');
    }
    for (const outcome of batch) {
      const { work } = outcome;
      this.inFlight.delete(work.jobId);
      const left = (this.perEndpointCount.get(work.endpointId) ?? 1) - 1;
      if (left > 0) this.perEndpointCount.set(work.endpointId, left);
      else this.perEndpointCount.delete(work.endpointId);
    }
    let soonest = Infinity;
    for (const outcome of batch) if (outcome.kind === 'attempted' && outcome.retryAt !== null) soonest = Math.min(soonest, outcome.retryAt);
    if (soonest < Infinity) this.wakeAt(soonest);
    this.poke();
  }

  private async record(batch: Outcome[]): Promise<void> {
    await transact(this.db, async (trx) => {
      // Only results of jobs this dispatcher still holds are applied; a job whose lease lapsed
      // belongs to whoever claimed it since, and that claimant records its own attempt.
      const finished = batch.filter((o) => o.kind !== 'attempted' || o.retryAt === null).map((o) => o.work.jobId);
      const owned = new Set<string>();
      for (let i = 0; i < finished.length; i += 500) {
        const deleted = await trx.deleteFrom('jobs').where('id', 'in', finished.slice(i, i + 500)).where('locked_by', '=', this.id).returning('id').execute();
        for (const row of deleted) owned.add(row.id);
      }
      for (const outcome of batch) {
        if (outcome.kind === 'attempted' && outcome.retryAt !== null) {
          const updated = await trx
            .updateTable('jobs')
            .set({ run_at: outcome.retryAt, locked_by: null, locked_until: null, last_error: summary(outcome.result) })
            .where('id', '=', outcome.work.jobId)
            .where('locked_by', '=', this.id)
            .returning('id')
            .executeTakeFirst();
          if (updated) owned.add(updated.id);
        }
      }

      const attempts: WebhookAttemptsTable[] = [];
      for (const outcome of batch) {
        if (outcome.kind !== 'attempted' || !owned.has(outcome.work.jobId)) continue;
        attempts.push({
          id: newId('attempt'),
          delivery_id: outcome.work.deliveryId,
          attempt: outcome.work.attempt,
          started_at: outcome.startedAt,
          latency_ms: outcome.result.latencyMs,
          status_code: outcome.result.statusCode,
          response_body: outcome.result.responseBody,
          error: outcome.result.error,
        });
      }
      for (let i = 0; i < attempts.length; i += 500) await trx.insertInto('webhook_attempts').values(attempts.slice(i, i + 500)).execute();

      for (const outcome of batch) {
        const { work } = outcome;
        if (!owned.has(work.jobId)) continue;
        if (outcome.kind === 'cancelled') {
          await trx.updateTable('webhook_deliveries').set({ status: 'cancelled', next_attempt_at: null }).where('id', '=', work.deliveryId).where('status', '=', 'pending').execute();
          continue;
        }
        if (outcome.kind === 'exhausted') {
          await trx.updateTable('webhook_deliveries').set({ status: 'failed', next_attempt_at: null, failed_at: outcome.at }).where('id', '=', work.deliveryId).where('status', '=', 'pending').execute();
          continue;
        }
        const acknowledged = isAcknowledged(outcome.result.statusCode);
        const endedAt = outcome.startedAt + outcome.result.latencyMs;
        await trx
          .updateTable('webhook_deliveries')
          .set({
            status: acknowledged ? 'succeeded' : outcome.retryAt === null ? 'failed' : 'pending',
            attempts: work.attempt,
            first_attempt_at: work.firstAttemptAt ?? outcome.startedAt,
            last_attempt_at: outcome.startedAt,
            next_attempt_at: outcome.retryAt,
            succeeded_at: acknowledged ? endedAt : null,
            failed_at: !acknowledged && outcome.retryAt === null ? endedAt : null,
          })
          .where('id', '=', work.deliveryId)
          .execute();
      }
    });
  }

  /** Keeps the leases of attempts under way, so only a dead process's jobs are taken over. */
  private async renewLeases(): Promise<void> {
    const ids = [...this.inFlight.keys()];
    if (ids.length === 0) return;
    const until = this.clock.now() + this.leaseMs;
    try {
      for (let i = 0; i < ids.length; i += 500) {
        await this.db.updateTable('jobs').set({ locked_until: until }).where('id', 'in', ids.slice(i, i + 500)).where('locked_by', '=', this.id).execute();
      }
    } catch (error) {
      this.log.warn({ err: error }, 'could not renew webhook leases');
    }
  }

  private wakeAt(at: number): void {
    if (!this.running || at >= this.retryTimerAt) return;
    if (this.retryTimer) clearTimeout(this.retryTimer);
    this.retryTimerAt = at;
    this.retryTimer = setTimeout(() => {
      this.retryTimer = null;
      this.retryTimerAt = Infinity;
      this.poke();
    }, Math.max(0, at - this.clock.now()));
    this.retryTimer.unref?.();
  }
}

function summary(result: SendResult): string {
  return result.statusCode !== null ? `HTTP ${result.statusCode}` : (result.error ?? 'error');
}
