import { countJobsOfClock, deleteJobsOfClock } from '../../jobs/queue.ts';
import { countIdempotencyKeys, forgetIdempotencyKeys } from '../../http/idempotency.ts';
import type { Ctx } from '../context.ts';
import { recordAuditFor } from '../audit/audit.service.ts';
import type { Contributions, TestData } from '../manifest.ts';
import { requireTestMode } from './clock.service.ts';

// Deleting a merchant's test data (docs/api-conventions.md, "Deleting test data"): every module's
// rows of the merchant's test mode, as their manifests declare them (TestData), in one transaction,
// with no event. Settings stay: API keys, webhook endpoints, bank accounts, the test clock.

export type TestDataParts = Contributions['testData'];
export type TestDataCounts = Record<string, number>;

/**
 * The test helpers' own part: the work scheduled on the merchant's test clock (in src/jobs) and
 * the replies kept for their test-mode Idempotency-Keys (in src/http), which no module owns.
 */
export const clockAndKeysTestData: TestData = {
  kinds: {
    scheduled_jobs: 'Work scheduled on the test clock',
    idempotency_keys: 'Replies kept for Idempotency-Key',
  },
  count: async (db, userId) => ({
    scheduled_jobs: await countJobsOfClock(db, userId),
    idempotency_keys: await countIdempotencyKeys(db, { userId, mode: 'test' }),
  }),
  delete: async (trx, userId) => ({
    scheduled_jobs: await deleteJobsOfClock(trx, userId),
    idempotency_keys: await forgetIdempotencyKeys(trx, { userId, mode: 'test' }),
  }),
};

/** Every kind, by name, with what the dashboard calls it, in the order of the module list. */
export function testDataKinds(parts: TestDataParts): Array<{ name: string; label: string }> {
  return [...parts].reverse().flatMap((part) => Object.entries(part.kinds).map(([name, label]) => ({ name, label })));
}

/** Counts by kind, every kind named, in the order of the module list. */
function inOrder(parts: TestDataParts, counts: TestDataCounts): TestDataCounts {
  return Object.fromEntries(testDataKinds(parts).map(({ name }) => [name, counts[name] ?? 0]));
}

/** How much test data the merchant has, by kind: what deleting it would delete now. */
export async function countTestData(ctx: Ctx, parts: TestDataParts): Promise<TestDataCounts> {
  requireTestMode(ctx);
  const counts: TestDataCounts = {};
  for (const part of parts) Object.assign(counts, await part.count(ctx.db, ctx.merchant.id));
  return inOrder(parts, counts);
}

/**
 * A write that pointed at the merchant's test data while it was being deleted (PostgreSQL: a row
 * written for an object that no lock covered, or two transactions waiting on each other): the
 * deletion rolled back whole, and is run again.
 */
function isConcurrentWrite(error: unknown): boolean {
  const code = (error as { code?: unknown })?.code;
  return code === '23503' || code === '40P01' || code === '40001';
}

/** Tries at most, when concurrent writes roll the deletion back. */
const TRIES = 3;

/**
 * Deletes all of the merchant's test data, in one transaction: everything or, if it fails,
 * nothing. No event is written (so no webhook is sent) and no email queued. First every module
 * holds the rows its jobs lock, then each deletes its own, the modules whose rows point at
 * another's first. Returns how many of each kind were deleted.
 */
export async function deleteTestData(ctx: Ctx, parts: TestDataParts): Promise<TestDataCounts> {
  requireTestMode(ctx);
  const userId = ctx.merchant.id;
  for (let tries = 1; ; tries++) {
    try {
      const deleted = await ctx.deps.store.transaction(async (trx) => {
        for (const part of parts) await part.hold?.(trx, userId);
        const counts: TestDataCounts = {};
        for (const part of parts) Object.assign(counts, await part.delete(trx, userId));
        await recordAuditFor(trx, ctx, 'test_data.delete', null, { deleted: counts });
        return counts;
      });
      ctx.log.info({ deleted }, 'test data deleted');
      return inOrder(parts, deleted);
    } catch (error) {
      if (tries >= TRIES || !isConcurrentWrite(error)) throw error;
      ctx.log.warn({ err: error }, 'deleting test data met a concurrent write; trying again');
    }
  }
}
