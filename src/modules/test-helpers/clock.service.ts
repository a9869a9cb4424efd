import type { FastifyRequest } from 'fastify';
import { parseDateTime } from '../../shared/date-time.ts';
import { AppError, invalidParam } from '../../shared/errors.ts';
import { iso } from '../../shared/time.ts';
import { addToTestClockOffset, testClockOffsetOf as clockOffset } from '../merchants/merchants.service.ts';
import { nextJobOfClock, shiftJobsOfClock } from '../../jobs/queue.ts';
import type { Ctx, Deps } from '../context.ts';
import type { Db } from '../../store/db.ts';
import { recordAuditFor } from '../audit/audit.service.ts';

export function requireTestMode(ctx: Ctx): void {
  if (ctx.mode !== 'test')
    throw new AppError('not_found.route', 'Test helpers exist only for test keys (sk_test_…)', {});
}

/** onRequest hook after apiKeyAuth: a live key gets 404 before its body is even looked at. */
export async function testKeysOnly(request: FastifyRequest): Promise<void> {
  requireTestMode(request.ctx);
}

const advancing = new Map<string, Promise<unknown>>();

/** One advance at a time per merchant, in this process. */
function serialised<T>(key: string, work: () => Promise<T>): Promise<T> {
  const previous = advancing.get(key) ?? Promise.resolve();
  const next = previous.then(work, work);
  advancing.set(
    key,
    next.catch(() => {}),
  );
  return next;
}

/**
 * How far ahead of real time a test clock may be: 20 years (of 366 days). Each advance runs the
 * work due on the way and keeps what it makes (payments, events, mail files), so a bound on one
 * advance alone let advances one after another make that work without end; at this bound the clock
 * moves no faster than real time.
 */
export const MAX_AHEAD_SECONDS = 20 * 366 * 86_400;
const MAX_AHEAD_MS = MAX_AHEAD_SECONDS * 1000;

/** The refusal of an advance past the cap, saying the furthest the clock may go now. */
function beyondCap(field: 'to' | 'seconds', now: number, realNow: number): AppError {
  const maximum = realNow + MAX_AHEAD_MS;
  if (field === 'to') {
    return invalidParam(
      'to',
      `to may be at most 20 years ahead of real time: the test clock can be advanced to ${iso(maximum)} at the latest`,
      { now: iso(now), maximum: iso(maximum) },
    );
  }
  const most = Math.max(0, Math.floor((maximum - now) / 1000));
  return invalidParam(
    'seconds',
    `seconds would take the test clock more than 20 years ahead of real time: it can be advanced by at most ${most} seconds now, to ${iso(maximum)} at the latest`,
    { now: iso(now), maximum: iso(maximum), maximum_seconds: most },
  );
}

type Refusal = (now: number, realNow: number) => AppError;
const refuseTo: Refusal = (now, realNow) => beyondCap('to', now, realNow);

/** Records the advance in the transaction of its first move (audit trail). */
type AuditMove = (trx: Db) => Promise<void>;

async function shiftClock(
  deps: Deps,
  userId: string,
  deltaMs: number,
  refuse: Refusal,
  audit: AuditMove | null = null,
): Promise<void> {
  await deps.store.transaction(async (trx) => {
    await addToTestClockOffset(trx, userId, deltaMs);
    // Read back in the same transaction: another process advancing the same clock at once passes
    // its own check against the offset it read, and only the sum, seen here, shows the cap crossed.
    const offset = await clockOffset(trx, userId);
    if (offset > MAX_AHEAD_MS) {
      const realNow = deps.clock.now();
      throw refuse(realNow + offset - deltaMs, realNow);
    }
    await shiftJobsOfClock(trx, userId, deltaMs);
    await audit?.(trx);
  });
}

export async function clockNow(deps: Deps, userId: string): Promise<number> {
  return deps.clock.now() + (await clockOffset(deps.db, userId));
}

export type Advanced = { now: number; workRemaining: boolean };

/**
 * Moves a merchant's test clock to `target`, stopping at each job due on the way so that charges,
 * retries, expiries and sweeps run in order with the clock at their own time. Runs at most
 * `maxJobs` jobs: past that, the clock stays where the work stopped and `workRemaining` says so
 * (advance again to go on), so one call cannot keep the service busy without end.
 */
export async function advanceTestClock(
  deps: Deps,
  userId: string,
  target: number,
  maxJobs = Number.POSITIVE_INFINITY,
): Promise<Advanced> {
  return serialised(userId, async () => {
    const realNow = deps.clock.now();
    if (target > realNow + MAX_AHEAD_MS) throw refuseTo(await clockNow(deps, userId), realNow);
    return advanceTo(deps, userId, target, maxJobs, refuseTo);
  });
}

/** Due jobs run in slices of at most this many, so the time budget is looked at between slices. */
const DRAIN_SLICE = 200;

/**
 * advanceTestClock's work, in its merchant's turn, after the target was checked against the cap.
 * Stops early, where the work stopped, after `maxJobs` jobs or once `maxMs` of real time has gone
 * (looked at between slices of jobs), so one call holds the merchant's clock and a worker for a
 * bounded time however much work is due.
 */
async function advanceTo(
  deps: Deps,
  userId: string,
  target: number,
  maxJobs: number,
  refuse: Refusal,
  audit: AuditMove | null = null,
  maxMs = Number.POSITIVE_INFINITY,
): Promise<Advanced> {
  const deadline = performance.now() + maxMs;
  let budget = maxJobs;
  let unrecorded = audit;
  for (;;) {
    const offset = await clockOffset(deps.db, userId);
    const now = deps.clock.now() + offset;
    const next = await nextJobOfClock(deps.db, userId);
    const nextAt = next !== null ? next + offset : null;
    const stepTo = nextAt !== null && nextAt < target ? nextAt : target;
    if (stepTo > now) {
      await shiftClock(deps, userId, stepTo - now, refuse, unrecorded);
      unrecorded = null;
    }
    const slice = Math.min(budget, DRAIN_SLICE);
    const ran = await deps.worker.drain(userId, slice);
    budget -= ran;
    if (budget <= 0 || performance.now() >= deadline) {
      const left = await nextJobOfClock(deps.db, userId);
      const reached = await clockNow(deps, userId);
      return {
        now: reached,
        workRemaining: reached < target || (left !== null && left + (await clockOffset(deps.db, userId)) <= target),
      };
    }
    // A full slice may have left jobs due at this time: run them before moving on.
    if (stepTo >= target && ran < slice) return { now: await clockNow(deps, userId), workRemaining: false };
  }
}

/**
 * Sets the merchant's test clock back to real time (its offset to zero). Work scheduled on the clock
 * keeps its time on the clock, as on every move: a charge due on the 9th of March on the clock is
 * still due then, which the reset clock reaches later, as real time passes or by advancing it.
 * Nothing that ran runs again, and nothing runs early; objects made while the clock was ahead keep
 * their times, now in the clock's future. Work on real time (webhook deliveries and their retries,
 * email) is not on the clock and does not move.
 */
export async function resetClock(ctx: Ctx) {
  requireTestMode(ctx);
  const { deps } = ctx;
  const userId = ctx.merchant.id;
  await serialised(userId, () =>
    deps.store.transaction(async (trx) => {
      // Written first so that the merchant's row is locked (PostgreSQL): an advance by another
      // process waits for the reset, or the reset for it, and the offset read is the one undone.
      await addToTestClockOffset(trx, userId, 0);
      const offset = await clockOffset(trx, userId);
      if (offset === 0) return;
      await addToTestClockOffset(trx, userId, -offset);
      await shiftJobsOfClock(trx, userId, -offset);
      await recordAuditFor(trx, ctx, 'test_clock.reset', null, {
        offset_seconds: { from: Math.round(offset / 1000), to: 0 },
      });
    }),
  );
  return getClock(ctx);
}

export async function getClock(ctx: Ctx) {
  requireTestMode(ctx);
  const now = await clockNow(ctx.deps, ctx.merchant.id);
  return { clock: { now: iso(now), offset_seconds: Math.round((now - ctx.deps.clock.now()) / 1000) } };
}

export async function advanceClock(ctx: Ctx, input: { to?: string; seconds?: number }) {
  requireTestMode(ctx);
  if ((input.to === undefined) === (input.seconds === undefined)) {
    throw invalidParam('to', 'Give exactly one of to (an ISO 8601 time) or seconds');
  }
  const { deps } = ctx;
  const userId = ctx.merchant.id;
  const field = input.to !== undefined ? 'to' : 'seconds';
  const refuse: Refusal = (now, realNow) => beyondCap(field, now, realNow);
  // Checked in the merchant's turn: two advances checked side by side against the same clock
  // would each pass, and together pass the cap.
  const reached = await serialised(userId, async () => {
    const now = await clockNow(deps, userId);
    let target: number;
    if (input.to !== undefined) {
      const to = parseDateTime(input.to);
      if (to === null) throw invalidParam('to', 'to must be an ISO 8601 date-time');
      target = to;
      if (target <= now)
        throw invalidParam('to', "to must be later than the clock's current time; test clocks only move forward", {
          now: iso(now),
        });
    } else {
      target = now + input.seconds! * 1000;
    }
    const realNow = deps.clock.now();
    if (target > realNow + MAX_AHEAD_MS) throw refuse(now, realNow);
    const audit: AuditMove = (trx) =>
      recordAuditFor(trx, ctx, 'test_clock.advance', null, { from: iso(now), to: iso(target) });
    return advanceTo(
      deps,
      userId,
      target,
      deps.config.testClockMaxJobs,
      refuse,
      audit,
      deps.config.testClockMaxSeconds * 1000,
    );
  });
  return {
    clock: { now: iso(reached.now), offset_seconds: Math.round((reached.now - deps.clock.now()) / 1000) },
    work_remaining: reached.workRemaining,
  };
}
