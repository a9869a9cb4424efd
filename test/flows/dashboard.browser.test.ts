// The merchant dashboard in a real browser (Debian's Chromium through playwright-core): sign-in
// right, wrong and locked out; a cross-site form post refused; every page checked with axe-core
// (no serious or critical violations) at desktop and phone sizes; the actions of each section.
// SQLite only; skipped when Chromium is absent. UPDATE_SCREENSHOTS=1 writes docs/screenshots.
import fs from 'node:fs';
import http from 'node:http';
import path from 'node:path';
import { test, type TestContext } from 'node:test';
import assert from 'node:assert/strict';
import { chromium, type Browser, type BrowserContext, type Page } from 'playwright-core';
import { parse } from 'csv-parse/sync';
import { dashWorld, detailPaths, objectsOf, PASSWORD, type DashMerchant, type DashWorld } from '../dashboard.ts';
import { startReceiver } from '../support/webhook-receiver.ts';
import { accessibilityProblems } from '../support/chromium.ts';
import { verifyWebhookSignature } from '../../src/modules/webhooks/verify.js';
import { newId } from '../../src/shared/ids.ts';

const CHROMIUM = '/usr/bin/chromium';
const skipReason = !fs.existsSync(CHROMIUM)
  ? `${CHROMIUM} is not installed`
  : process.env.TEST_ENGINE === 'postgres'
    ? 'browser tests run on SQLite only'
    : null;
const SCREENSHOTS = process.env.UPDATE_SCREENSHOTS === '1' ? path.resolve('docs/screenshots') : null;
const PHONE = { width: 390, height: 844 };
const DESKTOP = { width: 1280, height: 900 };

let browser: Browser | null = null;
async function launch(): Promise<Browser> {
  browser ??= await chromium.launch({
    executablePath: CHROMIUM,
    headless: true,
    args: [
      '--no-sandbox',
      '--disable-gpu',
      '--disable-background-networking',
      '--disable-component-update',
      '--no-first-run',
      '--disable-sync',
    ],
  });
  return browser;
}
test.after(async () => {
  await browser?.close();
});

async function newContext(
  t: TestContext,
  viewport = DESKTOP,
): Promise<{ context: BrowserContext; page: Page; errors: string[] }> {
  const context = await (await launch()).newContext({ viewport });
  t.after(() => context.close());
  const page = await context.newPage();
  page.setDefaultTimeout(15_000);
  const errors: string[] = [];
  page.on('pageerror', (error) => errors.push(error.message));
  page.on('console', (message) => {
    const where = message.location().url;
    if (
      message.type() === 'error' &&
      !where.endsWith('/favicon.ico') &&
      !/the server responded with a status of 4\d\d/.test(message.text())
    )
      errors.push(`${message.text()} (${where})`);
  });
  return { context, page, errors };
}

async function logInAt(page: Page, world: DashWorld, merchant: DashMerchant, password = PASSWORD): Promise<void> {
  await page.goto(`${world.baseUrl}/dashboard`);
  await page.getByLabel('Email').fill(merchant.email);
  await page.getByLabel('Password').fill(password);
  await page.getByRole('button', { name: 'Log in' }).click();
}

async function shot(page: Page, name: string): Promise<void> {
  if (!SCREENSHOTS) return;
  fs.mkdirSync(SCREENSHOTS, { recursive: true });
  await page.screenshot({ path: path.join(SCREENSHOTS, name), fullPage: true });
}

async function eventually<T>(read: () => Promise<T>, done: (value: T) => boolean, timeoutMs = 20_000): Promise<T> {
  const until = Date.now() + timeoutMs;
  for (;;) {
    const value = await read();
    if (done(value) || Date.now() > until) return value;
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
}

test('log in right, wrong and locked out; a cross-site form post is refused and changes nothing', {
  skip: skipReason ?? false,
}, async (t) => {
  const world = await dashWorld(t, { workers: false });
  const [kowhai, tui] = world.merchants;
  const { page, errors } = await newContext(t, PHONE);
  await logInAt(page, world, kowhai, 'not the password');
  await page.getByText('That email and password do not match').waitFor();
  assert.equal(await page.getByLabel('Password').getAttribute('aria-invalid'), 'true');
  assert.deepEqual(await accessibilityProblems(page), []);
  await shot(page, 'dashboard-login-error-phone.png');
  for (let i = 0; i < 5; i++) await logInAt(page, world, tui, 'wrong again');
  await logInAt(page, world, tui);
  await page.getByText(/Too many wrong passwords\. Logging in is locked for \d+ minutes/).waitFor();

  await logInAt(page, world, kowhai);
  await page.getByRole('heading', { name: 'The last 30 days' }).waitFor();
  const keysBefore = await world.app.deps.db.selectFrom('api_keys').select('id').execute();
  const csrf = await page.locator('input[name="csrf"]').first().inputValue();
  // another site (localhost is another site than 127.0.0.1) posts a form to the dashboard, even with the right token
  const evil = http.createServer((_req, res) => {
    res
      .writeHead(200, { 'content-type': 'text/html' })
      .end(
        `<!doctype html><title>evil</title><form id="f" method="post" action="${world.baseUrl}/dashboard/live/api-keys"><input name="csrf" value="${csrf}"></form><script>document.getElementById('f').submit()</script>`,
      );
  });
  await new Promise<void>((resolve) => evil.listen(0, '127.0.0.1', resolve));
  t.after(() => new Promise<void>((resolve) => evil.close(() => resolve())));
  const evilPort = (evil.address() as { port: number }).port;
  const [response] = await Promise.all([
    page.waitForResponse((r) => r.url().endsWith('/dashboard/live/api-keys')),
    page.goto(`http://localhost:${evilPort}/`),
  ]);
  assert.equal(response.status(), 403);
  assert.match(await response.text(), /This form has expired/);
  assert.deepEqual(
    await world.app.deps.db.selectFrom('api_keys').select('id').execute(),
    keysBefore,
    'no key was created',
  );

  await page.goto(`${world.baseUrl}/dashboard/live`);
  await page.getByRole('button', { name: 'Log out' }).click();
  await page.getByRole('button', { name: 'Log in' }).waitFor();
  assert.deepEqual(errors, [], 'no script errors and no CSP violations');
});

test('every page passes axe with no serious violations, at desktop and phone sizes, and none is reachable by another merchant', {
  skip: skipReason ?? false,
}, async (t) => {
  const world = await dashWorld(t);
  const [kowhai, tui] = world.merchants;
  const objects = await objectsOf(world, kowhai);
  await kowhai.test.post(`/v1/test-helpers/subscriptions/${objects.subscription.id}/decline-next`, { count: 1 });
  await kowhai.test.post('/v1/test-helpers/clock/advance', { seconds: 15 * 86_400 });
  // a labelled endpoint, and a delivery that failed for good (one no job will try again): the pages
  // show them, and a resend button
  await kowhai.test.patch(`/v1/webhooks/${objects.webhook.id}`, { description: 'Order sync' });
  const failedAt = Date.now();
  await world.app.deps.db
    .insertInto('webhook_deliveries')
    .values({
      id: newId('delivery'),
      event_id: objects.event.id,
      endpoint_id: objects.webhook.id,
      user_id: kowhai.userId,
      mode: 'test',
      status: 'failed',
      attempts: 20,
      first_attempt_at: failedAt - 600_000,
      last_attempt_at: failedAt,
      next_attempt_at: null,
      failed_at: failedAt,
      succeeded_at: null,
      superseded_by: null,
      with_secret: 0,
      created_at: failedAt - 600_000,
    })
    .execute();
  const sections = [
    '',
    '/requests',
    '/requests/new',
    '/requests/new?kind=subscription',
    '/payments',
    '/customers',
    '/subscriptions',
    '/recurring-consents',
    '/webhooks',
    '/events',
    '/api-keys',
    '/bank-accounts',
    '/audit',
    '/clock',
    '/clock/test-data',
  ];
  const pages = [
    ...sections.map((s) => `/dashboard/test${s}`),
    '/dashboard/live',
    ...detailPaths(objects).map((p) => `/dashboard/test/${p}`),
    `/dashboard/test/recurring-consents/${objects.consent.id}/charge`,
    `/dashboard/test/webhooks/${objects.webhook.id}/rotate-secret`,
    // the refund pages, checked here at both sizes (their screenshots come from the refund case below)
    `/dashboard/test/payments/${objects.payment.id}/refund`,
    '/dashboard/test/refunds',
    '/dashboard/test/refunds/action',
    '/dashboard/test/refunds/authority',
    '/dashboard/account',
  ];
  for (const [size, viewport] of [
    ['desktop', DESKTOP],
    ['phone', PHONE],
  ] as const) {
    const { page, errors } = await newContext(t, viewport);
    await page.goto(`${world.baseUrl}/dashboard/login`);
    assert.deepEqual(await accessibilityProblems(page), [], `login at ${size}`);
    await shot(page, `dashboard-login-${size}.png`);
    await logInAt(page, world, kowhai);
    await page.getByRole('heading', { name: 'The last 30 days' }).waitFor();
    for (const url of pages) {
      const response = await page.goto(`${world.baseUrl}${url}`);
      assert.equal(response!.status(), 200, url);
      assert.deepEqual(await accessibilityProblems(page), [], `${url} at ${size}`);
      const name = url
        .replace('/dashboard/', '')
        .replace(/\/(request|payment|customer|subscription|recurring|webhook|event|key)_[0-9A-Z]{26}/, '-detail')
        .replace(/\//g, '-')
        .replace('?kind=', '-');
      if (sections.some((s) => url === `/dashboard/test${s}`) || /-detail(-charge)?$/.test(name))
        await shot(page, `dashboard-${name === 'test' ? 'test-home' : name}-${size}.png`);
    }
    assert.deepEqual(errors, [], `no script errors or CSP violations at ${size}`);
  }
  const { page } = await newContext(t, PHONE);
  await logInAt(page, world, tui);
  await page.getByRole('heading', { name: 'The last 30 days' }).waitFor();
  for (const detail of detailPaths(objects)) {
    const response = await page.goto(`${world.baseUrl}/dashboard/test/${detail}`);
    assert.equal(response!.status(), 404, detail);
  }
});

test('a request created in the dashboard is paid at the sandbox bank; the CSV export matches the API; a key made there works and, revoked there, gets 401', {
  skip: skipReason ?? false,
}, async (t) => {
  const world = await dashWorld(t);
  const [kowhai] = world.merchants;
  const { context, page, errors } = await newContext(t);
  await logInAt(page, world, kowhai);
  await page.getByRole('link', { name: 'Test', exact: true }).click();
  await page.getByRole('navigation', { name: 'Sections' }).getByRole('link', { name: 'Requests' }).click();
  await page.getByRole('link', { name: 'New request' }).click();
  await page.getByRole('radio', { name: 'A payment of an amount you set' }).check();
  await page.getByRole('button', { name: 'Continue' }).click();
  await page.getByLabel('Message to the payer').fill('Two flat whites');
  await page.getByLabel('Amount (NZD)', { exact: true }).fill('9.50');
  await page.getByLabel('Statement reference').fill('TABLE-7');
  await page.getByRole('button', { name: 'Create request' }).click();
  await page.getByText('The request is created').waitFor();
  const link = await page.getByLabel('Payment link').inputValue();
  assert.match(link, /\/pay\/request_[0-9A-Z]{26}$/);
  assert.equal(
    await page.getByRole('button', { name: 'Copy link' }).isVisible(),
    true,
    'the copy button shows with script on',
  );
  await page.getByAltText('QR code of the payment link').waitFor();

  const payer = await context.newPage();
  await payer.goto(link);
  await payer.getByRole('radio', { name: 'Sandbox Bank' }).check();
  await payer.getByRole('button', { name: 'Continue to your bank' }).click();
  await payer.getByLabel(/user ?name/i).fill('sandbox');
  await payer.getByLabel(/password/i).fill('any password');
  await payer.getByRole('button', { name: /sign in/i }).click();
  await payer.getByRole('button', { name: 'Approve' }).click();
  await payer.getByRole('heading', { name: 'Payment successful' }).waitFor();
  await payer.close();
  const requestId = link.split('/').pop()!;
  const status = await eventually(
    async () => (await kowhai.test.get(`/v1/requests/${requestId}`)).body.request.status,
    (s) => s === 'paid',
  );
  assert.equal(status, 'paid');
  await page.reload();
  await page.locator('table').getByText('successful').waitFor();

  // the CSV export of the page's filter, as the browser downloads it
  await page.goto(`${world.baseUrl}/dashboard/test/payments?status=successful`);
  const [download] = await Promise.all([
    page.waitForEvent('download'),
    page.getByRole('link', { name: 'Export these payments as CSV' }).click(),
  ]);
  const rows: string[][] = parse(fs.readFileSync((await download.path())!, 'utf8'));
  const api = (await kowhai.test.get('/v1/payments', { query: { status: 'successful' } })).body.payments;
  assert.deepEqual(
    rows.slice(1).map((r) => [r[0], r[2], r[5], r[7]]),
    api.map((p: any) => [p.id, p.amount.value.replace(' NZD', ''), p.pcr.particulars, p.pcr.reference]),
  );
  assert.equal(rows[1][7], 'TABLE-7');

  // an API key, named and restricted, shown once, works for what it may; rolled with an hour's
  // grace, both keys work and the old one shows when it stops; revoked after confirming, 401 at once
  await page.goto(`${world.baseUrl}/dashboard/live/api-keys`);
  await page.getByLabel('Name', { exact: true }).fill('Till <one>');
  await page.getByLabel('Only what is ticked below').check();
  await page.getByLabel('write requests', { exact: true }).check();
  await page.getByRole('button', { name: 'Create a live key' }).click();
  const key = await page.getByLabel('API key').inputValue();
  const call = (bearer: string, url = '/v1/requests') =>
    world.app.app.inject({ method: 'GET', url, headers: { authorization: `Bearer ${bearer}` } });
  assert.equal((await call(key)).statusCode, 200);
  assert.equal((await call(key, '/v1/refunds')).statusCode, 403, 'restricted to requests');
  await page.getByRole('link', { name: 'I have copied it' }).click();
  const row = page.getByRole('row', { name: new RegExp(`sk_live_…${key.slice(-4)}`) });
  assert.match(await row.innerText(), /Till <one>[\s\S]*Read and write requests[\s\S]*@[\s\S]*active/);
  await page.getByRole('link', { name: `Roll Till <one> sk_live_…${key.slice(-4)}` }).click();
  await page.getByLabel('Keep the old key working for 1 hour').check();
  await page.getByRole('button', { name: 'Yes, roll it' }).click();
  const rolled = await page.getByLabel('API key').inputValue();
  await page.getByText(/keeps working until/).waitFor();
  assert.notEqual(rolled, key);
  assert.equal((await call(rolled)).statusCode, 200, 'the new key works at once');
  assert.equal((await call(rolled, '/v1/refunds')).statusCode, 403, 'with the same restriction');
  assert.equal((await call(key)).statusCode, 200, 'the old key works during its hour');
  await page.getByRole('link', { name: 'I have copied it' }).click();
  assert.match(await row.innerText(), /Till <one>[\s\S]*expiring[\s\S]*stops/);
  await page.getByRole('link', { name: `Revoke Till <one> sk_live_…${rolled.slice(-4)}` }).click();
  await page.getByRole('button', { name: 'Yes, revoke it' }).click();
  await page.getByText('The key is revoked').waitFor();
  assert.equal((await call(rolled)).statusCode, 401);
  assert.deepEqual(errors, [], 'no script errors and no CSP violations');
});

test('a webhook endpoint created in the browser: the secret is shown once and signs the deliveries', {
  skip: skipReason ?? false,
}, async (t) => {
  const world = await dashWorld(t);
  const [kowhai] = world.merchants;
  const receiver = await startReceiver();
  t.after(() => receiver.close());
  const { page, errors } = await newContext(t, PHONE);
  await logInAt(page, world, kowhai);
  await page.goto(`${world.baseUrl}/dashboard/test/webhooks`);
  await page.getByLabel('URL').fill(receiver.url);
  await page.getByLabel('request.created').check();
  await page.getByRole('button', { name: 'Add endpoint' }).click();
  const secret = await page.getByLabel('Signing secret').inputValue();
  assert.equal(Buffer.from(secret, 'base64').length, 32);
  await shot(page, 'dashboard-webhook-secret-phone.png');
  // a reload (or Back then Forward) of the page after the create shows the secret no more, and makes nothing
  await page.reload();
  await page.getByRole('heading', { name: 'The secret was already shown' }).waitFor();
  assert.equal((await page.content()).includes(secret), false, 'shown once');
  assert.equal((await kowhai.test.get('/v1/webhooks')).body.webhooks.length, 1, 'one endpoint');
  await page.goBack();
  await page.goForward();
  assert.equal((await kowhai.test.get('/v1/webhooks')).body.webhooks.length, 1, 'still one endpoint');
  await page.goto(`${world.baseUrl}/dashboard/test/webhooks`);
  assert.equal((await page.content()).includes(secret), false, 'never shown again');
  await kowhai.test.post('/v1/requests', { bank_account_id: kowhai.bankAccountId, message: 'Tea', amount: '3.00 NZD' });
  const [got] = await receiver.waitFor(1);
  assert.equal(verifyWebhookSignature(got.raw, got.headers['x-service-signature'] as string, secret), true);
  await eventually(
    async () => {
      await page.reload();
      return page.getByText('succeeded').count();
    },
    (n) => n > 0,
  );
  assert.deepEqual(errors, []);
});

test('a payment is refunded from its page (review, confirm) and the refund is listed; turned off, refunds wait to be paid by hand', {
  skip: skipReason ?? false,
}, async (t) => {
  const world = await dashWorld(t, { workers: false });
  const [kowhai] = world.merchants;
  const pay = async (amount: string) => {
    const request = (
      await kowhai.test.post('/v1/requests', {
        bank_account_id: kowhai.bankAccountId,
        message: 'Flat whites',
        amount,
        reference: 'INV-7',
      })
    ).body.request;
    return (
      await kowhai.test.post(`/v1/test-helpers/requests/${request.id}/pay`, {
        cust_info: { email: 'aroha@example.com', first_name: 'Aroha' },
      })
    ).body.payment;
  };
  const payment = await pay('12.50 NZD');
  // the payer's account is kept for refunds by a job: run it for this payment, not for the next
  const { worker } = world.app.deps;
  for (const job of await worker.claim(100)) if (job.kind === 'payment.payer_account') await worker.run(job);
  const other = await pay('8.00 NZD');
  const { page, errors } = await newContext(t);
  const checked = async (name: string | null) => {
    assert.deepEqual(await accessibilityProblems(page), [], page.url());
    if (name) await shot(page, name);
  };
  await logInAt(page, world, kowhai);
  await page.getByRole('heading', { name: 'The last 30 days' }).waitFor();

  await page.goto(`${world.baseUrl}/dashboard/test/payments/${payment.id}`);
  await page.getByRole('link', { name: 'Refund this payment' }).click();
  assert.equal(await page.getByLabel('Amount (NZD)').inputValue(), '12.50', 'what remains, to start with');
  await checked(null);
  await page.getByLabel('Amount (NZD)').fill('5.00');
  await page.getByLabel(/^Reason/).fill('Cup arrived cracked');
  await page.getByRole('button', { name: 'Review the refund' }).click();
  await page.getByRole('heading', { name: 'Refund $5.00 of the payment of $12.50?' }).waitFor();
  await page.getByText(`Refund / ${payment.pcr.particulars} / INV-7`).waitFor();
  await checked(null);
  await page.getByRole('button', { name: 'Yes, refund $5.00' }).click();
  await page.getByText('The refund of $5.00 is made').waitFor();
  await checked(null);
  await page.getByRole('navigation', { name: 'Sections' }).getByRole('link', { name: 'Refunds' }).click();
  const row = page.locator('tbody tr').filter({ hasText: payment.id });
  await row.getByText('Cup arrived cracked').waitFor();
  assert.match(await row.innerText(), /\$5\.00\s+pending/);
  assert.equal((await kowhai.test.get(`/v1/payments/${payment.id}`)).body.payment.amount_refunded.value, '5.00 NZD');

  // the authority in force, then turned off: new refunds wait to be paid by hand
  await page.getByRole('link', { name: /refund authority/ }).click();
  await page.getByRole('heading', { name: 'In force' }).waitFor();
  await checked('dashboard-test-refunds-authority-desktop.png');
  await page.getByRole('link', { name: 'Turn off refunds' }).click();
  await page.getByRole('heading', { name: 'Turn off refunds from your account at Sandbox Bank?' }).waitFor();
  await checked(null);
  await page.getByRole('button', { name: 'Yes, turn off refunds' }).click();
  await page.getByText('Refunds are turned off: new refunds are yours to pay by hand.').waitFor();
  await checked(null);
  for (const [id, amount] of [
    [payment.id, '2.50 NZD'],
    [other.id, '8.00 NZD'],
  ]) {
    const made = await kowhai.test.post('/v1/refunds', { payment_id: id, amount, reason: 'Order cancelled' });
    assert.equal(made.body.refund.status, 'requires_action');
  }

  await page.goto(`${world.baseUrl}/dashboard/test/payments/${payment.id}`);
  await page.getByText('Refunded $7.50 of $12.50').waitFor();
  await checked('dashboard-test-payments-detail-refunds-desktop.png');
  await page.goto(`${world.baseUrl}/dashboard/test/refunds`);
  await checked('dashboard-test-refunds-desktop.png');
  await page.getByRole('link', { name: '2 refunds require action' }).click();
  await page.getByRole('heading', { name: 'Requires action' }).waitFor();
  await page.getByText('We do not know the payer’s account: contact the payer').waitFor();
  await checked('dashboard-test-refunds-action-desktop.png');
  const wrap = page.locator('.table-wrap');
  assert.ok(
    await wrap.evaluate((element) => element.scrollWidth <= element.clientWidth),
    'each refund’s actions fit beside it, one above the other, with no sideways scrolling',
  );

  // paid by hand: marked from the list after confirming, the account and statement line repeated
  const toPay = page.locator('tbody tr').filter({ hasText: 'Sandbox Payer' });
  await toPay.getByRole('link', { name: /Mark as paid/ }).click();
  await page.getByRole('heading', { name: /^Mark the refund refund_\w+ of \$2\.50 as paid\?$/ }).waitFor();
  await page
    .getByText(/from your bank to \d\d-\d{4}-\d{7}-\d{2,3} \(Sandbox Payer\), with particulars “Refund”/)
    .waitFor();
  await checked(null);
  await page.getByRole('button', { name: 'Yes, I have paid it' }).click();
  await page.getByText(/Refund refund_\w+ is marked as paid\./).waitFor();
  assert.equal(await page.locator('tbody tr').count(), 1, 'the other refund still waits');
  assert.deepEqual(errors, [], 'no script errors and no CSP violations');
});
