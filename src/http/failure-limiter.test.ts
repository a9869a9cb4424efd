import { test } from 'node:test';
import assert from 'node:assert/strict';
import fc from 'fast-check';
import { randomBytes } from 'node:crypto';
import { apiClient, buildTestApp, createTestMerchant, freshDb } from '../../test/helpers.ts';
import { shiftedClock, systemClock } from '../shared/time.ts';
import { migrateToLatest } from '../store/migrate.ts';
import { clientKey, FailureLimiter, recordInDatabase } from './failure-limiter.ts';

test('FailureLimiter: at most max failures per window, then refused until the window ends; keys are independent', () => {
  fc.assert(
    fc.property(
      fc.integer({ min: 1, max: 20 }),
      fc.array(fc.integer({ min: 0, max: 5_000 }), { maxLength: 60 }),
      (max, gaps) => {
        const limiter = new FailureLimiter({ max, windowMs: 1_000 });
        let now = 0;
        let windowStart = -Infinity;
        let failures = 0;
        for (const gap of gaps) {
          now += gap;
          if (now - windowStart >= 1_000) {
            windowStart = now;
            failures = 0;
          }
          const check = limiter.check('ip', now);
          assert.equal(check.ok, failures < max);
          if (!check.ok) assert.equal(check.retryAfterMs, windowStart + 1_000 - now);
          if (check.ok) {
            limiter.fail('ip', now);
            failures += 1;
          }
          assert.equal(limiter.check('other', now).ok, true);
        }
      },
    ),
  );
  const off = new FailureLimiter({ max: 0, windowMs: 1_000 });
  for (let i = 0; i < 100; i++) off.fail('ip', 0);
  assert.equal(off.check('ip', 0).ok, true);
});

test('FailureLimiter: memory stays bounded, expired windows are dropped, the newest windows are kept', () => {
  const limiter = new FailureLimiter({ max: 1, windowMs: 1_000, maxKeys: 1_000 });
  for (let i = 0; i < 5_000; i++) limiter.fail(`ip${i}`, i % 500);
  assert.equal(limiter.size, 1_000);
  assert.equal(limiter.check('ip4999', 500).ok, false, 'the newest are still limited');
  limiter.fail('late', 1_600);
  assert.equal(limiter.size, 1, 'every window that began a second ago or more is gone');
  // a key whose window ended starts a new one at the back, so the order stays the order of start
  const reopened = new FailureLimiter({ max: 1, windowMs: 1_000, maxKeys: 2 });
  reopened.fail('a', 0);
  reopened.fail('b', 500);
  reopened.fail('a', 1_200);
  reopened.fail('c', 1_300);
  assert.deepEqual(
    ['a', 'b', 'c'].map((key) => reopened.check(key, 1_300).ok),
    [false, true, false],
  );
});

test('clientKey: IPv4 as itself (also when IPv4-mapped), IPv6 by its /64', () => {
  assert.equal(clientKey('203.0.113.9'), '203.0.113.9');
  assert.equal(clientKey('::ffff:203.0.113.9'), '203.0.113.9');
  assert.equal(clientKey('2001:db8:1:2::1'), '2001:db8:1:2::/64');
  assert.equal(clientKey('2001:db8:1:2:ffff:ffff:ffff:ffff'), '2001:db8:1:2::/64');
  assert.equal(clientKey('2001:0db8:0001:0002:0:0:0:7'), '2001:db8:1:2::/64');
  assert.notEqual(clientKey('2001:db8:1:3::1'), clientKey('2001:db8:1:2::1'));
  assert.equal(clientKey('not an address'), 'not an address');
});

test('guessing API keys from a fresh IPv6 address each time, within one /64, is limited as one client', async (t) => {
  const app = await buildTestApp(t, { authFailuresPerMinute: 30 });
  const merchant = await createTestMerchant(app);
  const guess = (remoteAddress: string) =>
    app.app.inject({
      method: 'GET',
      url: '/v1/requests',
      remoteAddress,
      headers: { authorization: `Bearer sk_test_${randomBytes(24).toString('base64url')}` },
    });
  for (let i = 1; i <= 30; i++) assert.equal((await guess(`2001:db8:1:2::${i.toString(16)}`)).statusCode, 401);
  const blocked = await guess('2001:db8:1:2:aaaa:bbbb:cccc:dddd');
  assert.equal(blocked.statusCode, 429);
  assert.equal(blocked.json().code, 'rate_limited');
  const neighbour = await app.app.inject({
    method: 'GET',
    url: '/v1/requests',
    remoteAddress: '2001:db8:1:3::1',
    headers: { authorization: `Bearer ${merchant.testKey}` },
  });
  assert.equal(neighbour.statusCode, 200, 'another /64 is not affected');
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
  assert.equal(
    (
      await app.app.inject({
        method: 'GET',
        url: '/v1/requests',
        remoteAddress: '10.9.8.7',
        headers: { authorization: `Bearer ${merchant.testKey}` },
      })
    ).statusCode,
    200,
    'another address is not affected',
  );
  app.deps.clock = shiftedClock(systemClock, 61_000);
  assert.equal((await apiClient(app, merchant.testKey).get('/v1/requests')).status, 200);
});

test('guessing API keys all at once: the address gets no more lookups than its limit, and a right key in the burst is not counted', async (t) => {
  // On PostgreSQL an unknown key's lookup waits for the database, which is where concurrent guesses
  // could all pass the check before any was counted; on SQLite the lookup answers at once.
  const app = await buildTestApp(t, { authFailuresPerMinute: 30 });
  const merchant = await createTestMerchant(app);
  const guesses = await Promise.all(
    Array.from({ length: 200 }, () =>
      apiClient(app, `sk_test_${randomBytes(24).toString('base64url')}`).get('/v1/requests'),
    ),
  );
  assert.equal(guesses.filter((guess) => guess.status === 401).length, 30);
  assert.equal(guesses.filter((guess) => guess.status === 429).length, 170);
  // a right key sent among guesses is given back its attempt: 29 guesses, then the key, then one more guess still fit
  const other = '10.1.2.3';
  const call = (key: string) =>
    app.app.inject({
      method: 'GET',
      url: '/v1/requests',
      remoteAddress: other,
      headers: { authorization: `Bearer ${key}` },
    });
  const burst = await Promise.all([
    ...Array.from({ length: 29 }, () => call(`sk_test_${randomBytes(24).toString('base64url')}`)),
    call(merchant.liveKey),
  ]);
  assert.deepEqual(burst.map((reply) => reply.statusCode).sort(), [200, ...Array(29).fill(401)]);
  assert.equal((await call(`sk_test_${randomBytes(24).toString('base64url')}`)).statusCode, 401);
  assert.equal((await call(`sk_test_${randomBytes(24).toString('base64url')}`)).statusCode, 429);
});

test('take counts an attempt before its outcome is known, and giveBack uncounts it within its window only', () => {
  const limiter = new FailureLimiter({ max: 2, windowMs: 1_000 });
  const first = limiter.take('a', 0);
  const second = limiter.take('a', 10);
  assert.deepEqual(
    [first, second],
    [
      { ok: true, windowStart: 0 },
      { ok: true, windowStart: 0 },
    ],
  );
  assert.deepEqual(limiter.take('a', 20), { ok: false, retryAfterMs: 980 });
  if (second.ok) limiter.giveBack('a', second.windowStart);
  assert.equal(limiter.take('a', 30).ok, true);
  // a give-back from an ended window does not open the next one
  const late = limiter.take('b', 0);
  limiter.take('b', 1_500);
  limiter.take('b', 1_600);
  if (late.ok) limiter.giveBack('b', late.windowStart);
  assert.equal(limiter.take('b', 1_700).ok, false);
});

test('failures spread over processes that count them in one database add up, and the address is refused in each', async (t) => {
  const testDb = await freshDb();
  t.after(() => testDb.drop());
  await migrateToLatest(testDb.db);
  const processes = [0, 1].map(
    () => new FailureLimiter({ max: 5, windowMs: 60_000, record: recordInDatabase(testDb.db, 'test', 5, 60_000) }),
  );
  let failed = 0;
  for (let i = 0; i < 10; i++) {
    const limiter = processes[i % 2]!;
    if (!limiter.check('ip', 1_000 + i).ok) continue;
    limiter.fail('ip', 1_000 + i);
    await limiter.shared('ip', 1_000 + i);
    failed += 1;
  }
  // Each process knows the count as of its own last failure: one more per other process gets through.
  assert.equal(failed, 5 + 1);
  for (const limiter of processes) assert.equal(limiter.check('ip', 2_000).ok, false);
  for (const limiter of processes) assert.equal(limiter.check('other', 2_000).ok, true);
  for (const limiter of processes) assert.equal(limiter.check('ip', 61_010).ok, true, 'a minute later');
  assert.equal(new FailureLimiter({ max: 5, windowMs: 60_000 }).shared('ip', 0), null, 'one process: nothing to share');
});
