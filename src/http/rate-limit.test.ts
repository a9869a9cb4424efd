import { test } from 'node:test';
import assert from 'node:assert/strict';
import fc from 'fast-check';
import { SharedTokenBuckets, TokenBuckets, type ReportUse, type TakeResult } from './rate-limit.ts';
import { apiClient, buildTestApp, createTestMerchant, freshDb } from '../../test/helpers.ts';
import { migrateToLatest } from '../store/migrate.ts';
import { reportBucketUse } from '../store/rate-buckets.ts';

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

/** The shared table as src/store/rate-buckets.ts keeps it, answering after `delayMs` (a round trip). */
function sharedTable(perSecond: number, burst: number, delayMs: () => number) {
  const rows = new Map<string, { tokens: number; at: number }>();
  let reports = 0;
  const report: ReportUse = async (uses, now) => {
    reports += 1;
    await new Promise((resolve) => setTimeout(resolve, delayMs()));
    const levels = new Map<string, number>();
    for (const { key, used } of uses) {
      const row = rows.get(key);
      const tokens = row
        ? Math.max(-burst, Math.min(burst, row.tokens + Math.max(0, now - row.at) * (perSecond / 1000)) - used)
        : burst - used;
      rows.set(key, { tokens, at: Math.max(row?.at ?? now, now) });
      levels.set(key, tokens);
    }
    return levels;
  };
  return { report, reports: () => reports };
}

test('processes sharing a bucket let a key through at most the bucket plus 2 × (processes − 1) shares, and at its rate', async (t) => {
  t.mock.timers.enable({ apis: ['setTimeout', 'Date'], now: 0 });
  const flush = async () => {
    for (let i = 0; i < 20; i++) await Promise.resolve();
  };
  for (const [processes, perSecond, roundTripMs] of [
    [2, 100, 1],
    [3, 100, 3],
    [4, 40, 2],
    [2, 2, 1],
  ] as const) {
    const start = Date.now();
    const burst = perSecond * 2;
    const share = Math.max(1, Math.ceil(perSecond * 0.05));
    const table = sharedTable(perSecond, burst, () => roundTripMs);
    const limiters = Array.from(
      { length: processes },
      () => new SharedTokenBuckets({ perSecond, report: table.report, now: () => Date.now() }),
    );
    let allowed = 0;
    let excess = 0;
    const count = (result: TakeResult) => {
      if (result.ok) allowed += 1;
    };
    // Three calls a millisecond at every process, for three seconds: far over the rate.
    for (let ms = 0; ms < 3_000; ms++) {
      for (const limiter of limiters)
        for (let call = 0; call < 3; call++) {
          const result = limiter.take('key', Date.now());
          if (result instanceof Promise) void result.then(count);
          else count(result);
        }
      await flush();
      excess = Math.max(excess, allowed - (burst + ((Date.now() - start) / 1000) * perSecond));
      t.mock.timers.tick(1);
    }
    for (let i = 0; i < 20; i++) {
      t.mock.timers.tick(5);
      await flush();
    }
    const label = `${processes} processes, ${perSecond}/s`;
    assert.ok(excess <= 2 * (processes - 1) * share, `${label}: ${excess} over the bucket`);
    assert.ok(allowed >= burst + 3 * perSecond * 0.9, `${label}: ${allowed} let through`);
    assert.ok(
      table.reports() <= processes * (3_000 / 50 + 3_000 / roundTripMs),
      `${label}: ${table.reports()} reports`,
    );
  }
});

test('a process whose reports fail limits on what it knows alone, and shares again once one succeeds', async () => {
  let failing = true;
  let now = 0;
  const limiter = new SharedTokenBuckets({
    perSecond: 10,
    report: async (uses) => {
      if (failing) throw new Error('database away');
      return new Map(uses.map(({ key }) => [key, 0]));
    },
    now: () => now,
  });
  let warned = 0;
  const alone = new SharedTokenBuckets({
    perSecond: 10,
    report: async () => {
      throw new Error('database away');
    },
    reportFailed: () => (warned += 1),
    now: () => now,
  });
  const results: boolean[] = [];
  for (let i = 0; i < 25; i++) results.push((await alone.take('key', now)).ok);
  assert.equal(results.filter(Boolean).length, 20, 'the burst of twice the rate, counted here');
  assert.equal(warned, 1, 'said once');
  assert.equal((await limiter.take('key', now)).ok, true);
  assert.equal((await limiter.take('key', now)).ok, true, 'past its share, decided alone when the report fails');
  failing = false;
  now += 100;
  await new Promise((resolve) => setTimeout(resolve, 80));
  const refused = await limiter.take('key', now);
  assert.equal(refused.ok, false, 'the shared level, read once the report succeeds, is spent');
});

test('the shared bucket: a new key starts full less its calls, refills at the rate, and owes at most a burst', async (t) => {
  const testDb = await freshDb();
  t.after(() => testDb.drop());
  await migrateToLatest(testDb.db);
  const rule = { scope: 'api_calls', perSecond: 10, burst: 20 };
  const level = async (used: number, now: number, key = 'key_a') =>
    (await reportBucketUse(testDb.db, rule, [{ key, used }], now)).get(key);
  assert.equal(await level(5, 1_000), 15);
  assert.equal(await level(5, 1_500), 15, 'half a second refilled 5');
  assert.equal(await level(0, 100_000), 20, 'never more than the burst');
  assert.equal(await level(100, 100_000), -20, 'never owing more than a burst');
  assert.equal(await level(0, 99_000), -20, 'a report from a clock behind refills nothing');
  const both = await reportBucketUse(
    testDb.db,
    rule,
    [
      { key: 'key_a', used: 1 },
      { key: 'key_b', used: 2 },
    ],
    102_000,
  );
  assert.deepEqual([...both.entries()].sort(), [
    ['key_a', -1],
    ['key_b', 18],
  ]);
});
