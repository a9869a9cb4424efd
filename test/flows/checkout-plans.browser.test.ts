// The embed widget and the hosted page for a subscription or a recurring consent, in a real browser
// (Debian's Chromium through playwright-core): the frame follows the request once the bank tab
// opens, shows the set-up or the decline and tells the shop's page once; the bank tab says it can be
// closed once the frame answers it, also after "Start again"; a plan paid meanwhile shows as set up;
// a declined plan says so on the page; a lost bank tab leaves a way back. SQLite only.
import fs from 'node:fs';
import path from 'node:path';
import { test } from 'node:test';
import assert from 'node:assert/strict';
import type { FrameLocator, Page } from 'playwright-core';
import { browserSkipReason, newBrowserPage } from '../support/chromium.ts';
import { checkoutWorld, createRequest, payViaPage, shopEmbedding } from './checkout.fixtures.ts';

const skip = browserSkipReason ?? false;
/** Where to keep screenshots of the widget's outcomes, when set. */
const SHOTS = process.env.PLAN_SCREENSHOTS ? path.resolve(process.env.PLAN_SCREENSHOTS) : null;

async function shot(page: Page, name: string): Promise<void> {
  if (!SHOTS) return;
  fs.mkdirSync(SHOTS, { recursive: true });
  await page.screenshot({ path: path.join(SHOTS, name), fullPage: true });
}

/** Script errors and console errors (CSP violations are reported there), the bank's missing icon aside. */
function watchErrors(page: Page): string[] {
  const errors: string[] = [];
  page.on('pageerror', (error) => errors.push(error.message));
  page.on('console', (message) => {
    if (message.type() === 'error' && !message.location().url.endsWith('/favicon.ico'))
      errors.push(`${message.text()} (${message.location().url})`);
  });
  return errors;
}

async function atBank(page: Page, decision: 'Approve' | 'Decline'): Promise<void> {
  await page.getByLabel(/user ?name/i).fill('sandbox');
  await page.getByLabel(/password/i).fill('any password');
  await page.getByRole('button', { name: /sign in/i }).click();
  await page.getByRole('button', { name: decision }).click();
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

/** In the widget: choose the sandbox bank and go; the bank's tab. */
async function toBankFromWidget(page: Page, frame: FrameLocator): Promise<Page> {
  await frame.getByRole('radio', { name: 'Sandbox Bank' }).check();
  const [bankTab] = await Promise.all([
    page.context().waitForEvent('page'),
    frame.getByRole('button', { name: 'Continue to your bank' }).click(),
  ]);
  return bankTab;
}

const messagesOf = (page: Page) =>
  eventually(
    () => page.evaluate('window.messages') as Promise<unknown[]>,
    (list) => list.length > 0,
  );

test('the widget finishes a subscription: the frame shows it set up, the shop hears of it, the bank tab closes', {
  skip,
}, async (t) => {
  const world = await checkoutWorld(t);
  const request = await createRequest(world, {
    message: 'Weekly flowers',
    cust_info: { email: 'ana@example.com' },
    subscription_options: { amount: '10.00 NZD', period: 'weekly', start_date: '2031-03-03' },
  });
  const { page } = await newBrowserPage(t);
  const errors = watchErrors(page);
  await page.goto(await shopEmbedding(t, world, request.id));
  const frame = page.frameLocator('#pay iframe');
  const bankTab = await toBankFromWidget(page, frame);
  const bankErrors = watchErrors(bankTab);
  await frame.getByRole('heading', { name: 'Approve the subscription in your bank' }).waitFor();
  await atBank(bankTab, 'Approve');
  await page.bringToFront();
  const messages = await messagesOf(page);
  assert.deepEqual(messages, [
    { type: 'subscription.created', requestId: request.id, paymentId: null, status: 'successful' },
  ]);
  await frame.getByRole('heading', { name: 'Subscription set up' }).waitFor();
  assert.match(await frame.locator('main').innerText(), /First charge: .*2031/);
  // The frame fits the shorter page: it shrinks to its content, rather than keep the form's height.
  const fits = await eventually(
    async () => ({
      frame: (await page.locator('#pay iframe').boundingBox())!.height,
      content: (await frame.locator('body').boundingBox())!.height,
    }),
    ({ frame: outer, content }) => Math.abs(outer - Math.max(content, 200)) <= 2,
  );
  assert.ok(fits.frame < 600, `the set-up page is short: ${JSON.stringify(fits)}`);
  // The bank tab closes (the widget opened it), as it does for a one-off payment.
  await eventually(
    async () => bankTab.isClosed(),
    (closed) => closed,
  );
  assert.equal(bankTab.isClosed(), true, 'the bank tab closes');
  await shot(page, 'widget-subscription-set-up.png');
  const subscriptions = (await world.api.get('/v1/subscriptions')).body.subscriptions;
  assert.equal(subscriptions.length, 1);
  assert.deepEqual([...errors, ...bankErrors], [], 'no script errors and no CSP violations');
  await page.context().close();
});

test('a recurring consent in the widget; its bank tab, once the frame answers, says it can be closed and closes', {
  skip,
}, async (t) => {
  const world = await checkoutWorld(t);
  const request = await createRequest(world, {
    message: 'Veggie box',
    cust_info: { email: 'ana@example.com' },
    recurring_options: { period: 'weekly', max_per_period: '80.00 NZD' },
  });
  const { page } = await newBrowserPage(t);
  await page.goto(await shopEmbedding(t, world, request.id));
  const frame = page.frameLocator('#pay iframe');
  const bankTab = await toBankFromWidget(page, frame);
  await frame.getByRole('heading', { name: 'Approve the regular payments in your bank' }).waitFor();
  await atBank(bankTab, 'Approve');
  await page.bringToFront();
  assert.deepEqual(await messagesOf(page), [
    { type: 'recurring_consent.authorised', requestId: request.id, paymentId: null, status: 'successful' },
  ]);
  await frame.getByRole('heading', { name: 'Regular payments authorised' }).waitFor();
  await page.context().close();

  // The bank tab, when the widget has not closed it first: its opener is the widget's frame, a page
  // of the service, which answers it. Then it says it can be closed, and closes itself.
  const { page: later } = await newBrowserPage(t);
  await later.goto(await shopEmbedding(t, world, request.id));
  await later.frameLocator('#pay iframe').getByRole('heading', { name: 'Regular payments authorised' }).waitFor();
  const widget = later.frames().find((f) => f.url().startsWith(`${world.baseUrl}/pay/${request.id}`));
  assert.ok(widget, 'the widget frame');
  const [landing] = await Promise.all([
    later.context().waitForEvent('page'),
    widget.evaluate(`window.open('/pay/${request.id}?outcome=authorised', '_blank')`),
  ]);
  await landing.getByText('You can close this tab and return to the page you came from.').waitFor();
  assert.match(await landing.locator('h1').innerText(), /Regular payments authorised/);
  await eventually(
    async () => landing.isClosed(),
    (closed) => closed,
  );
  assert.equal(landing.isClosed(), true, 'the bank tab closes itself');
  // A later load of the widget, in a fresh tab, shows the set-up without telling the shop again.
  assert.deepEqual(await later.evaluate('window.messages'), []);
  await later.context().close();
  // Unanswered (its opener, the hosted page outside the widget, does not follow the plan), the bank
  // tab stays on its page, which says what happened, and does not say it can be closed.
  const { page: opener } = await newBrowserPage(t);
  await opener.goto(`${world.baseUrl}/pay/${request.id}`);
  const [kept] = await Promise.all([
    opener.context().waitForEvent('page'),
    opener.evaluate(`window.open('/pay/${request.id}?outcome=authorised', '_blank')`),
  ]);
  await kept.getByRole('heading', { name: 'Regular payments authorised' }).waitFor();
  await new Promise((resolve) => setTimeout(resolve, 5000));
  assert.equal(kept.isClosed(), false, 'an unanswered bank tab stays open');
  assert.doesNotMatch(await kept.locator('main').innerText(), /close this tab/);
  // Opened any other way, the same page neither says so nor closes.
  await opener.goto(`${world.baseUrl}/pay/${request.id}?outcome=authorised`);
  await opener.getByRole('heading', { name: 'Regular payments authorised' }).waitFor();
  assert.doesNotMatch(await opener.locator('main').innerText(), /close this tab/);
  await opener.context().close();
});

test('declining a recurring consent in the widget: the frame says so with a way to try again, the shop hears of it', {
  skip,
}, async (t) => {
  const world = await checkoutWorld(t);
  const request = await createRequest(world, {
    message: 'Veggie box',
    cust_info: { email: 'ana@example.com' },
    recurring_options: { period: 'weekly', max_per_period: '80.00 NZD' },
  });
  const { page } = await newBrowserPage(t);
  const errors = watchErrors(page);
  await page.goto(await shopEmbedding(t, world, request.id));
  const frame = page.frameLocator('#pay iframe');
  const bankTab = await toBankFromWidget(page, frame);
  await atBank(bankTab, 'Decline');
  await page.bringToFront();
  assert.deepEqual(await messagesOf(page), [
    { type: 'recurring_consent.declined', requestId: request.id, paymentId: null, status: 'cancelled' },
  ]);
  await frame.getByRole('heading', { name: 'Regular payments not authorised' }).waitFor();
  assert.match(
    await frame.locator('main').innerText(),
    /You declined at your bank\. Nothing was set up and no money moved\./,
  );
  await shot(page, 'widget-recurring-declined.png');
  await frame.getByRole('link', { name: 'Try again' }).click();
  await frame.getByRole('button', { name: 'Continue to your bank' }).waitFor();
  assert.deepEqual(errors, [], 'no script errors and no CSP violations');
  await page.context().close();
});

test('declining a subscription on the hosted page: the page says nothing was set up, and the form is one click away', {
  skip,
}, async (t) => {
  const world = await checkoutWorld(t);
  const request = await createRequest(world, {
    message: 'Weekly flowers',
    cust_info: { email: 'ana@example.com' },
    subscription_options: { amount: '10.00 NZD', period: 'weekly' },
  });
  const { page } = await newBrowserPage(t);
  await page.goto(`${world.baseUrl}/pay/${request.id}`);
  await page.getByRole('radio', { name: 'Sandbox Bank' }).check();
  await page.getByRole('button', { name: 'Continue to your bank' }).click();
  await atBank(page, 'Decline');
  await page.getByRole('heading', { name: 'Subscription not set up' }).waitFor();
  assert.match(
    await page.locator('main').innerText(),
    /You declined at your bank\. Nothing was set up and no money moved\./,
  );
  assert.equal(await page.evaluate('document.activeElement.tagName'), 'H1', 'the heading takes the focus');
  await shot(page, 'page-subscription-declined.png');
  await page.getByRole('link', { name: 'Try again' }).click();
  await page.getByRole('button', { name: 'Continue to your bank' }).waitFor();
  assert.equal((await world.api.get(`/v1/requests/${request.id}`)).body.request.status, 'active');
});

test('the widget after its bank tab is closed: it says so, and can reopen the bank or start again', {
  skip,
}, async (t) => {
  const world = await checkoutWorld(t);
  const request = await createRequest(world, { amount: '3.00 NZD', message: 'Widget one-off', type: 'multi' });
  const { page } = await newBrowserPage(t);
  await page.goto(await shopEmbedding(t, world, request.id));
  const frame = page.frameLocator('#pay iframe');
  const bankTab = await toBankFromWidget(page, frame);
  await frame.getByRole('heading', { name: 'Approve the payment in your bank' }).waitFor();
  await bankTab.waitForURL(/sandbox-bank/);
  await bankTab.close();
  await frame.getByText('Your bank tab was closed. If you did not finish, reopen your bank or start again.').waitFor();
  // "Start again" brings the form back.
  await frame.getByRole('link', { name: 'Start again' }).click();
  await frame.getByRole('button', { name: 'Continue to your bank' }).waitFor();
  // "Reopen your bank" opens the bank again in a new tab, and the payment still completes.
  const firstTab = await toBankFromWidget(page, frame);
  const reopen = frame.getByRole('link', { name: 'Reopen your bank' });
  assert.match((await reopen.getAttribute('href')) ?? '', /sandbox-bank/);
  await firstTab.waitForURL(/sandbox-bank/);
  await firstTab.close();
  const [again] = await Promise.all([page.context().waitForEvent('page'), reopen.click()]);
  await atBank(again, 'Approve');
  await page.bringToFront();
  assert.deepEqual(
    ((await messagesOf(page)) as Array<{ type: string }>).map((m) => m.type),
    ['payment.successful'],
  );
  await frame.getByRole('heading', { name: 'Payment successful' }).waitFor();
  await page.context().close();
});

test('"Start again" in the waiting frame, then approving in the bank tab still open: the frame shows the set-up, the shop hears once', {
  skip,
}, async (t) => {
  const world = await checkoutWorld(t);
  const request = await createRequest(world, {
    message: 'Weekly flowers',
    cust_info: { email: 'ana@example.com' },
    subscription_options: { amount: '10.00 NZD', period: 'weekly', start_date: '2031-03-03' },
  });
  const { page } = await newBrowserPage(t);
  // Closed before the service stops (its hooks run first), so a failure here ends the test.
  try {
    const errors = watchErrors(page);
    await page.goto(await shopEmbedding(t, world, request.id));
    const frame = page.frameLocator('#pay iframe');
    const bankTab = await toBankFromWidget(page, frame);
    const bankErrors = watchErrors(bankTab);
    await frame.getByRole('heading', { name: 'Approve the subscription in your bank' }).waitFor();
    await bankTab.waitForURL(/sandbox-bank/);
    // The payer starts again in the frame while the bank tab is still open, then approves there.
    await frame.getByRole('link', { name: 'Start again' }).click();
    await frame.getByRole('button', { name: 'Continue to your bank' }).waitFor();
    await atBank(bankTab, 'Approve');
    // The fresh form hears the bank tab it opened before: the frame shows the set-up and tells the shop.
    await page.bringToFront();
    assert.deepEqual(await messagesOf(page), [
      { type: 'subscription.created', requestId: request.id, paymentId: null, status: 'successful' },
    ]);
    await frame.getByRole('heading', { name: 'Subscription set up' }).waitFor();
    assert.match(await frame.locator('main').innerText(), /First charge: .*2031/);
    // The frame answered, so the bank tab closes (it says so first, unless the frame closed it already).
    await eventually(
      async () => bankTab.isClosed(),
      (closed) => closed,
    );
    assert.equal(bankTab.isClosed(), true, 'the bank tab closes once the frame has answered');
    assert.equal((await world.api.get(`/v1/requests/${request.id}`)).body.request.status, 'paid');
    // Told once: the frame reloaded (or the shop's page reloaded in this tab) does not tell again.
    await new Promise((resolve) => setTimeout(resolve, 500));
    assert.equal(((await page.evaluate('window.messages')) as unknown[]).length, 1);
    await page.reload();
    await page.frameLocator('#pay iframe').getByRole('heading', { name: 'Subscription set up' }).waitFor();
    await new Promise((resolve) => setTimeout(resolve, 500));
    assert.deepEqual(
      await page.evaluate('window.messages'),
      [],
      'a later load of a set-up plan tells the shop nothing',
    );
    assert.deepEqual([...errors, ...bankErrors], [], 'no script errors and no CSP violations');
  } finally {
    await page.context().close();
  }
});

test('a plan paid while the widget shows its form: submitting shows the set-up and tells the shop once', {
  skip,
}, async (t) => {
  const world = await checkoutWorld(t);
  const request = await createRequest(world, {
    message: 'Veggie box',
    cust_info: { email: 'ana@example.com' },
    recurring_options: { period: 'weekly', max_per_period: '80.00 NZD' },
  });
  const { page } = await newBrowserPage(t);
  // Closed before the service stops (its hooks run first), so a failure here ends the test.
  try {
    const errors = watchErrors(page);
    await page.goto(await shopEmbedding(t, world, request.id));
    const frame = page.frameLocator('#pay iframe');
    await frame.getByRole('radio', { name: 'Sandbox Bank' }).check();
    // Approved meanwhile elsewhere (another tab of the payer's): the form is now for a paid request.
    await payViaPage(world, request.id, {});
    assert.equal((await world.api.get(`/v1/requests/${request.id}`)).body.request.status, 'paid');
    await frame.getByRole('button', { name: 'Continue to your bank' }).click();
    await frame.getByRole('heading', { name: 'Regular payments authorised' }).waitFor();
    assert.deepEqual(await messagesOf(page), [
      { type: 'recurring_consent.authorised', requestId: request.id, paymentId: null, status: 'successful' },
    ]);
    await new Promise((resolve) => setTimeout(resolve, 500));
    assert.equal(((await page.evaluate('window.messages')) as unknown[]).length, 1, 'told once');
    assert.equal(page.context().pages().length, 1, 'no bank tab is left open');
    assert.deepEqual(
      errors.filter((e) => !/status of 409/.test(e)),
      [],
      'no script errors and no CSP violations (the submit is answered 409)',
    );
  } finally {
    await page.context().close();
  }
});
