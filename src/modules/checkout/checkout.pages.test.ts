import { test } from 'node:test';
import { loadConfig } from '../../config.ts';
import assert from 'node:assert/strict';
import { apiClient, buildTestApp, createTestMerchant, testConfig } from '../../../test/helpers.ts';
import { createRuntime } from '../../runtime.ts';
import pino from 'pino';

async function setup(
  t: Parameters<typeof buildTestApp>[0],
  overrides: Parameters<typeof buildTestApp>[1] = {},
  name = 'Cafe <b>Bold</b> & Co',
) {
  const app = await buildTestApp(t, overrides);
  const merchant = await createTestMerchant(app, name);
  return { app, merchant, test: apiClient(app, merchant.testKey), live: apiClient(app, merchant.liveKey) };
}

const page = (app: Awaited<ReturnType<typeof buildTestApp>>, url: string) => app.app.inject({ method: 'GET', url });

test('the page escapes merchant text, carries a strict CSP and refuses framing by default', async (t) => {
  const { app, merchant, test: api } = await setup(t);
  const created = await api.post('/v1/requests', {
    bank_account_id: merchant.bankAccountId,
    amount: '12.50 NZD',
    message: '<script>alert(1)</script> "quoted"',
  });
  const id = created.body.request.id;
  const res = await page(app, `/pay/${id}`);
  assert.equal(res.statusCode, 200);
  assert.match(res.headers['content-type'] as string, /text\/html/);
  const csp = res.headers['content-security-policy'] as string;
  assert.match(csp, /default-src 'none'/);
  assert.match(csp, /script-src 'self'(;|$)/);
  assert.match(csp, /style-src 'self'(;|$)/);
  assert.match(csp, /img-src 'self' data:(;|$)/);
  assert.match(csp, /frame-ancestors 'none'/);
  assert.doesNotMatch(res.body, /<script>alert/);
  assert.match(res.body, /&lt;script&gt;alert\(1\)&lt;\/script&gt; &quot;quoted&quot;/);
  assert.match(res.body, /Cafe &lt;b&gt;Bold&lt;\/b&gt; &amp; Co/);
  assert.match(res.body, /\$12\.50/);
  assert.match(res.body, /Test mode/);
  assert.match(res.body, /src="data:image\/png;base64,/);
  assert.doesNotMatch(
    res.body,
    /<script>|style="|https?:\/\/(?!127\.0\.0\.1)/,
    'no inline script or style, no external asset',
  );
});

test('live mode with no bank configured: the API refuses a live request naming the setting; a page made before says so plainly', async (t) => {
  const { app, merchant, live } = await setup(t, { banksFile: null });
  const refused = await live.post('/v1/requests', {
    bank_account_id: merchant.bankAccountId,
    amount: '5.00 NZD',
    message: 'Live thing',
  });
  assert.equal(refused.status, 409);
  assert.equal(refused.body.code, 'conflict.no_live_bank');
  assert.match(refused.body.message, /has not connected a live bank \(BANKS_FILE, see docs\/banks\.md\)/);
  assert.equal((await live.get('/v1/requests')).body.requests.length, 0, 'nothing is created');
  // A live request made while a bank was connected (by a process of the service started with one,
  // on the same database), opened after the bank is gone.
  const withBank = await createRuntime(testConfig({ workers: false }), {
    db: app.testDb.db,
    log: pino({ level: 'silent' }),
  });
  t.after(() => withBank.app.close());
  const created = await apiClient(withBank, merchant.liveKey).post('/v1/requests', {
    bank_account_id: merchant.bankAccountId,
    amount: '5.00 NZD',
    message: 'Live thing',
  });
  assert.equal(created.status, 201);
  const res = await page(app, `/pay/${created.body.request.id}`);
  assert.equal(res.statusCode, 200);
  assert.match(res.body, /No bank is connected/);
  assert.doesNotMatch(res.body, /Test mode/);
  assert.doesNotMatch(res.body, /<form method="post"/);
});

test('paid, expired, deleted and unknown requests get their own pages', async (t) => {
  const { app, merchant, test: api } = await setup(t);
  const make = async (extra = {}) =>
    (
      await api.post('/v1/requests', {
        bank_account_id: merchant.bankAccountId,
        amount: '5.00 NZD',
        message: 'Thing',
        ...extra,
      })
    ).body.request.id;
  const deleted = await make();
  await api.delete(`/v1/requests/${deleted}`);
  let res = await page(app, `/pay/${deleted}`);
  assert.equal(res.statusCode, 410);
  assert.match(res.body, /no longer available/);

  const expiring = await make({ expires_in: '1m' });
  await api.post('/v1/test-helpers/clock/advance', { seconds: 61 });
  res = await page(app, `/pay/${expiring}`);
  assert.equal(res.statusCode, 410);
  assert.match(res.body, /has expired/);
  const form = await app.app.inject({
    method: 'POST',
    url: `/pay/${expiring}`,
    payload: 'bank=sandbox',
    headers: { 'content-type': 'application/x-www-form-urlencoded' },
  });
  assert.equal(form.statusCode, 409);
  assert.match(form.body, /has expired/);

  const paid = await make();
  await app.deps.db.updateTable('requests').set({ status: 'paid' }).where('id', '=', paid).execute();
  res = await page(app, `/pay/${paid}`);
  assert.equal(res.statusCode, 200);
  assert.match(res.body, /has been paid/);

  res = await page(app, '/pay/request_01JD2Q8Z7M3V4K5N6P7R8S9T0V');
  assert.equal(res.statusCode, 404);
  res = await page(app, '/pay/return?state=nothing&code=x');
  assert.equal(res.statusCode, 400);
  assert.match(res.body, /could not match this bank response/);
});

test('a payer-chosen amount typed with a decimal comma is refused on the page, and no payment is started', async (t) => {
  const { app, merchant, test: api } = await setup(t);
  const created = await api.post('/v1/requests', {
    bank_account_id: merchant.bankAccountId,
    message: 'Koha',
    allow_dynamic_amount: true,
    maximum_payment_amount: 200_000,
  });
  assert.equal(created.status, 201, created.text);
  const id = created.body.request.id;
  // "12,50" read with its comma dropped would be 1,250.00, inside this request's bounds.
  const posted = await app.app.inject({
    method: 'POST',
    url: `/pay/${id}`,
    payload: new URLSearchParams({ amount_other: '12,50', bank: 'sandbox' }).toString(),
    headers: { 'content-type': 'application/x-www-form-urlencoded' },
  });
  assert.equal(posted.statusCode, 400);
  assert.match(posted.body, /with a full stop before the cents, for example 25\.00/);
  assert.match(posted.body, /value="12,50"/, 'the typed amount is shown again to correct');
  assert.deepEqual((await api.get(`/v1/requests/${id}/payments`)).body.payments, []);
});

test('the status endpoint returns statuses only, without a key', async (t) => {
  const { app, merchant, test: api } = await setup(t);
  const id = (
    await api.post('/v1/requests', { bank_account_id: merchant.bankAccountId, amount: '5.00 NZD', message: 'Thing' })
  ).body.request.id;
  const res = await page(app, `/pay/${id}/status`);
  assert.equal(res.statusCode, 200);
  assert.deepEqual(res.json(), { request: { id, status: 'active' }, payment: null });
  const missing = await page(app, `/pay/${id}/status?payment_id=payment_01JD2Q8Z7M3V4K5N6P7R8S9T0V`);
  assert.equal(missing.statusCode, 404);
  assert.deepEqual(missing.json(), {
    code: 'not_found.payment',
    message: 'No such payment: payment_01JD2Q8Z7M3V4K5N6P7R8S9T0V',
    params: { id: 'payment_01JD2Q8Z7M3V4K5N6P7R8S9T0V' },
  });
});

test('embedding: frame-ancestors is the given origin only; embed.js knows the service origin', async (t) => {
  const { app, merchant, test: api } = await setup(t);
  const id = (
    await api.post('/v1/requests', { bank_account_id: merchant.bankAccountId, amount: '5.00 NZD', message: 'Thing' })
  ).body.request.id;
  let res = await page(app, `/pay/${id}?embed_origin=${encodeURIComponent('https://shop.example:8443')}`);
  assert.match(res.headers['content-security-policy'] as string, /frame-ancestors https:\/\/shop\.example:8443(;|$)/);
  assert.match(res.body, /data-embed-origin="https:\/\/shop.example:8443"/);
  for (const bad of ['https://shop.example/path', 'javascript:alert(1)', "https://a.example 'unsafe-inline'", 'null']) {
    res = await page(app, `/pay/${id}?embed_origin=${encodeURIComponent(bad)}`);
    assert.match(res.headers['content-security-policy'] as string, /frame-ancestors 'none'/, bad);
  }
  // Origins URL parsing accepts but CSP reads as a pattern or as more directives: no framing at all.
  for (const bad of ['https://*.com', 'https://a;b.com', "https://a'b.com", 'http://shop.example']) {
    res = await page(app, `/pay/${id}?embed_origin=${encodeURIComponent(bad)}`);
    const csp = res.headers['content-security-policy'] as string;
    assert.match(csp, /frame-ancestors 'none'$/, bad);
    assert.doesNotMatch(csp, /\*|a;b|a'b|shop\.example/, bad);
    assert.match(res.body, /data-embed-origin=""/, bad);
  }
  const script = await page(app, '/embed.js');
  assert.equal(script.statusCode, 200);
  assert.match(script.headers['content-type'] as string, /javascript/);
  assert.match(script.body, new RegExp(`SERVICE_ORIGIN = "${new URL(app.deps.config.publicBaseUrl).origin}"`));
  const demo = await page(app, `/embed-demo?request_id=${id}`);
  assert.equal(demo.statusCode, 200);
  assert.match(demo.body, new RegExp(`data-request-id="${id}"`));
  const css = await page(app, '/checkout/assets/checkout.css');
  assert.equal(css.statusCode, 200);
  // The embed demo frames the page from the service itself, which may be served over plain http.
  app.deps.config.publicBaseUrl = 'http://tono.lan:3000';
  res = await page(app, `/pay/${id}?embed_origin=${encodeURIComponent('http://tono.lan:3000')}`);
  assert.match(res.headers['content-security-policy'] as string, /frame-ancestors http:\/\/tono\.lan:3000$/);
});

test('merchant logos are fetched by the service and served from its own origin, images only', async (t) => {
  const { app, merchant, test: api, live } = await setup(t);
  // as the service on a laptop, listening on loopback alone
  app.deps.config.targetReach = loadConfig({ HOST: '127.0.0.1' }).targetReach;
  const http = await import('node:http');
  const png = Buffer.from(
    '89504e470d0a1a0a0000000d49484452000000010000000108060000001f15c4890000000d4944415478da63f8ffff3f0005fe02fea7d6a4a60000000049454e44ae426082',
    'hex',
  );
  const server = http.createServer((req, res) => {
    if (req.url === '/logo.png') res.setHeader('content-type', 'image/png').end(png);
    else
      res
        .setHeader('content-type', 'image/svg+xml')
        .end('<svg xmlns="http://www.w3.org/2000/svg"><script>alert(1)</script></svg>');
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  t.after(() => new Promise<void>((resolve) => server.close(() => resolve())));
  const base = `http://127.0.0.1:${(server.address() as { port: number }).port}`;
  const id = (
    await api.post('/v1/requests', {
      bank_account_id: merchant.bankAccountId,
      amount: '5.00 NZD',
      message: 'Thing',
      logo_image_url: `${base}/logo.png`,
      banner_image_url: `${base}/banner.svg`,
    })
  ).body.request.id;
  const html = (await page(app, `/pay/${id}`)).body;
  assert.match(html, new RegExp(`src="/pay/${id}/logo"`));
  assert.doesNotMatch(html, new RegExp(base.replace(/\./g, '\\.')));
  const logo = await page(app, `/pay/${id}/logo`);
  assert.equal(logo.statusCode, 200);
  assert.equal(logo.headers['content-type'], 'image/png');
  assert.deepEqual(logo.rawPayload, png);
  assert.equal((await page(app, `/pay/${id}/banner`)).statusCode, 404, 'an SVG is not relayed');

  // live mode never reaches this machine unless the operator allows every target, even on loopback
  const liveId = (
    await live.post('/v1/requests', {
      bank_account_id: merchant.bankAccountId,
      amount: '5.00 NZD',
      message: 'Thing',
      logo_image_url: `${base}/logo.png`,
    })
  ).body.request.id;
  assert.equal(
    (await page(app, `/pay/${liveId}/logo`)).statusCode,
    404,
    'live mode fetches from global addresses only',
  );
  app.deps.config.targetReach = { live: 'any', test: 'any' };
  const openId = (
    await live.post('/v1/requests', {
      bank_account_id: merchant.bankAccountId,
      amount: '5.00 NZD',
      message: 'Thing',
      logo_image_url: `${base}/logo.png`,
    })
  ).body.request.id;
  assert.equal(
    (await page(app, `/pay/${openId}/logo`)).statusCode,
    200,
    'ALLOW_PRIVATE_TARGETS=true lets live mode reach it',
  );

  // Where the service is reachable from elsewhere, neither mode fetches from a private address.
  app.deps.config.targetReach = { live: 'global', test: 'global' };
  for (const client of [api, live]) {
    const strictId = (
      await client.post('/v1/requests', {
        bank_account_id: merchant.bankAccountId,
        amount: '5.00 NZD',
        message: 'Thing',
        logo_image_url: `${base}/logo.png?strict`,
      })
    ).body.request.id;
    assert.equal((await page(app, `/pay/${strictId}/logo`)).statusCode, 404, 'no fetch from a private address');
  }
});

test('recurring and subscription requests state what the payer agrees to, in plain words, before the bank', async (t) => {
  const { app, merchant, test: api } = await setup(t);
  const recurring = await api.post('/v1/requests', {
    bank_account_id: merchant.bankAccountId,
    message: 'Weekly veggie box',
    cust_info: { email: 'ana@example.com' },
    recurring_options: { period: 'weekly', max_per_period: '80.00 NZD', max_per_payment: '40.00 NZD' },
  });
  assert.equal(recurring.status, 201, recurring.text);
  const recurringPage = await page(app, `/pay/${recurring.body.request.id}`);
  assert.equal(recurringPage.statusCode, 200);
  assert.match(recurringPage.body, /up to \$40\.00 a payment, \$80\.00 a week/i);
  assert.match(recurringPage.body, /<form method="post"/);

  const subscription = await api.post('/v1/requests', {
    bank_account_id: merchant.bankAccountId,
    message: 'Fortnightly flowers',
    cust_info: { email: 'ana@example.com' },
    subscription_options: { amount: '15.00 NZD', period: 'fortnightly', start_date: '2027-03-03', total_count: 6 },
  });
  assert.equal(subscription.status, 201, subscription.text);
  const subscriptionPage = await page(app, `/pay/${subscription.body.request.id}`);
  assert.equal(subscriptionPage.statusCode, 200);
  assert.match(subscriptionPage.body, /\$15\.00 every fortnight from 3 March 2027, 6 payments/);
  assert.match(subscriptionPage.body, /<form method="post"/);
});
