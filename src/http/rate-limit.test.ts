import { test } from 'node:test';
import assert from 'node:assert/strict';
import fc from 'fast-check';
import { TokenBuckets } from './rate-limit.ts';
import { apiClient, buildTestApp, createTestMerchant } from '../../test/helpers.ts';

test('never more than burst + rate × elapsed calls are allowed, and an idle key gets its burst back', () => {
  fc.assert(
    fc.property(
      fc.integer({ min: 1, max: 50 }),
      fc.array(fc.integer({ min: 0, max: 200 }), { minLength: 1, maxLength: 300 }),
      (perSecond, gaps) => {
        const buckets = new TokenBuckets(perSecond);
        let now = 0;
        let allowed = 0;
        for (const gap of gaps) {
          now += gap;
          if (buckets.take('key', now).ok) allowed += 1;
        }
        assert.ok(allowed <= perSecond * 2 + (now / 1000) * perSecond + 1e-9);
        const later = now + 10_000_000;
        for (let i = 0; i < perSecond * 2; i++) assert.equal(buckets.take('key', later).ok, true);
        const refused = buckets.take('key', later);
        assert.equal(refused.ok, false);
        if (!refused.ok) assert.ok(refused.retryAfterMs > 0 && refused.retryAfterMs <= Math.ceil(1000 / perSecond));
      },
    ),
  );
});

test('keys do not share a bucket', () => {
  const buckets = new TokenBuckets(1, 1);
  assert.equal(buckets.take('a', 0).ok, true);
  assert.equal(buckets.take('a', 0).ok, false);
  assert.equal(buckets.take('b', 0).ok, true);
});

test('over the limit, an API key gets 429 rate_limited with Retry-After; other keys are unaffected', async (t) => {
  const app = await buildTestApp(t, { rateLimitPerSecond: 2 });
  const merchant = await createTestMerchant(app);
  const api = apiClient(app, merchant.testKey);
  const statuses = [];
  for (let i = 0; i < 6; i++) statuses.push((await api.get('/v1/requests')).status);
  assert.deepEqual(statuses.slice(0, 4), [200, 200, 200, 200], 'a burst of twice the rate passes');
  const refused = await api.get('/v1/requests');
  assert.equal(refused.status, 429);
  assert.deepEqual(refused.body, {
    code: 'rate_limited',
    message: 'Too many requests for this API key: at most 2 a second; retry after 1 s',
    params: { limit_per_second: 2, retry_after_seconds: 1 },
  });
  assert.equal(refused.headers['retry-after'], '1');
  assert.equal((await apiClient(app, merchant.liveKey).get('/v1/requests')).status, 200);
});
