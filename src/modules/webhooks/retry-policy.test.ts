import { test } from 'node:test';
import assert from 'node:assert/strict';
import fc from 'fast-check';
import { backoffCeilingMs, backoffDelayMs, DELIVERY_POLICY, isAcknowledged, nextAttemptAt } from './retry-policy.ts';

test('the ceiling starts at 0.25 s, doubles, and stops at 10 s', () => {
  assert.deepEqual(
    [1, 2, 3, 4, 5, 6, 7, 8, 20].map((n) => backoffCeilingMs(n)),
    [250, 500, 1000, 2000, 4000, 8000, 10000, 10000, 10000],
  );
});

test('every wait lies between 0.25 s and the ceiling of its attempt', () => {
  fc.assert(
    fc.property(
      fc.integer({ min: 1, max: 40 }),
      fc.double({ min: 0, max: 1, maxExcluded: true, noNaN: true }),
      (attempt, random) => {
        const delay = backoffDelayMs(attempt, random);
        assert.ok(delay >= 250 && delay <= backoffCeilingMs(attempt) && delay <= 10_000);
      },
    ),
  );
});

test('never more than 20 attempts, never an attempt more than 10 minutes after the first', () => {
  fc.assert(
    fc.property(
      fc.array(
        fc.tuple(fc.double({ min: 0, max: 1, maxExcluded: true, noNaN: true }), fc.integer({ min: 0, max: 120_000 })),
        { minLength: 25, maxLength: 25 },
      ),
      (steps) => {
        // Simulate a delivery whose every attempt fails; each attempt takes `spent` ms (timeouts, queueing).
        const first = 1_000_000;
        let now = first;
        let attempts = 1;
        for (const [random, spent] of steps) {
          now += spent;
          const next = nextAttemptAt({ attempt: attempts, firstAttemptAt: first, now, random });
          if (next === null) break;
          assert.ok(next > now);
          assert.ok(next - first <= DELIVERY_POLICY.maxDurationMs);
          now = next;
          attempts += 1;
        }
        assert.ok(attempts <= 20);
      },
    ),
  );
});

test('fast failures use all 20 attempts well inside the 10 minutes', () => {
  let now = 0;
  let attempts = 1;
  for (;;) {
    const next = nextAttemptAt({ attempt: attempts, firstAttemptAt: 0, now, random: 0.999 });
    if (next === null) break;
    now = next;
    attempts += 1;
  }
  assert.equal(attempts, 20);
  assert.ok(now < 10 * 60_000);
});

test('any 2xx acknowledges, nothing else does', () => {
  assert.deepEqual([200, 201, 202, 204, 299].map(isAcknowledged), [true, true, true, true, true]);
  assert.deepEqual([null, 100, 301, 304, 400, 401, 410, 500, 503].map(isAcknowledged), [
    false,
    false,
    false,
    false,
    false,
    false,
    false,
    false,
    false,
  ]);
});
