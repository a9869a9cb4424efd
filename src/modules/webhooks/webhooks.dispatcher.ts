import type { Mode } from '../../shared/mode.ts';
import type { Reach } from '../../shared/network.ts';
import type { Logger } from 'pino';
import { BatchLane, type BatchLaneKind } from '../../jobs/batch-lane.ts';
import { newId } from '../../shared/ids.ts';
import { openStored, type SecretBox } from '../../shared/secret-box.ts';
import { systemClock, type Clock } from '../../shared/time.ts';
import type { Db } from '../../store/db.ts';
import { eventBodies, revealSecret } from '../events/events.service.ts';
import {
  deliveriesStillThere,
  deliveriesToSend,
  endDelivery,
  insertAttempts,
  recordAttemptOn,
  WEBHOOK_DELIVERY_JOB,
  type AttemptRow,
  type DeliveryJobPayload,
} from './deliveries.repo.ts';
import { DELIVERY_POLICY, isAcknowledged, nextAttemptAt, type DeliveryPolicy } from './retry-policy.ts';
import { createUndiciSender, type SendResult, type Sender } from './webhooks.sender.ts';
import { deliverySignatureHeaders } from './signing.ts';

// Webhook delivery is a job kind of the batched lane (src/jobs/batch-lane.ts), for throughput and
// fairness: deliveries are claimed in batches, sent concurrently with a cap per endpoint and
// overall, and their attempts are recorded in batches. This file says what one delivery loads,
// sends and records; the lane owns the claiming, leases and retries on the jobs table.

export type DispatcherOptions = {
  db: Db;
  log: Logger;
  /** Real time by default; tests inject a clock to reach the 10-minute cap without waiting. */
  clock?: Clock;
  random?: () => number;
  sender?: Sender;
  /** Opens endpoint secrets and the event secrets some deliveries carry (docs/security.md). */
  secrets: SecretBox;
  /** Where deliveries of each mode may connect; global addresses only unless given. */
  reach?: Record<Mode, Reach>;
  timeoutMs?: number;
  policy?: DeliveryPolicy;
  maxInFlight?: number;
  perEndpoint?: number;
  pollMs?: number;
  leaseMs?: number;
};

type Work = {
  deliveryId: string;
  firstAttemptAt: number | null;
  live: boolean;
  url: string | null;
  secret: string | null;
  eventId: string;
  body: string;
  /** False when the endpoint was deleted or the delivery is no longer pending. */
  sendable: boolean;
};

type Outcome =
  | { work: Work; kind: 'cancelled' }
  | { work: Work; kind: 'exhausted'; at: number }
  | { work: Work; kind: 'attempted'; startedAt: number; result: SendResult; retryAt: number | null };

type DeliveryLane = BatchLaneKind<DeliveryJobPayload, Work, Outcome>;
type SendSettings = { clock: Clock; random: () => number; policy: DeliveryPolicy; timeoutMs: number; sender: Sender };

/** The delivery job kind, as the batched lane runs it. */
export function deliveryLaneKind(options: DispatcherOptions & { sender: Sender }): DeliveryLane {
  const settings: SendSettings = {
    clock: options.clock ?? systemClock,
    random: options.random ?? Math.random,
    policy: options.policy ?? DELIVERY_POLICY,
    timeoutMs: options.timeoutMs ?? DELIVERY_POLICY.timeoutMs,
    sender: options.sender,
  };
  return {
    kind: WEBHOOK_DELIVERY_JOB,
    keyOf: (payload) => payload.endpoint_id,
    load: (db, jobs) => loadDeliveries(options.secrets, db, jobs),
    run: (work, job) => sendDelivery(settings, work, job),
    settlement: (outcome) =>
      outcome.kind === 'attempted' && outcome.retryAt !== null
        ? { retryAt: outcome.retryAt, error: summary(outcome.result) }
        : { retryAt: null },
    record: recordDeliveries,
  };
}

/** What each claimed delivery needs to be sent: its endpoint, its secret opened, its event's body. */
async function loadDeliveries(
  secrets: SecretBox,
  db: Parameters<DeliveryLane['load']>[0],
  jobs: Parameters<DeliveryLane['load']>[1],
): Promise<Work[]> {
  const rows = await deliveriesToSend(
    db,
    jobs.map((job) => job.payload.delivery_id),
  );
  const bodies = await eventBodies(db, [...new Set(rows.map((row) => row.event_id))]);
  const byDelivery = new Map(rows.map((row) => [row.delivery_id, row]));
  // A batch is mostly one endpoint's deliveries: its secret is opened once per batch, not per delivery.
  const opened = new Map<string, string>();
  const secretOf = (stored: string) => {
    let secret = opened.get(stored);
    if (secret === undefined) opened.set(stored, (secret = openStored(secrets, stored)));
    return secret;
  };
  return jobs.map((job) => {
    const row = byDelivery.get(job.payload.delivery_id);
    const event = row ? bodies.get(row.event_id) : undefined;
    return {
      deliveryId: job.payload.delivery_id,
      firstAttemptAt: row?.first_attempt_at == null ? null : Number(row.first_attempt_at),
      live: row?.mode === 'live',
      url: row?.url ?? null,
      secret: row?.secret ? secretOf(row.secret) : null,
      eventId: row?.event_id ?? '',
      body: event
        ? row!.with_secret === 1 && event.secret_sealed
          ? revealSecret(event.body, secrets.open(event.secret_sealed))
          : event.body
        : '',
      sendable: !!row && !!event && row.status === 'pending' && row.deleted_at === null,
    };
  });
}

/** One try: sent and signed, or given up (cancelled, or past the caps), with when to try again. */
async function sendDelivery(
  { clock, random, policy, timeoutMs, sender }: SendSettings,
  work: Work,
  job: Parameters<DeliveryLane['run']>[1],
): Promise<Outcome> {
  if (!work.sendable || !work.url || !work.secret) return { work, kind: 'cancelled' };
  const startedAt = clock.now();
  // A job re-claimed after a crash, or held up past its window, is not sent beyond the caps.
  const late = work.firstAttemptAt !== null && startedAt - work.firstAttemptAt > policy.maxDurationMs;
  if (job.attempt > policy.maxAttempts || late) return { work, kind: 'exhausted', at: startedAt };
  const result = await sender.send(
    { url: work.url, live: work.live },
    work.body,
    {
      'content-type': 'application/json',
      'user-agent': 'Tono-Webhooks/1',
      ...deliverySignatureHeaders(work.body, work.secret, work.eventId, startedAt),
      'x-service-event-id': work.eventId,
      'x-service-delivery-attempt': String(job.attempt),
    },
    timeoutMs,
  );
  const retryAt = isAcknowledged(result.statusCode)
    ? null
    : nextAttemptAt(
        {
          attempt: job.attempt,
          firstAttemptAt: work.firstAttemptAt ?? startedAt,
          now: clock.now(),
          random: random(),
        },
        policy,
      );
  return { work, kind: 'attempted', startedAt, result, retryAt };
}

/** The tries as attempts, and each delivery's state after them, in the lane's transaction. */
async function recordDeliveries(
  trx: Parameters<DeliveryLane['record']>[0],
  finished: Parameters<DeliveryLane['record']>[1],
): Promise<void> {
  const attempts: AttemptRow[] = [];
  for (const { job, outcome } of finished) {
    if (outcome.kind !== 'attempted') continue;
    attempts.push({
      id: newId('attempt'),
      delivery_id: outcome.work.deliveryId,
      attempt: job.attempt,
      started_at: outcome.startedAt,
      latency_ms: outcome.result.latencyMs,
      status_code: outcome.result.statusCode,
      response_body: outcome.result.responseBody,
      error: outcome.result.error,
    });
  }
  // A delivery deleted meanwhile (its merchant's test data) takes no attempt: it would point at nothing.
  const there = await deliveriesStillThere(
    trx,
    attempts.map((attempt) => attempt.delivery_id),
  );
  await insertAttempts(
    trx,
    attempts.filter((attempt) => there.has(attempt.delivery_id)),
  );
  for (const { job, outcome } of finished) {
    const { work } = outcome;
    if (outcome.kind === 'cancelled') await endDelivery(trx, work.deliveryId, { status: 'cancelled' });
    else if (outcome.kind === 'exhausted')
      await endDelivery(trx, work.deliveryId, { status: 'failed', at: outcome.at });
    else {
      const acknowledged = isAcknowledged(outcome.result.statusCode);
      const endedAt = outcome.startedAt + outcome.result.latencyMs;
      await recordAttemptOn(trx, work.deliveryId, {
        status: acknowledged ? 'succeeded' : outcome.retryAt === null ? 'failed' : 'pending',
        attempts: job.attempt,
        first_attempt_at: work.firstAttemptAt ?? outcome.startedAt,
        last_attempt_at: outcome.startedAt,
        next_attempt_at: outcome.retryAt,
        succeeded_at: acknowledged ? endedAt : null,
        failed_at: !acknowledged && outcome.retryAt === null ? endedAt : null,
      });
    }
  }
}

/** Sends webhook deliveries: the delivery job kind on a batched lane, with its HTTP sender. */
export class WebhookDispatcher {
  private readonly lane: BatchLane<DeliveryJobPayload, Work, Outcome>;
  private readonly sender: Sender;

  constructor(options: DispatcherOptions) {
    const perEndpoint = options.perEndpoint ?? 256;
    this.sender =
      options.sender ??
      createUndiciSender({
        reach: options.reach ?? { live: 'global', test: 'global' },
        connectionsPerOrigin: perEndpoint,
        log: options.log,
      });
    this.lane = new BatchLane(deliveryLaneKind({ ...options, sender: this.sender }), {
      db: options.db,
      log: options.log,
      clock: options.clock,
      random: options.random,
      maxInFlight: options.maxInFlight,
      perKey: perEndpoint,
      pollMs: options.pollMs,
      leaseMs: options.leaseMs,
    });
  }

  start(): void {
    this.lane.start();
  }

  /** Stops claiming, lets attempts under way finish and records them (SIGTERM). */
  async stop(): Promise<void> {
    await this.lane.stop();
    await this.sender.close();
  }

  poke(): void {
    this.lane.poke();
  }
}

function summary(result: SendResult): string {
  return result.statusCode !== null ? `HTTP ${result.statusCode}` : (result.error ?? 'error');
}
