import { test } from 'node:test';
import assert from 'node:assert/strict';
import { loadConfig } from '../config.ts';
import { buildTestApp, createTestMerchant } from '../../test/helpers.ts';

// TRUST_PROXY decides whose address request.ip is, and so what every per-address limit counts:
// behind a proxy each client its own, and without it the connection's, whatever X-Forwarded-For says.

type App = Awaited<ReturnType<typeof buildTestApp>>;

const call = async (app: App, key: string, remoteAddress: string, forwardedFor?: string) =>
  (
    await app.app.inject({
      method: 'GET',
      url: '/v1/requests?limit=1',
      remoteAddress,
      headers: { authorization: `Bearer ${key}`, ...(forwardedFor && { 'x-forwarded-for': forwardedFor }) },
    })
  ).statusCode;

const wrongKey = 'sk_test_wrong';

test('TRUST_PROXY=1: two clients behind one proxy are limited separately, by the address the proxy appended', async (t) => {
  const app = await buildTestApp(t, {
    authFailuresPerMinute: 3,
    trustProxy: loadConfig({ TRUST_PROXY: '1' }).trustProxy,
  });
  const merchant = await createTestMerchant(app);
  for (let i = 0; i < 3; i++) assert.equal(await call(app, wrongKey, '127.0.0.1', '203.0.113.5'), 401);
  assert.equal(await call(app, merchant.testKey, '127.0.0.1', '203.0.113.5'), 429, 'the guesser is locked out');
  assert.equal(await call(app, merchant.testKey, '127.0.0.1', '203.0.113.6'), 200, 'another client is not');
  // A client's own X-Forwarded-For comes before the proxy's entry: only the last hop is believed.
  assert.equal(await call(app, merchant.testKey, '127.0.0.1', '203.0.113.6, 203.0.113.5'), 429);
  assert.equal(await call(app, merchant.testKey, '127.0.0.1', '203.0.113.5, 203.0.113.6'), 200);
});

test('TRUST_PROXY=1 behind a proxy that writes each client’s port: one client on many ports is one client', async (t) => {
  const app = await buildTestApp(t, {
    authFailuresPerMinute: 3,
    trustProxy: loadConfig({ TRUST_PROXY: '1' }).trustProxy,
  });
  const merchant = await createTestMerchant(app);
  for (let port = 40_000; port < 40_003; port++)
    assert.equal(await call(app, wrongKey, '127.0.0.1', `203.0.113.5:${port}`), 401);
  assert.equal(await call(app, merchant.testKey, '127.0.0.1', '203.0.113.5:40003'), 429, 'the guesser is locked out');
  assert.equal(await call(app, merchant.testKey, '127.0.0.1', '[2001:db8::5]:40004'), 200, 'another client is not');
});

test('TRUST_PROXY as addresses: X-Forwarded-For is believed from those proxies only', async (t) => {
  const app = await buildTestApp(t, {
    authFailuresPerMinute: 3,
    trustProxy: loadConfig({ TRUST_PROXY: '10.0.0.0/8,::1' }).trustProxy,
  });
  const merchant = await createTestMerchant(app);
  for (let i = 0; i < 3; i++) assert.equal(await call(app, wrongKey, '10.1.2.3', '203.0.113.5'), 401);
  assert.equal(await call(app, merchant.testKey, '10.9.9.9', '203.0.113.5'), 429, 'through another trusted proxy');
  assert.equal(await call(app, merchant.testKey, '10.1.2.3', '203.0.113.6'), 200);
  // A client reaching the service directly cannot name another address.
  for (let i = 0; i < 3; i++) assert.equal(await call(app, wrongKey, '198.51.100.7', '203.0.113.8'), 401);
  assert.equal(await call(app, merchant.testKey, '198.51.100.7', '203.0.113.9'), 429);
  assert.equal(await call(app, merchant.testKey, '10.1.2.3', '203.0.113.8'), 200);
});

test('without TRUST_PROXY a spoofed X-Forwarded-For is ignored: the connection is the client', async (t) => {
  const app = await buildTestApp(t, { authFailuresPerMinute: 3 });
  assert.equal(app.deps.config.trustProxy, false);
  const merchant = await createTestMerchant(app);
  for (let i = 0; i < 3; i++) assert.equal(await call(app, wrongKey, '198.51.100.7', `203.0.113.${i + 1}`), 401);
  assert.equal(await call(app, merchant.testKey, '198.51.100.7', '203.0.113.99'), 429);
  assert.equal(await call(app, merchant.testKey, '198.51.100.8', '198.51.100.7'), 200);
});
