import { test } from 'node:test';
import assert from 'node:assert/strict';
import { apiClient, buildTestApp, createTestMerchant, engine } from '../../../test/helpers.ts';
import { transact } from '../../store/store.ts';
import { KeyCache, keyCacheOf, keysWriteEnds, keysWriteStarts, type KeyRow } from './merchants.key-cache.ts';
import { authenticateKey, revokeApiKey, createApiKey } from './merchants.service.ts';

// The cache of API key rows (merchants.key-cache.ts): what it may answer, and when it must read again.

const row = (id: string): KeyRow => ({
  key_id: id,
  mode: 'test',
  revoked_at: null,
  expires_at: null,
  permissions: null,
  last_used_at: null,
  user_id: 'user_1',
  name: 'M',
  test_clock_offset_ms: 0,
});

function cacheWithCounter() {
  let version = 1;
  return { cache: new KeyCache(() => version), commitElsewhere: () => version++ };
}

test('a write of this process to keys or merchants empties the cache, and nothing is cached or answered while it runs', () => {
  const { cache } = cacheWithCounter();
  assert.equal(cache.get('a', 1), undefined);
  cache.remember('a', row('key_a'));
  assert.equal(cache.get('a', 1)?.key_id, 'key_a');

  keysWriteStarts();
  try {
    assert.equal(cache.get('a', 1), undefined, 'not answered while a write runs');
    cache.remember('b', row('key_b'));
  } finally {
    keysWriteEnds();
  }
  assert.equal(cache.get('a', 1), undefined, 'emptied by the write');
  assert.equal(cache.get('b', 1), undefined, 'a row read during the write was not kept');

  // A write that begins between a miss and the row's read: the row is not kept.
  assert.equal(cache.get('c', 1), undefined);
  keysWriteStarts();
  keysWriteEnds();
  cache.remember('c', row('key_c'));
  assert.equal(cache.get('c', 1), undefined);
});

test("another process's commit empties the cache from the next millisecond on", () => {
  const { cache, commitElsewhere } = cacheWithCounter();
  assert.equal(cache.get('a', 100), undefined);
  cache.remember('a', row('key_a'));
  commitElsewhere();
  assert.equal(cache.get('a', 100)?.key_id, 'key_a', 'the data version is read once a millisecond');
  assert.equal(cache.get('a', 101), undefined, 'and then the cache starts again');
  cache.remember('a', row('key_a'));
  assert.equal(cache.get('a', 102)?.key_id, 'key_a', 'nothing else committed: kept');
});

test('past 10,000 keys the cache starts again empty', () => {
  const { cache } = cacheWithCounter();
  for (let i = 0; i < 10_000; i++) {
    cache.get(`k${i}`, 1);
    cache.remember(`k${i}`, row(`key_${i}`));
  }
  assert.equal(cache.get('k0', 1)?.key_id, 'key_0');
  cache.remember('k10000', row('key_10000'));
  assert.equal(cache.get('k0', 1), undefined);
  assert.equal(cache.get('k10000', 1)?.key_id, 'key_10000');
});

test('only the SQLite database the service opened has a key cache; PostgreSQL and transactions read every key', async (t) => {
  const app = await buildTestApp(t);
  if (engine === 'sqlite') assert.ok(keyCacheOf(app.deps.db) instanceof KeyCache);
  else assert.equal(keyCacheOf(app.deps.db), null);
  await transact(app.deps.db, async (trx) => assert.equal(keyCacheOf(trx), null));
});

test('a key revoked while calls with it are under way refuses every call that starts after the revocation returned', async (t) => {
  const app = await buildTestApp(t);
  const merchant = await createTestMerchant(app);
  const key = await createApiKey(
    app.deps.db,
    app.deps.clock,
    merchant.userId,
    'test',
    {},
    { actor: { kind: 'operator', name: 'test' } },
  );
  const api = apiClient(app, key.key);
  const created = await api.post('/v1/requests', {
    bank_account_id: merchant.bankAccountId,
    amount: '1.00 NZD',
    message: 'Tea',
  });
  assert.equal(created.status, 201);
  const path = `/v1/requests/${created.body.request.id}`;
  assert.equal((await api.get(path)).status, 200, 'the key is in use (and cached on SQLite)');

  const during = [api.get(path), api.get(path)];
  const revoking = revokeApiKey(app.deps.db, app.deps.clock, key.id, { actor: { kind: 'operator', name: 'test' } });
  const alsoDuring = api.get(path);
  await revoking;
  const after = await Promise.all([api.get(path), api.get(path)]);
  for (const reply of [...(await Promise.all(during)), await alsoDuring])
    assert.ok([200, 401].includes(reply.status), `${reply.status}`);
  assert.deepEqual(
    after.map((reply) => reply.status),
    [401, 401],
  );
  assert.equal(await authenticateKey(app.deps.db, key.key), null);
  assert.equal((await apiClient(app, merchant.testKey).get(path)).status, 200, "the merchant's other key still works");
});
