import { test } from 'node:test';
import assert from 'node:assert/strict';
import { apiClient, buildTestApp, createTestMerchant, engine } from '../../../test/helpers.ts';
import { authenticateKey, createApiKey, revokeApiKey } from './merchants.service.ts';

// The API key check on every /v1 call: answered without waiting when the key's row is read at once
// (SQLite, nothing pending), through a promise otherwise, with the same outcome either way.

const lastUsedOf = async (app: Awaited<ReturnType<typeof buildTestApp>>, keyId: string) =>
  (await app.deps.db.selectFrom('api_keys').select('last_used_at').where('id', '=', keyId).executeTakeFirstOrThrow())
    .last_used_at;

test('a key is resolved at once when its last use is fresh, through a promise when that needs writing; both give the same merchant', async (t) => {
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
  assert.equal(await lastUsedOf(app, key.id), null);

  const first = authenticateKey(app.deps.db, key.key);
  assert.ok(first instanceof Promise, 'the first use is written, so it is waited for');
  const resolved = await first;
  assert.deepEqual(resolved && { merchant: resolved.merchant.id, mode: resolved.mode, keyId: resolved.keyId }, {
    merchant: merchant.userId,
    mode: 'test',
    keyId: key.id,
  });
  const stamped = await lastUsedOf(app, key.id);
  assert.ok(stamped !== null && Math.abs(Date.now() - Number(stamped)) < 60_000, 'last use recorded');

  const again = authenticateKey(app.deps.db, key.key);
  if (engine === 'sqlite')
    assert.ok(!(again instanceof Promise), 'a fresh last use needs no write, and SQLite answers at once');
  assert.deepEqual(await again, resolved);
  assert.equal(await lastUsedOf(app, key.id), stamped, 'kept to the minute: no write a call');

  assert.equal(await authenticateKey(app.deps.db, 'sk_test_nonsense'), null);
  assert.equal(
    await authenticateKey(app.deps.db, key.key.replace('sk_test_', 'sk_live_')),
    null,
    'a key of the other mode is unknown',
  );
  await revokeApiKey(app.deps.db, app.deps.clock, key.id, { actor: { kind: 'operator', name: 'test' } });
  assert.equal(await authenticateKey(app.deps.db, key.key), null, 'revoked at once');
});

test('GET /v1/requests/:id gives the same answers whether the key and the row were read at once or waited for', async (t) => {
  const app = await buildTestApp(t, { rateLimitPerSecond: 2, authFailuresPerMinute: 3 });
  const merchant = await createTestMerchant(app);
  const other = await createTestMerchant(app, 'Other Merchant');
  const api = apiClient(app, merchant.testKey);
  const created = await api.post('/v1/requests', {
    bank_account_id: merchant.bankAccountId,
    amount: '12.50 NZD',
    message: 'Coffee',
    reference: 'R-1',
  });
  assert.equal(created.status, 201);
  const id = created.body.request.id;

  // Its last use just written, the key is now read at once; the first read of a fresh key waited for its write.
  const fresh = await apiClient(app, other.testKey).get(`/v1/requests/${id}`);
  assert.equal(fresh.status, 404, "another merchant's request is not found");
  assert.deepEqual(fresh.body, { code: 'not_found.request', message: `No such request: ${id}`, params: { id } });
  const again = await apiClient(app, other.testKey).get(`/v1/requests/${id}`);
  assert.deepEqual([again.status, again.body], [404, fresh.body], 'the same 404 when answered at once');

  const read = await api.get(`/v1/requests/${id}`);
  assert.equal(read.status, 200);
  assert.deepEqual(read.body, created.body);
  assert.equal(read.headers['content-type'], 'application/json; charset=utf-8');
  assert.ok(read.headers['x-request-id'], 'a request id');
  assert.equal(read.headers['x-content-type-options'], 'nosniff');

  // Over the key's rate (a burst of twice the rate): the same 429 as any other route.
  const replies = [];
  for (let i = 0; i < 6; i++) replies.push(await api.get(`/v1/requests/${id}`));
  const limited = replies.find((reply) => reply.status !== 200);
  assert.equal(limited?.status, 429);
  assert.equal(limited.body.code, 'rate_limited');
  assert.equal(limited.headers['retry-after'], '1');

  // Failed authentications from one address are counted, and then refused before the key is looked at.
  const bad = apiClient(app, 'sk_test_wrong');
  for (let i = 0; i < 3; i++) assert.equal((await bad.get(`/v1/requests/${id}`)).status, 401);
  const locked = await apiClient(app, other.testKey).get(`/v1/requests/${id}`);
  assert.equal(locked.status, 429);
  assert.equal(locked.body.code, 'rate_limited');
});

test('a burst of calls with one valid key is not taken for guessing, however many lookups are in flight; unknown keys still are', async (t) => {
  // On PostgreSQL every call looks its key up (no cache): before, each lookup in flight reserved a
  // failed attempt of the address, so a merchant's server sending more calls at once than the
  // limit was locked out with its own valid key.
  const app = await buildTestApp(t, { authFailuresPerMinute: 3 });
  const merchant = await createTestMerchant(app);
  const api = apiClient(app, merchant.testKey);
  const burst = await Promise.all(Array.from({ length: 40 }, () => api.get('/v1/requests?limit=1')));
  assert.deepEqual(
    [...new Set(burst.map((answer) => answer.status))],
    [200],
    JSON.stringify(burst.find((answer) => answer.status !== 200)?.body),
  );
  const guesses = await Promise.all(
    Array.from({ length: 6 }, (_, i) => apiClient(app, `sk_test_${'x'.repeat(31)}${i}`).get('/v1/requests')),
  );
  assert.ok(guesses.every((answer) => answer.status === 401 || answer.status === 429));
  assert.ok(
    guesses.some((answer) => answer.status === 429),
    'the address is locked out after 3 failures',
  );
});
