import { test } from 'node:test';
import assert from 'node:assert/strict';
import { lastWindowCache } from './time.ts';

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
