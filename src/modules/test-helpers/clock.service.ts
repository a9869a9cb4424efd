import type { FastifyRequest } from 'fastify';
import { AppError, invalidParam } from '../../shared/errors.ts';
import { iso } from '../../shared/time.ts';
import { addToTestClockOffset, testClockOffsetOf as clockOffset } from '../merchants/merchants.service.ts';
import { nextJobOfClock, shiftJobsOfClock } from '../../jobs/queue.ts';
import { transact } from '../../store/tx.ts';
import type { Ctx, Deps } from '../context.ts';

export function requireTestMode(ctx: Ctx): void {
  if (ctx.mode !== 'test') throw new AppError('not_found.route', 'Test helpers exist only for test keys (sk_test_…)', {});
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
  advancing.set(key, next.catch(() => {}));
  return next;
}

async function shiftClock(deps: Deps, userId: string, deltaMs: number): Promise<void> {
  await transact(deps.db, async (trx) => {
    await addToTestClockOffset(trx, userId, deltaMs);
    await shiftJobsOfClock(trx, userId, deltaMs);
  });
}

export async function clockNow(deps: Deps, userId: string): Promise<number> {
  return deps.clock.now() + (await clockOffset(deps.db, userId));
}

/** The furthest one advance may move a test clock, whether given as `seconds` or `to`. */
export const MAX_ADVANCE_SECONDS = 20 * 366 * 86_400;

export type Advanced = { now: number; workRemaining: boolean };

/**
 * Moves a merchant's test clock to `target`, stopping at each job due on the way so that charges,
 * retries, expiries and sweeps run in order with the clock at their own time. Runs at most
 * `maxJobs` jobs: past that, the clock stays where the work stopped and `workRemaining` says so
 * (advance again to go on), so one call cannot keep the service busy without end.
 */
export async function advanceTestClock(deps: Deps, userId: string, target: number, maxJobs = Number.POSITIVE_INFINITY): Promise<Advanced> {
  return serialised(userId, async () => {
    let budget = maxJobs;
    for (;;) {
      const offset = await clockOffset(deps.db, userId);
      const now = deps.clock.now() + offset;
      const next = await nextJobOfClock(deps.db, userId);
      const nextAt = next !== null ? next + offset : null;
      const stepTo = nextAt !== null && nextAt < target ? nextAt : target;
      if (stepTo > now) await shiftClock(deps, userId, stepTo - now);
      budget -= await deps.worker.drain(userId, budget);
      if (budget <= 0) {
        const left = await nextJobOfClock(deps.db, userId);
        const reached = await clockNow(deps, userId);
        return { now: reached, workRemaining: reached < target || (left !== null && left + (await clockOffset(deps.db, userId)) <= target) };
      }
      if (stepTo >= target) return { now: await clockNow(deps, userId), workRemaining: false };
    }
  });
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
  const now = await clockNow(ctx.deps, ctx.merchant.id);
  let target: number;
  if (input.to !== undefined) {
    target = Date.parse(input.to);
    if (!Number.isFinite(target)) throw invalidParam('to', 'to must be an ISO 8601 date-time');
    if (target <= now) throw invalidParam('to', 'to must be later than the clock\'s current time; test clocks only move forward', { now: iso(now) });
    if (target - now > MAX_ADVANCE_SECONDS * 1000) {
      throw invalidParam('to', `to must be at most ${MAX_ADVANCE_SECONDS} seconds (20 years) after the clock's current time`, { now: iso(now), maximum: iso(now + MAX_ADVANCE_SECONDS * 1000) });
    }
  } else {
    target = now + input.seconds! * 1000;
  }
  const reached = await advanceTestClock(ctx.deps, ctx.merchant.id, target, ctx.deps.config.testClockMaxJobs);
  return { clock: { now: iso(reached.now), offset_seconds: Math.round((reached.now - ctx.deps.clock.now()) / 1000) }, work_remaining: reached.workRemaining };
}
