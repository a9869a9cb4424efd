// The team in a real browser (Debian's Chromium through playwright-core): the owner invites a
// viewer from the Team page, the invitee accepts from the emailed link (a real SMTP receiver),
// is signed in, logs out and in again, and is refused with 403 when opening an action.
// SQLite only; skipped when Chromium is absent.
import fs from 'node:fs';
import { createRequire } from 'node:module';
import { test, type TestContext } from 'node:test';
import assert from 'node:assert/strict';
import { chromium, type Browser, type Page } from 'playwright-core';
import { dashWorld, PASSWORD } from '../dashboard.ts';

const CHROMIUM = '/usr/bin/chromium';
const skipReason = !fs.existsSync(CHROMIUM)
  ? `${CHROMIUM} is not installed`
  : process.env.TEST_ENGINE === 'postgres'
    ? 'browser tests run on SQLite only'
    : null;

const AXE_SOURCE = fs.readFileSync(createRequire(import.meta.url).resolve('axe-core/axe.min.js'), 'utf8');

/** axe-core's serious and critical violations on the page (as the dashboard's browser test checks every page). */
async function accessibilityProblems(page: Page): Promise<string[]> {
  await page.evaluate(AXE_SOURCE);
  const violations = await page.evaluate(async () => {
    const result = await (globalThis as any).axe.run((globalThis as any).document, { resultTypes: ['violations'] });
    return result.violations.map((v: any) => ({
      id: v.id,
      impact: v.impact,
      nodes: v.nodes.slice(0, 3).map((n: any) => n.target.join(' ')),
    }));
  });
  return violations
    .filter((v: any) => v.impact === 'serious' || v.impact === 'critical')
    .map((v: any) => `${v.id} (${v.impact}): ${v.nodes.join(', ')}`);
}

let browser: Browser | null = null;
test.after(async () => {
  await browser?.close();
});

async function newPage(t: TestContext): Promise<{ page: Page; errors: string[] }> {
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
  return { page, errors };
}

async function logInAt(page: Page, baseUrl: string, email: string, password: string): Promise<void> {
  await page.goto(`${baseUrl}/dashboard/login`);
  await page.getByLabel('Email').fill(email);
  await page.getByLabel('Password').fill(password);
  await page.getByRole('button', { name: 'Log in' }).click();
  await page.waitForURL(/\/dashboard\/(live|test)/);
}

test('an owner invites a viewer, who accepts from the email, signs in, and is refused an action', {
  skip: skipReason ?? false,
}, async (t) => {
  const world = await dashWorld(t);
  const [kowhai] = world.merchants;

  const owner = await newPage(t);
  await logInAt(owner.page, world.baseUrl, kowhai.email, PASSWORD);
  await owner.page.getByRole('link', { name: 'Team' }).click();
  await owner.page.getByRole('heading', { name: 'Team', level: 1 }).waitFor();
  await owner.page.getByLabel('Email').fill('mere@example.com');
  await owner.page.getByLabel('Role', { exact: true }).selectOption('viewer');
  await owner.page.getByRole('button', { name: 'Send the invitation' }).click();
  await owner.page.getByText('The invitation is sent.').waitFor();
  assert.match(await owner.page.locator('table').nth(1).innerText(), /mere@example\.com\s+Viewer/);
  assert.deepEqual(await accessibilityProblems(owner.page), [], 'the Team page');

  const mail = await world.smtp.waitFor((m) => m.to === 'mere@example.com');
  assert.equal(mail.subject, 'You are invited to the Tono dashboard of Kōwhai Coffee');
  const link = new RegExp(`${world.baseUrl}/dashboard/invitations/[A-Za-z0-9_-]+`).exec(mail.text)![0];

  const invitee = await newPage(t);
  await invitee.page.goto(link);
  await invitee.page.getByText('You are invited as Viewer').waitFor();
  assert.deepEqual(await accessibilityProblems(invitee.page), [], 'the invitation page');
  await invitee.page.getByLabel('Your name').fill('Mere Tui');
  await invitee.page.getByLabel('Password').fill('mere’s own passphrase');
  await invitee.page.getByRole('button', { name: 'Join and log in' }).click();
  await invitee.page.waitForURL(/\/dashboard\/(live|test)$/);
  await invitee.page.getByRole('link', { name: 'Team' }).click();
  assert.match(await invitee.page.locator('table').first().innerText(), /mere@example\.com you\s+Mere Tui\s+Viewer/);
  assert.equal(
    await invitee.page.getByRole('button', { name: 'Send the invitation' }).count(),
    0,
    'a viewer is offered no team changes',
  );

  // Out and in again with the password chosen at the link.
  await invitee.page.getByRole('button', { name: 'Log out' }).click();
  await invitee.page.waitForURL(/\/dashboard\/login$/);
  await logInAt(invitee.page, world.baseUrl, 'mere@example.com', 'mere’s own passphrase');

  await invitee.page.goto(`${world.baseUrl}/dashboard/test/requests`);
  assert.equal(await invitee.page.getByRole('link', { name: 'New request' }).count(), 0);
  const refused = await invitee.page.goto(`${world.baseUrl}/dashboard/test/requests/new`);
  assert.equal(refused?.status(), 403);
  await invitee.page.getByRole('heading', { name: 'Your role does not allow this' }).waitFor();
  assert.deepEqual(await accessibilityProblems(invitee.page), [], 'the 403 page');
  assert.match(
    await invitee.page.locator('main').innerText(),
    /You are signed in as Viewer, which cannot do this\. Nothing was changed\./,
  );

  // The invitation link worked once.
  const spent = await invitee.page.goto(link);
  assert.equal(spent?.status(), 400);
  assert.deepEqual([...owner.errors, ...invitee.errors], []);
});
