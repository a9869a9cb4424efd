import { test } from 'node:test';
import assert from 'node:assert/strict';
import { apiClient, buildTestApp, createTestMerchant } from '../../test/helpers.ts';

// Every HTML page, error pages included, carries the same security headers.

test('every page, including the 404 link page and the 400 bank-return page, has the security headers', async (t) => {
  const app = await buildTestApp(t);
  const merchant = await createTestMerchant(app);
  const request = (
    await apiClient(app, merchant.testKey).post('/v1/requests', {
      bank_account_id: merchant.bankAccountId,
      amount: '5.00 NZD',
      message: 'Headers',
    })
  ).body.request;
  const pages: Array<[string, number]> = [
    [`/pay/${request.id}`, 200],
    [`/pay/${request.id}?embed_origin=https%3A%2F%2Fshop.example`, 200],
    ['/pay/request_01JD2Q8Z7M3V4K5N6P7R8S9T0V', 404],
    ['/pay/not-an-id', 404],
    ['/pay/return?state=nothing&code=x', 400],
    [`/pay/${request.id}/result?payment_id=payment_01JD2Q8Z7M3V4K5N6P7R8S9T0V`, 404],
    ['/embed-demo', 200],
    ['/customer', 200],
    ['/sandbox-bank/authorize?consent_id=nope&redirect_uri=https%3A%2F%2Fx.example&state=s', 400],
  ];
  for (const [url, status] of pages) {
    const response = await app.app.inject({ method: 'GET', url });
    assert.equal(response.statusCode, status, `${url}: ${response.body.slice(0, 200)}`);
    assert.match(String(response.headers['content-type']), /^text\/html/, url);
    assert.equal(response.headers['x-content-type-options'], 'nosniff', url);
    assert.equal(response.headers['referrer-policy'], 'no-referrer', url);
    assert.equal(response.headers['cache-control'], 'no-store', url);
    const csp = String(response.headers['content-security-policy']);
    assert.match(csp, /default-src 'none'/, url);
    assert.match(
      csp,
      url.includes('embed_origin')
        ? /frame-ancestors https:\/\/shop\.example/
        : url === '/embed-demo'
          ? /frame-ancestors/
          : /frame-ancestors 'none'/,
      url,
    );
  }
});

test('every other response, JSON, scripts, styles and errors, is nosniff too', async (t) => {
  const app = await buildTestApp(t);
  const merchant = await createTestMerchant(app);
  const urls = [
    '/embed.js',
    '/checkout/assets/checkout.css',
    '/healthz',
    '/v1/requests',
    '/v1/nothing',
    '/sandbox-bank/',
    '/sandbox-bank/nothing',
  ];
  for (const url of urls) {
    const response = await app.app.inject({
      method: 'GET',
      url,
      headers: { authorization: `Bearer ${merchant.testKey}` },
    });
    assert.ok(response.statusCode < 500, url);
    assert.equal(response.headers['x-content-type-options'], 'nosniff', url);
  }
});
