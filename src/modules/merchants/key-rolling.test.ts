import { test, type TestContext } from 'node:test';
import assert from 'node:assert/strict';
import pino from 'pino';
import { apiClient, createTestMerchant, engine, freshDb, testConfig } from '../../../test/helpers.ts';
import { createRuntime } from '../../runtime.ts';
import { HOUR_MS, type Clock } from '../../shared/time.ts';
import { NO_ORIGIN, type Ctx } from '../context.ts';
import { keyCacheOf } from './merchants.key-cache.ts';
import { authenticateKey, createApiKey, listApiKeysOf, revokeApiKeyOf, rollApiKeyOf } from './merchants.service.ts';
import { sha256Hex } from '../../shared/crypto.ts';

// Rolling a key: the new key works at once with the same name and restriction; the old one works
// until the end of the period, then is refused as a revoked key, even from the key cache.

/** A service whose real-time clock the test moves. */
async function appWithMovableClock(t: TestContext) {
  let aheadMs = 0;
  const clock: Clock = { now: () => Date.now() + aheadMs };
  const testDb = await freshDb();
  const runtime = await createRuntime(testConfig({ workers: false }), {
    db: testDb.db,
    log: pino({ level: process.env.TEST_LOG_LEVEL ?? 'silent' }),
    clock,
  });
  t.after(async () => {
    await runtime.close();
    await testDb.drop();
  });
  return { app: runtime, moveClock: (ms: number) => (aheadMs += ms) };
}

function memberCtx(app: Awaited<ReturnType<typeof appWithMovableClock>>['app'], userId: string): Ctx {
  return {
    deps: app.deps,
    db: app.deps.db,
    merchant: { id: userId, name: 'Test Merchant' },
    mode: 'test',
    clock: app.deps.clock,
    log: app.deps.log,
    actor: { kind: 'member', id: userId, email: 'owner@kowhai.example' },
    origin: NO_ORIGIN,
  };
}

test('a rolled key keeps working until its period ends, then gets 401 even when cached; the new key has its name and restriction', async (t) => {
  const { app, moveClock } = await appWithMovableClock(t);
  const merchant = await createTestMerchant(app);
  const ctx = memberCtx(app, merchant.userId);
  const old = await createApiKey(
    app.deps.db,
    app.deps.clock,
    merchant.userId,
    'test',
    {
      name: 'Shop server',
      createdBy: 'operator',
      restriction: { kind: 'limited', permissions: ['requests:write'] },
    },
    { actor: { kind: 'operator', name: 'test' } },
  );
  const oldApi = apiClient(app, old.key);
  assert.equal((await oldApi.get('/v1/requests')).status, 200);
  assert.equal((await oldApi.get('/v1/requests')).status, 200, 'read again: cached on SQLite');

  const rolled = await rollApiKeyOf(ctx, old.id, '1h');
  const newApi = apiClient(app, rolled.created.key);
  assert.equal(rolled.created.name, 'Shop server');
  assert.ok(Math.abs(rolled.old.stopsAt - (app.deps.clock.now() + HOUR_MS)) < 5_000);
  assert.equal((await newApi.get('/v1/requests')).status, 200, 'the new key works at once');
  assert.equal((await newApi.get('/v1/refunds')).status, 403, 'with the same restriction');
  const keys = await listApiKeysOf(app.deps.db, merchant.userId, 'test');
  const newRow = keys.find((key) => key.id === rolled.created.id)!;
  const oldRow = keys.find((key) => key.id === old.id)!;
  assert.deepEqual(
    [newRow.name, newRow.restriction, newRow.created_by, newRow.expires_at],
    ['Shop server', { kind: 'limited', permissions: ['requests:write'] }, 'owner@kowhai.example', null],
  );
  assert.deepEqual([oldRow.expires_at, oldRow.revoked_at], [rolled.old.stopsAt, null]);

  // Still inside the period: the old key works, and its row is cached again on SQLite.
  moveClock(HOUR_MS - 60_000);
  assert.equal((await oldApi.get('/v1/requests')).status, 200, 'the old key works during its period');
  assert.equal((await oldApi.get('/v1/requests')).status, 200);
  if (engine === 'sqlite') {
    const cached = keyCacheOf(app.deps.db)!.get(sha256Hex(old.key), app.deps.clock.now());
    assert.equal(cached?.expires_at, rolled.old.stopsAt, 'the old key is answered from the cache');
  }
  await assert.rejects(rollApiKeyOf(ctx, old.id, '24h'), /rolled already/, 'an expiring key is not rolled again');

  moveClock(60_000);
  if (engine === 'sqlite')
    assert.ok(keyCacheOf(app.deps.db)!.get(sha256Hex(old.key), app.deps.clock.now()), 'still in the cache');
  const refused = await oldApi.get('/v1/requests');
  assert.deepEqual(
    [refused.status, refused.body],
    [401, { code: 'unauthorized', message: 'Unknown or revoked API key', params: {} }],
  );
  assert.equal(await authenticateKey(app.deps.db, old.key, app.deps.clock.now()), null);
  assert.equal((await newApi.get('/v1/requests')).status, 200, 'the new key goes on');
});

test('rolling with "now" revokes the old key at once; another merchant\'s key, or a revoked one, cannot be rolled', async (t) => {
  const { app } = await appWithMovableClock(t);
  const merchant = await createTestMerchant(app);
  const other = await createTestMerchant(app, 'Other Merchant');
  const ctx = memberCtx(app, merchant.userId);
  const old = await createApiKey(
    app.deps.db,
    app.deps.clock,
    merchant.userId,
    'test',
    { name: 'Till' },
    { actor: { kind: 'operator', name: 'test' } },
  );
  assert.equal((await apiClient(app, old.key).get('/v1/requests')).status, 200);
  const rolled = await rollApiKeyOf(ctx, old.id, 'now');
  assert.equal((await apiClient(app, old.key).get('/v1/requests')).status, 401);
  assert.equal((await apiClient(app, rolled.created.key).get('/v1/requests')).status, 200);
  await assert.rejects(rollApiKeyOf(ctx, old.id, '1h'), /revoked or expired/);

  const othersKey = await createApiKey(
    app.deps.db,
    app.deps.clock,
    other.userId,
    'test',
    { name: 'Theirs' },
    { actor: { kind: 'operator', name: 'test' } },
  );
  await assert.rejects(rollApiKeyOf(ctx, othersKey.id, '1h'), /No such api key/);
  await assert.rejects(revokeApiKeyOf(ctx, othersKey.id), /No such api key/);
  await assert.rejects(rollApiKeyOf(ctx, rolled.created.id, '30d' as '7d'), /period must be one of/);
  assert.equal((await apiClient(app, othersKey.key).get('/v1/requests')).status, 200, 'theirs untouched');
  const live = await createApiKey(
    app.deps.db,
    app.deps.clock,
    merchant.userId,
    'live',
    { name: 'Live one' },
    { actor: { kind: 'operator', name: 'test' } },
  );
  await assert.rejects(rollApiKeyOf(ctx, live.id, '1h'), /No such api key/, 'the other mode is not found');
});
