// The payer's journey in a real browser (Debian's Chromium through playwright-core): the hosted
// page, the sandbox bank's login and decision pages, the result, the embed widget on a page of
// another origin, and a phone-sized viewport. SQLite only; skipped when Chromium is absent.
import fs from 'node:fs';
import path from 'node:path';
import { test, type TestContext } from 'node:test';
import assert from 'node:assert/strict';
import { chromium, type Browser, type Page } from 'playwright-core';
import { checkoutWorld, createRequest, shopEmbedding, type CheckoutWorld } from './checkout.fixtures.ts';

const CHROMIUM = '/usr/bin/chromium';
const skipReason = !fs.existsSync(CHROMIUM)
  ? `${CHROMIUM} is not installed`
  : process.env.TEST_ENGINE === 'postgres'
    ? 'browser tests run on SQLite only'
    : null;
const SCREENSHOTS = process.env.UPDATE_SCREENSHOTS === '1' ? path.resolve('docs/screenshots') : null;

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

async function newPage(t: TestContext, viewport = { width: 1280, height: 900 }): Promise<Page> {
  const context = await (await launch()).newContext({ viewport });
  t.after(() => context.close());
  const page = await context.newPage();
  page.setDefaultTimeout(15_000);
  return page;
}

/** Script errors and console errors (CSP violations are reported there) on the service's pages. */
function watchErrors(page: Page): string[] {
  const errors: string[] = [];
  page.on('pageerror', (error) => errors.push(error.message));
  page.on('console', (message) => {
    const where = message.location().url;
    // The sandbox bank's pages do not declare an icon, so Chromium asks for /favicon.ico.
    if (message.type() === 'error' && !where.endsWith('/favicon.ico')) errors.push(`${message.text()} (${where})`);
  });
  return errors;
}

async function shot(page: Page, name: string): Promise<void> {
  if (!SCREENSHOTS) return;
  fs.mkdirSync(SCREENSHOTS, { recursive: true });
  await page.screenshot({ path: path.join(SCREENSHOTS, name), fullPage: true });
}

/** At the sandbox bank: sign in as `sandbox` and approve or decline. */
async function atBank(page: Page, decision: 'Approve' | 'Decline'): Promise<void> {
  await page.getByLabel(/user ?name/i).fill('sandbox');
  await page.getByLabel(/password/i).fill('any password');
  await page.getByRole('button', { name: /sign in/i }).click();
  await page.getByRole('button', { name: decision }).click();
}

async function chooseBankAndGo(page: Page): Promise<void> {
  await page.getByRole('radio', { name: 'Sandbox Bank' }).check();
  await page.getByRole('button', { name: 'Continue to your bank' }).click();
}

/** Polls from Node (not from the page, whose timers a background tab may hold back) until `done`. */
async function eventually<T>(read: () => Promise<T>, done: (value: T) => boolean, timeoutMs = 20_000): Promise<T> {
  const until = Date.now() + timeoutMs;
  for (;;) {
    const value = await read();
    if (done(value) || Date.now() > until) return value;
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
}

async function statusesOf(world: CheckoutWorld, requestId: string): Promise<string[]> {
  return (await world.api.get(`/v1/requests/${requestId}/payments`)).body.payments.map((p: any) => p.status);
}

test('a fixed single request paid through the sandbox bank login', { skip: skipReason ?? false }, async (t) => {
  const world = await checkoutWorld(t);
  const request = await createRequest(world, {
    amount: '24.50 NZD',
    message: 'Two flat whites and a scone',
    reference: 'TABLE-7',
  });
  const page = await newPage(t);
  const errors = watchErrors(page);
  await page.goto(`${world.baseUrl}/pay/${request.id}`);
  await page.getByRole('heading', { name: 'Two flat whites and a scone' }).waitFor();
  assert.match(await page.locator('#amount-due').innerText(), /\$24\.50/);
  assert.match(await page.locator('.test-banner').innerText(), /Test mode/);
  await shot(page, 'pay-desktop.png');
  await chooseBankAndGo(page);
  await atBank(page, 'Approve');
  await page.getByRole('heading', { name: 'Payment successful' }).waitFor();
  assert.match(await page.locator('main').innerText(), /V-[A-Z0-9]{6} TONO TABLE-7/);
  await shot(page, 'result-desktop.png');
  assert.deepEqual(await statusesOf(world, request.id), ['successful']);
  assert.deepEqual(errors, [], 'no script errors and no CSP violations');
});

test('a declined payment', { skip: skipReason ?? false }, async (t) => {
  const world = await checkoutWorld(t);
  const request = await createRequest(world, { amount: '10.00 NZD' });
  const page = await newPage(t);
  await page.goto(`${world.baseUrl}/pay/${request.id}`);
  await chooseBankAndGo(page);
  await atBank(page, 'Decline');
  await page.getByRole('heading', { name: 'Payment cancelled' }).waitFor();
  await page.getByRole('link', { name: 'Try again' }).click();
  await page.getByRole('button', { name: 'Continue to your bank' }).waitFor();
  assert.deepEqual(await statusesOf(world, request.id), ['cancelled']);
});

test('dynamic amounts: a one-tap suggestion, a typed amount, and out-of-bounds refused on the page', {
  skip: skipReason ?? false,
}, async (t) => {
  const world = await checkoutWorld(t);
  const request = await createRequest(world, {
    allow_dynamic_amount: true,
    type: 'multi',
    suggested_amounts: '10.00,25.00,50.00',
    minimum_payment_amount: 500,
    maximum_payment_amount: 10000,
    message: 'Koha for the marae',
  });
  const page = await newPage(t);
  await page.goto(`${world.baseUrl}/pay/${request.id}`);
  assert.match(await page.locator('#amount-bounds').innerText(), /Between \$5\.00 and \$100\.00/);
  await page.getByText('$25.00', { exact: true }).click();
  await chooseBankAndGo(page);
  await atBank(page, 'Approve');
  await page.getByRole('heading', { name: 'Payment successful' }).waitFor();

  await page.goto(`${world.baseUrl}/pay/${request.id}`);
  await page.getByLabel('Or enter another amount').fill('150');
  await chooseBankAndGo(page);
  await page.getByRole('heading', { name: 'There is a problem' }).waitFor();
  assert.match(await page.locator('#amount_other-error').innerText(), /at most \$100\.00/);
  assert.equal(await page.getByLabel('Or enter another amount').getAttribute('aria-invalid'), 'true');
  await page.getByLabel('Or enter another amount').fill('42.00');
  await page.getByRole('button', { name: 'Continue to your bank' }).click();
  await atBank(page, 'Approve');
  await page.getByRole('heading', { name: 'Payment successful' }).waitFor();
  const payments = (await world.api.get(`/v1/requests/${request.id}/payments`)).body.payments;
  assert.deepEqual(
    payments.map((p: any) => p.requested_amount.value),
    ['42.00 NZD', '25.00 NZD'],
  );
});

test('a request that requires payer details', { skip: skipReason ?? false }, async (t) => {
  const world = await checkoutWorld(t);
  const request = await createRequest(world, {
    amount: '60.00 NZD',
    require_customer_basic_info: true,
    require_customer_phone: true,
    require_customer_address: true,
    allow_marketing_opt_in: true,
    message: 'Workshop ticket',
  });
  const page = await newPage(t);
  await page.goto(`${world.baseUrl}/pay/${request.id}`);
  await chooseBankAndGo(page);
  await page.getByRole('heading', { name: 'There is a problem' }).waitFor();
  assert.equal(await page.locator('.error-summary li').count(), 7);
  await page.getByLabel('Email address').fill('mere@example.com');
  await page.getByLabel('First name').fill('Mere');
  await page.getByLabel('Last name').fill('Parata');
  await page.getByLabel('Phone number').fill('021 555 0199');
  await page.getByLabel('Street address').fill('12 Cuba St');
  await page.getByLabel('Town or city').fill('Wellington');
  await page.getByLabel('Postcode').fill('6011');
  await page.getByLabel(/news and offers/).check();
  await page.getByRole('button', { name: 'Continue to your bank' }).click();
  await atBank(page, 'Approve');
  await page.getByRole('heading', { name: 'Payment successful' }).waitFor();
  const [payment] = (await world.api.get(`/v1/requests/${request.id}/payments`)).body.payments;
  assert.equal(payment.cust_info.email, 'mere@example.com');
  assert.equal(payment.cust_info.marketing_opt_in, true);
  const customers = (await world.api.get('/v1/customers', { query: { email: 'mere@example.com' } })).body.customers;
  assert.equal(customers[0].address.city, 'Wellington');
});

test('a multi request paid twice', { skip: skipReason ?? false }, async (t) => {
  const world = await checkoutWorld(t);
  const request = await createRequest(world, { amount: '5.00 NZD', type: 'multi' });
  const page = await newPage(t);
  for (let i = 0; i < 2; i += 1) {
    await page.goto(`${world.baseUrl}/pay/${request.id}`);
    await chooseBankAndGo(page);
    await atBank(page, 'Approve');
    await page.getByRole('heading', { name: 'Payment successful' }).waitFor();
  }
  assert.deepEqual(await statusesOf(world, request.id), ['successful', 'successful']);
  assert.equal((await world.api.get(`/v1/requests/${request.id}`)).body.request.status, 'active');
});

test('the embed widget on a page of another origin receives its message', { skip: skipReason ?? false }, async (t) => {
  const world = await checkoutWorld(t);
  const request = await createRequest(world, { amount: '18.00 NZD', message: 'Online order 1001' });
  const shopUrl = await shopEmbedding(t, world, request.id);

  const page = await newPage(t);
  await page.goto(shopUrl);
  const frame = page.frameLocator('#pay iframe');
  await frame.getByRole('radio', { name: 'Sandbox Bank' }).check();
  const [bankTab] = await Promise.all([
    page.context().waitForEvent('page'),
    frame.getByRole('button', { name: 'Continue to your bank' }).click(),
  ]);
  await atBank(bankTab, 'Approve');
  // The shop's tab was in the background while the bank tab was open; bring it back as the payer would.
  await page.bringToFront();
  const messages = await eventually(
    () => page.evaluate('window.messages') as Promise<unknown[]>,
    (list) => list.length > 0,
  );
  const [payment] = (await world.api.get(`/v1/requests/${request.id}/payments`)).body.payments;
  assert.deepEqual(messages, [
    { type: 'payment.successful', requestId: request.id, paymentId: payment.id, status: 'successful' },
  ]);
  await frame.getByRole('heading', { name: 'Payment successful' }).waitFor();
  // Close the browser before the servers: the shop's tab may still hold connections to both.
  await page.context().close();
});

test('a 390×844 phone viewport', { skip: skipReason ?? false }, async (t) => {
  const world = await checkoutWorld(t);
  const request = await createRequest(world, {
    allow_dynamic_amount: true,
    suggested_amounts: '10.00,20.00,50.00',
    collect_customer_phone: true,
    require_customer_basic_info: true,
    message: 'Kōwhai Coffee gift card',
  });
  const page = await newPage(t, { width: 390, height: 844 });
  await page.goto(`${world.baseUrl}/pay/${request.id}`);
  await shot(page, 'pay-mobile.png');
  assert.equal(await page.locator('section.qr').isVisible(), false, 'no code to scan on the phone itself');
  const overflow = await page.evaluate('document.documentElement.scrollWidth - document.documentElement.clientWidth');
  assert.equal(overflow, 0, 'no sideways scrolling');
  const buttonBox = await page.getByRole('button', { name: 'Continue to your bank' }).boundingBox();
  assert.ok(buttonBox && buttonBox.height >= 44 && buttonBox.width <= 390);
  await page.getByText('$20.00', { exact: true }).click();
  await page.getByLabel('Email address').fill('sam@example.com');
  await page.getByLabel('First name').fill('Sam');
  await page.getByLabel('Last name').fill('Lee');
  await chooseBankAndGo(page);
  await atBank(page, 'Approve');
  await page.getByRole('heading', { name: 'Payment successful' }).waitFor();
  await shot(page, 'result-mobile.png');
});

test('the code for paying on another device shows on a desktop screen, not on one used by touch', {
  skip: skipReason ?? false,
}, async (t) => {
  const world = await checkoutWorld(t);
  const request = await createRequest(world, { amount: '3.00 NZD', message: 'Flat white' });
  const desktop = await newPage(t);
  await desktop.goto(`${world.baseUrl}/pay/${request.id}`);
  assert.equal(await desktop.locator('section.qr').isVisible(), true);
  const context = await (await launch()).newContext({ viewport: { width: 1280, height: 900 }, hasTouch: true });
  t.after(() => context.close());
  const tablet = await context.newPage();
  await tablet.goto(`${world.baseUrl}/pay/${request.id}`);
  assert.equal(await tablet.evaluate("matchMedia('(pointer: coarse)').matches"), true, 'a touch screen');
  assert.equal(await tablet.locator('section.qr').isVisible(), false);
});

test('the /embed-demo page mounts the widget', { skip: skipReason ?? false }, async (t) => {
  const world = await checkoutWorld(t);
  const request = await createRequest(world, { amount: '3.00 NZD', message: 'Demo widget' });
  const page = await newPage(t);
  const errors = watchErrors(page);
  await page.goto(`${world.baseUrl}/embed-demo?request_id=${request.id}`);
  await page.frameLocator('#tono-checkout iframe').getByRole('heading', { name: 'Demo widget' }).waitFor();
  assert.deepEqual(errors, [], 'no script errors and no CSP violations');
  await page.context().close();
});
