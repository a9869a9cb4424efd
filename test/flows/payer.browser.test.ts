// The payer dashboard in a real browser (Debian's Chromium through playwright-core), with the code
// read from a real SMTP receiver: sign in, see what was agreed, cancel a subscription after the
// confirmation step, log out. SQLite only; skipped when Chromium is absent.
import fs from 'node:fs';
import path from 'node:path';
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { chromium } from 'playwright-core';
import { payerWorld } from '../payer.ts';

const CHROMIUM = '/usr/bin/chromium';
const skipReason = !fs.existsSync(CHROMIUM)
  ? `${CHROMIUM} is not installed`
  : process.env.TEST_ENGINE === 'postgres'
    ? 'browser tests run on SQLite only'
    : null;
const SCREENSHOTS = process.env.UPDATE_SCREENSHOTS === '1' ? path.resolve('docs/screenshots') : null;

test('a payer signs in with the mailed code, cancels a subscription after confirming, and logs out', {
  skip: skipReason ?? false,
}, async (t) => {
  const world = await payerWorld(t);
  const browser = await chromium.launch({
    executablePath: CHROMIUM,
    headless: true,
    args: ['--no-sandbox', '--disable-gpu', '--no-first-run'],
  });
  t.after(() => browser.close());
  const context = await browser.newContext({ viewport: { width: 390, height: 844 } });
  const page = await context.newPage();
  page.setDefaultTimeout(15_000);
  const errors: string[] = [];
  page.on('pageerror', (error) => errors.push(error.message));
  page.on('console', (message) => {
    if (message.type() === 'error' && !message.location().url.endsWith('/favicon.ico')) errors.push(message.text());
  });
  const shot = async (name: string) => {
    if (SCREENSHOTS) await page.screenshot({ path: path.join(SCREENSHOTS, name), fullPage: true });
  };

  await page.goto(`${world.baseUrl}/customer`);
  await shot('payer-signin.png');
  await page.getByLabel('Email').fill('pat@example.com');
  await page.getByRole('button', { name: 'Send code' }).click();
  await page.getByRole('heading', { name: 'Check your email' }).waitFor();
  const mail = await world.smtp.waitFor((m) => m.to === 'pat@example.com' && /sign-in code/.test(m.subject));
  const code = /(\d{6})/.exec(mail.subject)![1];
  assert.match(mail.text, new RegExp(`${world.baseUrl}/customer`));
  await page.getByLabel('Code').fill(code);
  await page.getByRole('button', { name: 'Sign in' }).click();
  await page.getByRole('heading', { name: 'What you agreed to' }).waitFor();
  await shot('payer-home.png');
  // each plan titled by what it is, the merchant beside it
  assert.equal(await page.getByRole('link', { name: 'Beans' }).count(), 2);
  assert.equal(await page.getByRole('link', { name: 'Top-ups' }).count(), 2);
  assert.equal(await page.getByText('with Kōwhai Coffee').count(), 2);

  const subscription = world.subscriptions['pat@example.com'][0];
  await page.goto(`${world.baseUrl}/customer/subscriptions/${subscription}`);
  await page.getByRole('link', { name: 'Cancel this subscription' }).click();
  await shot('payer-confirm.png');
  await page.getByRole('button', { name: 'Yes, cancel it' }).click();
  await page.getByText('Your subscription is cancelled. Nothing more will be charged.').waitFor();
  const sub = (await world.merchants[0].api.get(`/v1/subscriptions/${subscription}`)).body.subscription;
  assert.deepEqual([sub.status, sub.cancelled_by], ['cancelled', 'payer']);

  await page.getByRole('button', { name: 'Log out' }).click();
  await page.getByRole('button', { name: 'Send code' }).waitFor();
  assert.deepEqual(errors, [], 'no script or CSP errors');
});
