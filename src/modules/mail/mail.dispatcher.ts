import type { Logger } from 'pino';
import { backoffDelayMs, DEFAULT_BACKOFF, DEFAULT_MAX_ATTEMPTS } from '../../jobs/backoff.ts';
import { BatchLane, type BatchLaneKind } from '../../jobs/batch-lane.ts';
import type { Deps } from '../context.ts';
import { messagesByIds, recordFailedTry, recordSent, type MailRow } from './mail.repo.ts';
import { ownAddressesOf } from './mail.own-addresses.ts';
import { createMailSender, outgoingMailOf, SEND_MAIL_JOB, type MailSender } from './mail.service.ts';

// Sending mail is a job kind of the batched lane (src/jobs/batch-lane.ts): a run of subscription
// charges queues a receipt per charge, and as jobs of the generic worker (a claim, a read, a send
// and a commit each) they took turns with the charges and held them up. The lane claims due
// messages in batches, reads them in one query, sends them concurrently and records them in
// batches. What a message is and how it is sent stay in mail.service.ts and mail.delivery.ts.
//
// A merchant's test-mode message goes by SMTP only to the merchant's own people (docs/email.md,
// Transport). Whose addresses those are is read as the batch is loaded, one statement for every
// merchant with test-mode mail in it (none when it has none), so the check costs a message nothing.

/** Messages being sent at once by one process; the SMTP pool queues what its connections cannot take yet. */
const IN_FLIGHT = 256;

/** `toOwnAddress`: the message is a merchant's test-mode mail to the merchant's own address. */
type Work = { row: MailRow | undefined; toOwnAddress: boolean };

type Outcome =
  | { kind: 'skipped' }
  | { kind: 'sent'; id: string }
  | { kind: 'failed'; id: string; error: string; retryAt: number | null };

export function mailLaneKind(
  deps: Pick<Deps, 'config' | 'secrets' | 'clock'>,
  sender: MailSender,
): BatchLaneKind<{ id: string }, Work, Outcome> {
  return {
    kind: SEND_MAIL_JOB,
    keyOf: () => 'mail',

    async load(db, jobs) {
      const rows = await messagesByIds(
        db,
        jobs.map((job) => job.payload.id),
      );
      const byId = new Map(rows.map((row) => [row.id, row]));
      const own = await ownAddressesOf(db, [...new Set(rows.flatMap((row) => (isTestMail(row) ? [row.user_id] : [])))]);
      return jobs.map((job) => {
        const row = byId.get(job.payload.id);
        const toOwnAddress =
          row !== undefined && isTestMail(row) && own.get(row.user_id)?.has(row.to_address.toLowerCase()) === true;
        return { row, toOwnAddress };
      });
    },

    async run({ row, toOwnAddress }, job): Promise<Outcome> {
      if (row?.status !== 'queued') return { kind: 'skipped' };
      try {
        await sender.send(outgoingMailOf(row, deps.secrets, deps.config.publicBaseUrl, toOwnAddress));
        return { kind: 'sent', id: row.id };
      } catch (error) {
        const message = (error instanceof Error ? error.message : String(error)).slice(0, 500);
        const gaveUp = job.attempt >= DEFAULT_MAX_ATTEMPTS;
        return {
          kind: 'failed',
          id: row.id,
          error: message,
          retryAt: gaveUp ? null : deps.clock.now() + backoffDelayMs(job.attempt, DEFAULT_BACKOFF),
        };
      }
    },

    settlement: (outcome) =>
      outcome.kind === 'failed' && outcome.retryAt !== null
        ? { retryAt: outcome.retryAt, error: outcome.error }
        : { retryAt: null },

    async record(trx, finished) {
      const sent: string[] = [];
      for (const { outcome } of finished) {
        if (outcome.kind === 'sent') sent.push(outcome.id);
        else if (outcome.kind === 'failed')
          await recordFailedTry(trx, outcome.id, outcome.error, outcome.retryAt === null);
      }
      await recordSent(trx, sent, deps.clock.now());
    },
  };
}

/** A merchant's test-mode message, still to be sent. */
const isTestMail = (row: MailRow): row is MailRow & { user_id: string } =>
  row.status === 'queued' && row.user_id !== null && row.mode === 'test';

/** Sends queued mail: the mail job kind on a batched lane, with the sender the settings choose. */
export class MailDispatcher {
  private readonly lane: BatchLane<{ id: string }, Work, Outcome>;
  private readonly sender: MailSender;
  private readonly log: Logger;

  constructor(deps: Deps, sender?: MailSender) {
    this.log = deps.log.child({ component: 'mail' });
    this.sender = sender ?? createMailSender(deps.config, this.log);
    this.lane = new BatchLane(mailLaneKind(deps, this.sender), {
      db: deps.db,
      log: this.log,
      clock: deps.clock,
      maxInFlight: IN_FLIGHT,
      perKey: IN_FLIGHT,
    });
  }

  start(): void {
    this.lane.start();
  }

  /** Stops claiming, lets messages under way finish and records them (SIGTERM). */
  async stop(): Promise<void> {
    await this.lane.stop();
    await this.sender.close();
  }
}
