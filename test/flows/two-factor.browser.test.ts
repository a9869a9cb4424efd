// Two-factor sign-in in a real browser (Debian's Chromium through playwright-core): set up TOTP
// from the account page with a code computed here from the secret the page shows, log out, log in
// with the password and a fresh code. Each two-factor page is checked with axe-core (no serious or
// critical violations). SQLite only; skipped when Chromium is absent.
import fs from 'node:fs';
import { createRequire } from 'node:module';
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { chromium, type Browser, type Page } from 'playwright-core';
import { TOTP } from 'otpauth';
import { dashWorld, PASSWORD } from '../dashboard.ts';

const CHROMIUM = '/usr/bin/chromium';
const skipReason = !fs.existsSync(CHROMIUM)
  ? `${CHROMIUM} is not installed`
  : process.env.TEST_ENGINE === 'postgres'
    ? 'browser tests run on SQLite only'
    : null;
const AXE_SOURCE = fs.readFileSync(createRequire(import.meta.url).resolve('axe-core/axe.min.js'), 'utf8');

let browser: Browser | null = null;
test.after(async () => {
  await browser?.close();
});

/** axe-core's serious and critical violations on the page. */
async function accessibilityProblems(page: Page): Promise<string[]> {
  await page.evaluate(AXE_SOURCE);
  const violations = await page.evaluate(async () => {
    const result = await (globalThis as any).axe.run((globalThis as any).document, { resultTypes: ['violations'] });
    return result.violations.map((v: any) => ({ id: v.id, impact: v.impact }));
  });
  return violations
    .filter((v: any) => v.impact === 'serious' || v.impact === 'critical')
    .map((v: any) => `${v.id} (${v.impact})`);
}

const codeAt = (secret: string, timestamp: number) =>
  new TOTP({ secret, algorithm: 'SHA1', digits: 6, period: 30 }).generate({ timestamp });

test('set up two-factor sign-in from the account page, log out, log in with the password and a fresh code', {
  skip: skipReason ?? false,
}, async (t) => {
  const world = await dashWorld(t, { workers: false });
  const [kowhai] = world.merchants;
  browser ??= await chromium.launch({
    executablePath: CHROMIUM,
    headless: true,
    args: ['--no-sandbox', '--disable-gpu', '--disable-background-networking', '--no-first-run', '--disable-sync'],
  });
  const context = await browser.newContext({ viewport: { width: 1280, height: 900 } });
  t.after(() => context.close());
  const page = await context.newPage();
  page.setDefaultTimeout(15_000);
  const errors: string[] = [];
  page.on('pageerror', (error) => errors.push(error.message));

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
