import { AppError, invalidParam, notFound } from '../../shared/errors.ts';
import { AMOUNT_FORM, parseAmount } from '../../shared/money.ts';
import { bringQueuedJobForward, enqueue, realTimeOf } from '../../jobs/queue.ts';
import type { JobHandler } from '../../jobs/worker.ts';
import type { Clock } from '../../shared/time.ts';
import { transact } from '../../store/store.ts';
import { recordAudit, recordAuditFor, type AuditBy } from '../audit/audit.service.ts';
import { waitsForBankWord, type BankWord } from '../payments/payments.rules.ts';
import { isNotWritten, isUniqueViolation, type Db } from '../../store/db.ts';
import {
  followNamedPayment,
  mayResendUnderKey,
  type BankConnector,
  type SubmittedPayment,
} from '../banks/bank-connector.ts';
import { connectorFor, creditorOf, remittanceOf } from '../payments/payments.banks.ts';
import {
  auditSettledByHand,
  createPaymentRow,
  executionsInFlight,
  extrasOfWord,
  findPaymentById,
  findPaymentByIdempotencyKey,
  holdPaymentToRecord,
  isParticularsClash,
  presentPayment,
  setPaymentStatus,
  setPaymentStatusOrFail,
  type MovedPayment,
  type PaymentRow,
} from '../payments/payments.service.ts';
import { clockIdOf, clockOf } from '../merchants/merchants.clock.ts';
import { submitUnderConsent, type ConsentTokenHolder, rowTokenHolder } from '../banks/consent-tokens.ts';
import {
  bankTokenOf,
  findConsentById,
  findConsentToLock,
  getConsent,
  lockConsent,
  lockConsentAsRead,
  updateConsent,
  type ConsentRow,
  type Owner,
} from './consents.repo.ts';
import {
  consentNotActiveError,
  consentRevokedError,
  effectiveConsentStatus,
  executionFingerprint,
  hashConsentToken,
  limitRefusalError,
  limitsOf,
} from './consents.rules.ts';
import type { ExecutePaymentBody } from './consents.schemas.ts';
import { checkLimits, limitWindow } from './limits.ts';
import { noticeConsentRevoked } from './consents.notices.ts';
import { countReservation, followStatusChange, usageOf } from './usage.service.ts';
import { backoffDelayMs, type Backoff } from '../../jobs/backoff.ts';
import type { Ctx, Deps } from '../context.ts';

// POST /v1/payments: a merchant-initiated payment under a recurring consent, synchronous.
//
// 1. Idempotency (docs/api-conventions.md): the key is unique per merchant and mode in the payments table,
//    bound to a fingerprint of the parameters. Same key and parameters: the first payment (200),
//    waiting for it if it is still being executed; other parameters: 409. The unique index finds a
//    repeat, also of one racing in: the repeat's insert fails, its transaction rolls back, and it
//    answers as the first call did. A new key so costs no read; only a call the consent's status
//    would refuse looks for an earlier payment first.
// 2. Reserve, in one transaction: the in-flight payment row, then, with the consent row locked,
//    status, usage in the current calendar period and in total (successful, unconfirmed and
//    in-flight payments count; read from the consent's counters, usage.service.ts), checkLimits,
//    and the counters moved by the payment. Concurrent executions queue on the lock, so no limit is
//    overrun; a refused one rolls its payment back.
// 3. Commit, then call the bank (never inside a transaction), with the payment id as the bank's
//    x-idempotency-key: a retry after a crash cannot charge twice.
// 4. Record the outcome and payment.status_updated in one transaction; a failed payment stops
//    counting in the same transaction. An unconfirmed one gets the settle job, which asks again.
// 5. An execution that was reserved and never recorded (the process died during the bank call, or
//    the record failed) is found by a sweep every minute, which gives it the settle job too, due
//    two minutes after the reservation (docs/recurring.md). Nothing is queued per execution
//    for this: most executions are recorded within the same second.

export const SETTLE_EXECUTION_JOB = 'recurring_payment.settle';
export const RECOVER_EXECUTIONS_JOB = 'recurring_payment.recover';

declare module '../../jobs/queue.ts' {
  interface JobPayloads {
    'recurring_payment.settle': { payment_id: string };
    'recurring_payment.recover': Record<string, never>;
  }
}
/** A payment still in flight or unconfirmed this long after it was reserved or recorded is asked about again. */
const SETTLE_AFTER_MS = 2 * 60_000;
const RECOVER_EVERY_MS = 60_000;
/** In-flight executions one sweep looks at; more wait for the next (the oldest come first). */
const RECOVER_BATCH = 10_000;
const REPLAY_WAIT_MS = 30_000;

export type ExecutionReply = { status: 200 | 201; payment: ReturnType<typeof presentPayment> };

const ownerOf = (ctx: Ctx): Owner => ({ userId: ctx.merchant.id, mode: ctx.mode });

export async function executePayment(ctx: Ctx, body: ExecutePaymentBody): Promise<ExecutionReply> {
  const { token, ...charge } = body;
  return executeUnder(ctx, hashConsentToken(token), charge, 'api');
}

export type Charge = Omit<ExecutePaymentBody, 'token'>;

/**
 * A payment under one of the caller's consents named by its id: the dashboard's Charge, for a
 * merchant who never sees the token. The same reservation, limits, idempotency and events as
 * POST /v1/payments; another merchant's consent is a 404.
 */
export async function executePaymentOnConsent(ctx: Ctx, consentId: string, charge: Charge): Promise<ExecutionReply> {
  const consent = await getConsent(ctx.db, ownerOf(ctx), consentId);
  return executeUnder(ctx, consent.token_hash, charge, 'dashboard');
}

/**
 * What a charge of `amountCents` on the consent would meet now, without reserving anything: the
 * refusal the execution would give (limits, status), or null. The execution checks again under
 * the consent's lock.
 */
export async function refusalOfCharge(ctx: Ctx, consentId: string, amountCents: number): Promise<AppError | null> {
  const consent = await getConsent(ctx.db, ownerOf(ctx), consentId);
  const now = ctx.clock.now();
  const zone = ctx.deps.config.serviceTimeZone;
  try {
    refuseUnlessExecutable(consent, now);
  } catch (error) {
    if (error instanceof AppError) return error;
    throw error;
  }
  const limits = limitsOf(consent);
  const usage = await usageOf(ctx.db, consent, limitWindow(limits, now, zone));
  const check = checkLimits(limits, usage, amountCents, now, zone);
  return check.ok ? null : limitRefusalError(check, limits.period, amountCents);
}

async function executeUnder(
  ctx: Ctx,
  tokenHash: string,
  charge: Charge,
  channel: 'api' | 'dashboard',
): Promise<ExecutionReply> {
  const amountCents = parseAmount(charge.amount);
  if (amountCents === null) throw invalidParam('amount', `amount must be ${AMOUNT_FORM}`);
  if (amountCents === 0) throw invalidParam('amount', 'amount must be more than 0.00 NZD');
  const owner = ownerOf(ctx);
  const fingerprint = executionFingerprint({
    tokenHash,
    amountCents,
    reference: charge.reference ?? null,
    merchantIdentifier: charge.merchant_identifier ?? null,
  });

  let reserved: Reservation;
  try {
    reserved = await reserve(ctx, tokenHash, { amountCents, fingerprint, charge, channel });
  } catch (error) {
    // The same key raced in, on this consent or another: the unique index decided; answer as the winner did.
    if (!(error instanceof AppError) && isUniqueViolation(error)) {
      const winner = await findPaymentByIdempotencyKey(ctx.db, owner, charge.idempotency_key);
      if (winner) return replay(ctx.deps, winner, fingerprint);
    }
    throw error;
  }
  if (reserved.kind === 'earlier') return replay(ctx.deps, reserved.payment, fingerprint);
  if (reserved.kind === 'unknown-token') {
    // The key may still name an earlier execution (then 200, or 409 for other parameters). Else the
    // same answer for an unknown token and another merchant's: tokens are never confirmed.
    const earlier = await findPaymentByIdempotencyKey(ctx.db, owner, charge.idempotency_key);
    if (earlier) return replay(ctx.deps, earlier, fingerprint);
    throw notFound('recurring_consent');
  }

  const settled = await submitAndRecord(ctx.deps, reserved.consent, reserved.payment, ctx.clock.now(), ctx.clock);
  return { status: 201, payment: presentPayment(settled) };
}

type Reservation =
  | { kind: 'new'; consent: ConsentRow; payment: PaymentRow }
  | { kind: 'earlier'; payment: PaymentRow }
  | { kind: 'unknown-token' };

type ReservationInput = { amountCents: number; fingerprint: string; charge: Charge; channel: 'api' | 'dashboard' };

/** Drawing the payment's particulars again after this many clashes in a row would be no luck but a fault. */
const PARTICULARS_DRAWS = 5;

async function reserve(ctx: Ctx, tokenHash: string, input: ReservationInput): Promise<Reservation> {
  for (let draw = 1; ; draw += 1) {
    try {
      return await reserveOnce(ctx, tokenHash, input);
    } catch (error) {
      // The payment's insert is not waited for: a clash of its random particulars rolls the whole
      // reservation back, and it is made again with new ones.
      if (draw < PARTICULARS_DRAWS && !ctx.db.isTransaction && isParticularsClash(error)) continue;
      throw error;
    }
  }
}

async function reserveOnce(ctx: Ctx, tokenHash: string, input: ReservationInput): Promise<Reservation> {
  const zone = ctx.deps.config.serviceTimeZone;
  return transact(ctx.db, async (trx) => {
    const found = await findConsentToLock(trx, ownerOf(ctx), tokenHash);
    if (!found) return { kind: 'unknown-token' };
    const now = ctx.clock.now();
    // A consent that has ended is refused before anything is written; the locked row decides below.
    // A repeated key is found by the payments' unique index when the payment is inserted (and
    // executeUnder answers as the first call was answered), so a new key costs no read for it; a
    // call this refuses may still repeat an earlier one, which is then answered instead.
    try {
      refuseUnlessExecutable(found, now);
    } catch (refusal) {
      const earlier = await findPaymentByIdempotencyKey(trx, ownerOf(ctx), input.charge.idempotency_key);
      if (earlier) return { kind: 'earlier', payment: earlier };
      throw refusal;
    }
    const payment = await createPaymentRow(
      trx,
      {
        request: {
          id: found.request_id,
          user_id: found.user_id,
          mode: found.mode,
          merchant_identifier: found.merchant_identifier,
          reference: found.reference,
        },
        amountCents: input.amountCents,
        bankId: found.bank_id,
        channel: input.channel,
        reference: input.charge.reference,
        merchantIdentifier: input.charge.merchant_identifier,
        recurringConsentId: found.id,
        idempotencyKey: input.charge.idempotency_key,
        fingerprint: input.fingerprint,
      },
      now,
      { answer: 'later' },
    );

    // Locked only now, for the check and the counters: executions on one consent queue on this
    // lock, and on PostgreSQL each statement under it is a round trip they all wait for. The lock's
    // statement carries the BEGIN, the payment and its event, and answers for them: a repeated
    // idempotency key or a particulars clash fails here. A refusal rolls the payment back with
    // everything else.
    const consent = await lockConsentAsRead(trx, found);
    if (!consent) throw notFound('recurring_consent');
    if (consent !== found) refuseUnlessExecutable(consent, now);
    const limits = limitsOf(consent);
    const window = limitWindow(limits, now, zone);
    const usage = await usageOf(trx, consent, window, payment.id);
    const check = checkLimits(limits, usage, input.amountCents, now, zone);
    if (!check.ok) throw limitRefusalError(check, limits.period, input.amountCents);
    await countReservation(trx, consent.id, input.amountCents, window, usage.period);
    await recordAuditFor(trx, ctx, 'payment.charge', payment.id, {
      recurring_consent_id: consent.id,
      amount_cents: input.amountCents,
      reference: input.charge.reference ?? null,
      channel: input.channel,
    });
    return { kind: 'new', consent, payment };
  });
}

/** Throws unless the consent can be executed at `now` as far as its status goes (limits aside). */
function refuseUnlessExecutable(consent: ConsentRow, now: number): void {
  const status = effectiveConsentStatus(consent, now);
  if (status === 'revoked') throw consentRevokedError();
  if (status !== 'active' && status !== 'expired') throw consentNotActiveError(status);
}

/** The earlier payment under this key: 200 with it, once it is no longer in flight; 409 for other parameters. */
async function replay(deps: Deps, earlier: PaymentRow, fingerprint: string): Promise<ExecutionReply> {
  if (earlier.fingerprint !== fingerprint || earlier.recurring_consent_id === null) {
    throw new AppError(
      'conflict.idempotency_key_reused',
      'This idempotency_key was used for a payment with different parameters',
      {
        idempotency_key: earlier.idempotency_key,
      },
    );
  }
  let payment = earlier;
  const deadline = Date.now() + REPLAY_WAIT_MS;
  while (payment.status === 'awaiting-consent' && Date.now() < deadline) {
    await new Promise((resolve) => setTimeout(resolve, 20));
    payment = (await findPaymentById(deps.db, payment.id)) ?? payment;
  }
  return { status: 200, payment: presentPayment(payment) };
}

async function submit(
  deps: Deps,
  connector: BankConnector,
  consent: ConsentRow,
  payment: PaymentRow,
  at: number,
): Promise<SubmittedPayment> {
  const trace = { payment_id: payment.id, recurring_consent_id: consent.id };
  // Taken by the bank and left pending: asked about, never submitted again.
  if (payment.bank_payment_id)
    return followNamedPayment(connector, { paymentId: payment.bank_payment_id, at, trace }, deps.log);
  // Under the consent's token, renewed first when it is known to expire, and once on a 401 (the
  // same body and key again); a renewal the bank refuses reads as the consent revoked there.
  return submitUnderConsent(deps, connector, tokenHolderOf(deps, consent), {
    trace,
    consentId: consent.bank_consent_id,
    amountCents: payment.settled_cents,
    creditor: await creditorOf(deps.db, {
      mode: consent.mode,
      user_id: consent.user_id,
      bank_account_id: consent.bank_account_id,
    }),
    remittance: remittanceOf(payment),
    idempotencyKey: payment.id,
    at,
  });
}

/** Where the consent keeps its bank token, for payments under it. */
function tokenHolderOf(deps: Deps, consent: ConsentRow): ConsentTokenHolder {
  return rowTokenHolder(deps, 'recurring_consents', consent.id, bankTokenOf(consent));
}

/** Why the bank refused, as a short code: the bank's own reason, or which of its limits it applied. */
export function failureReasonOf(failure: { reason: string; limit?: string }): string {
  return failure.reason === 'limit_exceeded' && failure.limit ? `limit_exceeded.${failure.limit}` : failure.reason;
}

/**
 * Calls the bank for a reserved payment and records what it said, at `clock` (the consent owner's:
 * real time, or the merchant's test clock); returns the payment as recorded.
 */
export async function submitAndRecord(
  deps: Deps,
  consent: ConsentRow,
  payment: PaymentRow,
  at: number,
  clock: Clock,
  job: string | null = null,
  options: { resending?: boolean } = {},
): Promise<Recorded> {
  const settle = (outcome: Outcome, consentEnded: 'revoked' | 'expired' | null = null) =>
    record(deps, payment, outcome, consentEnded, clock, job);
  const connector = connectorFor(deps, consent.bank_id, consent.mode);
  if (!connector) return settle({ status: 'failed', failure_reason: 'bank_unavailable' });
  const result = await submit(deps, connector, consent, payment, at);
  if (result.ok) {
    if (result.outcome === 'successful') return settle({ status: 'successful', bank_payment_id: result.paymentId });
    if (result.outcome === 'failed')
      return settle({
        status: 'failed',
        bank_payment_id: result.paymentId,
        failure_reason: result.failureReason ?? 'declined',
      });
    return settle({ status: 'unconfirmed', bank_payment_id: result.paymentId });
  }
  if (result.unknown) return settle({ status: 'unconfirmed' });
  const consentEnded = consentEndedBy(result.reason);
  // Sent again after an answer that never came: a bank answers a key it holds with its payment, but
  // one that looks at the consent or its limits before its keys refuses a payment it may hold, so
  // no refusal fails it (and releases it from the limits). A consent that says it ended is over all
  // the same. It is asked again until the bank answers, or 23 hours pass.
  if (options.resending) return settle({ status: 'unconfirmed' }, consentEnded);
  return settle({ status: 'failed', failure_reason: failureReasonOf(result) }, consentEnded);
}

/** A refusal that tells us the consent is over at the bank: the payer revoked it there, or it ran out. */
function consentEndedBy(reason: string): 'revoked' | 'expired' | null {
  if (reason === 'consent_revoked') return 'revoked';
  if (reason === 'consent_expired') return 'expired';
  return null;
}

/** A payment as its outcome was recorded (the payer account it took, if any, is not read back). */
type Recorded = MovedPayment;

type Outcome = {
  status: 'successful' | 'failed' | 'unconfirmed';
  bank_payment_id?: string | null;
  failure_reason?: string;
};

async function record(
  deps: Deps,
  known: PaymentRow,
  outcome: Outcome,
  consentEnded: 'revoked' | 'expired' | null,
  clock: Clock,
  job: string | null,
): Promise<Recorded> {
  const extra: Parameters<typeof setPaymentStatus>[4] = {};
  if (outcome.bank_payment_id !== undefined) extra.bank_payment_id = outcome.bank_payment_id;
  if (outcome.failure_reason !== undefined) extra.failure_reason = outcome.failure_reason;
  const followUp = async (trx: Db, before: PaymentRow) => {
    if (outcome.status === 'unconfirmed') await queueSettle(trx, deps, before, deps.clock.now() + SETTLE_AFTER_MS);
    await followStatusChange(trx, before, outcome.status);
  };
  const audited = async (trx: Db, recorded: Recorded): Promise<Recorded> => {
    // A settle job's outcome is the service's own change to the merchant's money (the API's call
    // was recorded when it reserved the payment).
    if (job !== null && recorded.status !== known.status)
      await recordAudit(trx, {
        userId: known.user_id,
        mode: known.mode,
        actor: { kind: 'service', job },
        action: 'payment.settle',
        objectId: known.id,
        summary: { status: { from: known.status, to: recorded.status }, failure_reason: recorded.failure_reason },
        at: clock.now(),
      });
    return recorded;
  };

  // The usual case, the payment as it was read before the bank was called: its status guards the
  // update, so the row need not be read and locked first, and nothing waits for the update's answer
  // (one round trip on PostgreSQL). When something (the settle job) moved the payment meanwhile, or
  // it needs its payer account asked for, that transaction fails and the row is locked and read.
  if (!consentEnded && !settledAlready(known, outcome)) {
    try {
      return await deps.store.transaction(async (trx) => {
        const moved = await setPaymentStatusOrFail(trx, known, outcome.status, clock.now(), extra);
        await followUp(trx, known);
        return audited(trx, moved);
      });
    } catch (error) {
      if (!isNotWritten(error)) throw error;
    }
  }
  return deps.store.transaction(async (trx) => audited(trx, await recordLocked(trx)));

  async function recordLocked(trx: Db): Promise<Recorded> {
    const now = clock.now();
    // Locked: the settle job may record the same payment's outcome at the same time.
    const payment = await holdPaymentToRecord(trx, known.id);
    // Deleted while the bank was asked (the merchant's test data): nothing to record; as the bank said.
    if (!payment) return { ...known, ...extra, status: outcome.status };
    // Found revoked at the bank: no webhook (the payer did it there), the consent is simply over.
    if (consentEnded && payment.recurring_consent_id) {
      const consent = await lockConsent(trx, payment.recurring_consent_id);
      if (consent && consent.status === 'active') {
        await updateConsent(
          trx,
          consent.id,
          consentEnded === 'revoked'
            ? { status: 'revoked', revoked_by: 'bank', revoked_at: now, updated_at: now }
            : { status: 'expired', expired_at: now, updated_at: now },
        );
        if (consentEnded === 'revoked') await noticeConsentRevoked(trx, consent, 'bank', now);
      }
    }
    if (settledAlready(payment, outcome)) return payment;
    await followUp(trx, payment);
    return setPaymentStatus(trx, payment, outcome.status, now, extra);
  }
}

/** Whether recording `outcome` would change nothing: the payment has it already, or has settled. */
function settledAlready(payment: PaymentRow, outcome: Outcome): boolean {
  return payment.status === outcome.status || payment.status === 'successful' || payment.status === 'failed';
}

/** Queues the settle job of a payment at a real time (a no-op when it has one). */
async function queueSettle(
  trx: Db,
  deps: Deps,
  payment: Pick<PaymentRow, 'id' | 'user_id' | 'mode'>,
  runAt: number,
): Promise<void> {
  await enqueue(
    trx,
    {
      kind: SETTLE_EXECUTION_JOB,
      runAt,
      clockId: clockIdOf(payment),
      payload: { payment_id: payment.id },
      dedupeKey: `${SETTLE_EXECUTION_JOB}:${payment.id}`,
    },
    deps.clock.now(),
  );
}

/**
 * Gives every execution still in flight the settle job, due two minutes after its reservation on
 * its owner's clock (a test clock moved on makes it due sooner, as it does every job of that
 * clock). One under way gets it too, and the job finds it recorded by then.
 */
export async function queueSettlesOfExecutionsInFlight(deps: Deps): Promise<number> {
  const clocks = new Map<string, Clock>();
  const inFlight = await executionsInFlight(deps.db, RECOVER_BATCH);
  const due: Array<{ payment: (typeof inFlight)[number]; runAt: number }> = [];
  for (const payment of inFlight) {
    const key = `${payment.mode}:${payment.user_id}`;
    let clock = clocks.get(key);
    if (!clock) clocks.set(key, (clock = await clockOf(deps, payment)));
    due.push({ payment, runAt: realTimeOf(payment.updated_at + SETTLE_AFTER_MS, clock) });
  }
  // One transaction for the sweep's jobs, not one (and one commit) each.
  if (due.length > 0) {
    await deps.store.transaction(async (trx) => {
      for (const { payment, runAt } of due) await queueSettle(trx, deps, payment, runAt);
    });
  }
  return inFlight.length;
}

/** Job: the sweep of interrupted executions, every minute (the same job, so there is always one). */
export function recoverExecutionsJob(deps: Deps): JobHandler {
  return async (_payload, { log }) => {
    try {
      await queueSettlesOfExecutionsInFlight(deps);
    } catch (error) {
      // A sweep that failed is simply run again; the job must not give up after its retries.
      log.error({ err: error }, 'could not look for interrupted executions');
    }
    return { retryAt: deps.clock.now() + RECOVER_EVERY_MS };
  };
}

/**
 * At start: makes sure the sweep exists, and makes it due now, so that a process restarted after a
 * crash settles what the crash interrupted without waiting for the minute.
 */
export async function scheduleExecutionRecovery(deps: Deps): Promise<void> {
  const now = deps.clock.now();
  await deps.store.transaction(async (trx) => {
    await enqueue(
      trx,
      { kind: RECOVER_EXECUTIONS_JOB, runAt: now, payload: {}, dedupeKey: RECOVER_EXECUTIONS_JOB },
      now,
    );
    await bringQueuedJobForward(trx, RECOVER_EXECUTIONS_JOB, now);
  });
}

/**
 * A payment given up on while it still awaits the bank's answer becomes unconfirmed, with no settle
 * job, so the sweep of executions in flight (which looks for awaiting-consent) stops finding it.
 */
async function leaveUnconfirmed(deps: Deps, payment: PaymentRow, now: number): Promise<void> {
  await deps.store.transaction(async (trx) => {
    const held = await holdPaymentToRecord(trx, payment.id);
    if (held?.status !== 'awaiting-consent') return;
    await followStatusChange(trx, held, 'unconfirmed');
    await setPaymentStatus(trx, held, 'unconfirmed', now);
  });
}

/**
 * The bank's word on a recurring payment it never named (waitsForBankWord), as an operator records
 * it: a payment the bank did not make stops counting against the consent's limits, and the audit
 * trail names the operator. Null when the payment is not waiting for it (any more).
 */
export async function settleExecutionByHand(
  deps: Pick<Deps, 'store'>,
  paymentId: string,
  word: BankWord,
  now: number,
  by: AuditBy,
): Promise<PaymentRow | null> {
  return deps.store.transaction(async (trx) => {
    const payment = await holdPaymentToRecord(trx, paymentId);
    if (!payment?.recurring_consent_id || !waitsForBankWord(payment, now)) return null;
    await followStatusChange(trx, payment, word.status);
    const settled = await setPaymentStatus(trx, payment, word.status, now, extrasOfWord(word));
    await auditSettledByHand(trx, payment, settled, now, by);
    return settled;
  });
}

/** 20 s doubling to 10 minutes: a bank that has not settled is asked again, less and less often. */
const SETTLE_BACKOFF: Backoff = { baseMs: 20_000, maxMs: 10 * 60_000, jitter: false };

/**
 * Job: a payment still in flight or unconfirmed after the execution returned (a crash between
 * reserving and recording, a timeout, a bank that has not settled). Submitting again with the same
 * x-idempotency-key is safe: the bank answers with the one payment it holds for that key.
 */
export function settleExecutionJob(deps: Deps): JobHandler {
  return async (payload: { payment_id: string }, { job, clock }) => {
    const payment = await findPaymentById(deps.db, payload.payment_id);
    if (!payment?.recurring_consent_id || !['awaiting-consent', 'unconfirmed'].includes(payment.status)) return;
    const consent = await findConsentById(deps.db, payment.recurring_consent_id);
    if (!consent) return;
    const again = (error: string) => ({
      retryAt: deps.clock.now() + backoffDelayMs(job.attempts, SETTLE_BACKOFF),
      error,
    });
    // Taken or not, the bank may hold it: no connector now is no answer, never a refusal.
    if (!connectorFor(deps, consent.bank_id, consent.mode)) return again('the bank is not connected');
    // Never named by the bank: only sending it again under its key can tell, and the bank may hold it.
    const resending = payment.bank_payment_id === null;
    if (resending && !mayResendUnderKey(payment.created_at, clock.now())) {
      // The bank may now take its key for a new payment: it stays unconfirmed, counted against the
      // consent's limits, with no job left to send it, until someone has the bank's word.
      await leaveUnconfirmed(deps, payment, clock.now());
      deps.log.error(
        { payment_id: payment.id, recurring_consent_id: consent.id },
        'a recurring payment the bank never answered for 23 hours is not sent again: it stays unconfirmed',
      );
      return;
    }
    const recorded = await submitAndRecord(deps, consent, payment, clock.now(), clock, SETTLE_EXECUTION_JOB, {
      resending,
    });
    if (recorded.status === 'unconfirmed' || recorded.status === 'awaiting-consent')
      return again('not settled at the bank yet');
  };
}
