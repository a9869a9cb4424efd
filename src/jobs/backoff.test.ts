import { test } from 'node:test';
import assert from 'node:assert/strict';
import fc from 'fast-check';
import { backoffCeilingMs, backoffDelayMs, DEFAULT_BACKOFF, type Backoff } from './backoff.ts';

const backoffs = fc.record({
  baseMs: fc.integer({ min: 1, max: 60_000 }),
  maxMs: fc.integer({ min: 60_000, max: 86_400_000 }),
  jitter: fc.boolean(),
}) as fc.Arbitrary<Backoff>;
const randoms = fc.double({ min: 0, max: 1, maxExcluded: true, noNaN: true });

test('every wait lies between the base and the ceiling, and the ceiling never passes the cap', () => {
  fc.assert(
    fc.property(backoffs, fc.integer({ min: 1, max: 1_000 }), randoms, (backoff, attempt, random) => {
      const ceiling = backoffCeilingMs(attempt, backoff);
      const delay = backoffDelayMs(attempt, backoff, random);
      assert.ok(ceiling <= backoff.maxMs);
      assert.ok(delay >= Math.min(backoff.baseMs, ceiling) && delay <= ceiling);
    }),
  );
});

test('the ceiling doubles from the base until the cap, and never shrinks', () => {
  fc.assert(
    fc.property(backoffs, fc.integer({ min: 1, max: 60 }), (backoff, attempt) => {
      const now = backoffCeilingMs(attempt, backoff);
      const next = backoffCeilingMs(attempt + 1, backoff);
      assert.ok(next >= now);
      assert.equal(next, Math.min(backoff.maxMs, now * 2));
    }),
  );
});

test('without jitter the wait is the ceiling, whatever the randomness', () => {
  fc.assert(
    fc.property(fc.integer({ min: 1, max: 100 }), randoms, (attempt, random) => {
      assert.equal(backoffDelayMs(attempt, DEFAULT_BACKOFF, random), backoffCeilingMs(attempt, DEFAULT_BACKOFF));
    }),
  );
  assert.deepEqual(
    [1, 2, 3, 12, 13].map((n) => backoffDelayMs(n, DEFAULT_BACKOFF)),
    [2_000, 4_000, 8_000, 3_600_000, 3_600_000],
  );
});
