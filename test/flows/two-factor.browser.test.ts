// Two-factor sign-in in a real browser (Debian's Chromium through playwright-core): set up TOTP
// from the account page with a code computed here from the secret the page shows, log out, log in
// with the password and a fresh code. Each two-factor page is checked with axe-core (no serious or
// critical violations). SQLite only; skipped when Chromium is absent.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { accessibilityProblems, browserSkipReason, newBrowserPage } from '../support/chromium.ts';
import { TOTP } from 'otpauth';
import { dashWorld, PASSWORD } from '../dashboard.ts';

const codeAt = (secret: string, timestamp: number) =>
  new TOTP({ secret, algorithm: 'SHA1', digits: 6, period: 30 }).generate({ timestamp });

test('set up two-factor sign-in from the account page, log out, log in with the password and a fresh code', {
  skip: browserSkipReason ?? false,
}, async (t) => {
  const world = await dashWorld(t, { workers: false });
  const [kowhai] = world.merchants;
  const { page, errors } = await newBrowserPage(t);

  const logIn = async () => {
    await page.goto(`${world.baseUrl}/dashboard`);
    await page.getByLabel('Email').fill(kowhai.email);
    await page.getByLabel('Password').fill(PASSWORD);
    await page.getByRole('button', { name: 'Log in' }).click();
  };
  await logIn();
  await page.waitForURL(/\/dashboard\/(live|test)$/);

  await page.goto(`${world.baseUrl}/dashboard/account`);
  await page.getByRole('link', { name: 'Set up two-factor sign-in' }).click();
  await page.waitForURL(/\/dashboard\/account\/two-factor\/setup$/);
  const qr = page.getByRole('img', { name: 'QR code of your two-factor sign-in key' });
  assert.ok((await qr.evaluate((img: any) => img.naturalWidth)) > 100, 'the QR code is drawn');
  assert.deepEqual(await accessibilityProblems(page), []);
  const secret = (await page.locator('#totp-secret').innerText()).replace(/\s/g, '');
  assert.match(secret, /^[A-Z2-7]{32}$/);
  await page.getByLabel('6-digit code').fill(codeAt(secret, Date.now()));
  await page.getByRole('button', { name: 'Turn on two-factor sign-in' }).click();

  await page.getByRole('heading', { name: 'Your recovery codes' }).waitFor();
  assert.equal(await page.locator('#recovery-codes li').count(), 10);
  assert.deepEqual(await accessibilityProblems(page), []);
  await page.getByRole('link', { name: /I have kept them/ }).click();
  await page.waitForURL(/\/dashboard\/account$/);
  assert.match(await page.locator('main').innerText(), /On\. After your password, logging in asks for a code/);
  await page.getByRole('button', { name: 'Log out' }).click();
  await page.waitForURL(/\/dashboard\/login$/);

  await logIn();
  await page.waitForURL(/\/dashboard\/login\/two-factor$/);
  await page.getByRole('heading', { name: 'Enter your code' }).waitFor();
  assert.deepEqual(await accessibilityProblems(page), []);
  // the code of the next step: the one used to set up may still be showing, and is used already
  await page.getByLabel('Code').fill(codeAt(secret, Date.now() + 30_000));
  await page.getByRole('button', { name: 'Log in' }).click();
  await page.waitForURL(/\/dashboard\/(live|test)$/);
  assert.match(await page.locator('.who').innerText(), /Kōwhai Coffee/);
  assert.deepEqual(errors, []);
});
