import { test } from 'node:test';
import assert from 'node:assert/strict';
import fc from 'fast-check';
import { iso, lastWindowCache } from './time.ts';

test('iso writes what toISOString writes, for instants met again and for more than it remembers', () => {
  const instant = fc.integer({ min: -8.64e15, max: 8.64e15 });
  fc.assert(
    fc.property(fc.array(instant, { minLength: 1, maxLength: 6000 }), (instants) => {
      for (const ms of [...instants, ...instants.slice(0, 50)]) assert.equal(iso(ms), new Date(ms).toISOString());
    }),
    { numRuns: 40 },
  );
  assert.throws(() => iso(Number.NaN), RangeError);
  assert.throws(() => iso(8.64e15 + 1), RangeError);
});

test('lastWindowCache answers from the last window while the instant is inside it, per key', () => {
  const cached = lastWindowCache();
  let finds = 0;
  const window = (start: number) => () => {
    finds += 1;
    return { start, end: start + 10 };
  };
  assert.deepEqual(cached('a', 5, window(0)), { start: 0, end: 10 });
  assert.deepEqual(cached('a', 9, window(99)), { start: 0, end: 10 }, 'inside: reused');
  assert.equal(finds, 1);
  assert.deepEqual(cached('a', 10, window(10)), { start: 10, end: 20 }, 'the end is outside');
  assert.deepEqual(cached('b', 15, window(100)), { start: 100, end: 110 }, 'another key has its own');
  assert.equal(finds, 3);
  const answer = cached('a', 12, window(0));
  answer.start = -1;
  assert.deepEqual(cached('a', 12, window(0)), { start: 10, end: 20 }, 'a caller changing its copy changes nothing');
});
