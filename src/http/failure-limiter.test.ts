import { test } from 'node:test';
import assert from 'node:assert/strict';
import fc from 'fast-check';
import { randomBytes } from 'node:crypto';
import { apiClient, buildTestApp, createTestMerchant } from '../../test/helpers.ts';
import { shiftedClock, systemClock } from '../shared/time.ts';
import { FailureLimiter } from './failure-limiter.ts';

test('FailureLimiter: at most max failures per window, then refused until the window ends; keys are independent', () => {
  fc.assert(fc.property(fc.integer({ min: 1, max: 20 }), fc.array(fc.integer({ min: 0, max: 5_000 }), { maxLength: 60 }), (max, gaps) => {
    const limiter = new FailureLimiter({ max, windowMs: 1_000 });
    let now = 0;
    let windowStart = -Infinity;
    let failures = 0;
    for (const gap of gaps) {
      now += gap;
      if (now - windowStart >= 1_000) { windowStart = now; failures = 0; }
      const check = limiter.check('ip', now);
      assert.equal(check.ok, failures < max);
      if (!check.ok) assert.equal(check.retryAfterMs, windowStart + 1_000 - now);
      if (check.ok) { limiter.fail('ip', now); failures += 1; }
      assert.equal(limiter.check('other', now).ok, true);
    }
  }));
  const off = new FailureLimiter({ max: 0, windowMs: 1_000 });
  for (let i = 0; i < 100; i++) off.fail('ip', 0);
  assert.equal(off.check('ip', 0).ok, true);
});

test('guessing API keys: after 30 failures a minute from one address, 429 with Retry-After; a minute later it may try again', async (t) => {
  const app = await buildTestApp(t, { authFailuresPerMinute: 30 });
  const merchant = await createTestMerchant(app);
  for (let i = 0; i < 30; i++) {
    const guess = await apiClient(app, `sk_test_${randomBytes(24).toString('base64url')}`).get('/v1/requests');
    assert.equal(guess.status, 401);
  }
  const blocked = await apiClient(app, `sk_test_${randomBytes(24).toString('base64url')}`).get('/v1/requests');
  assert.equal(blocked.status, 429);
  assert.equal(blocked.body.code, 'rate_limited');
  assert.match(blocked.body.message, /^Too many failed authentications from this address; retry after \d+ s$/);
  assert.ok(Number(blocked.headers['retry-after']) >= 1 && Number(blocked.headers['retry-after']) <= 60);
  // the address is refused whatever it sends, so a found key cannot be told apart
  assert.equal((await apiClient(app, merchant.testKey).get('/v1/requests')).status, 429);
  assert.equal((await app.app.inject({ method: 'GET', url: '/v1/requests', remoteAddress: '10.9.8.7', headers: { authorization: `Bearer ${merchant.testKey}` } })).statusCode, 200, 'another address is not affected');
  app.deps.clock = shiftedClock(systemClock, 61_000);
  assert.equal((await apiClient(app, merchant.testKey).get('/v1/requests')).status, 200);
});
