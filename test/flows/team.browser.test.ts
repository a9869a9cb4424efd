// The team in a real browser (Debian's Chromium through playwright-core): the owner invites a
// viewer from the Team page, the invitee accepts from the emailed link (a real SMTP receiver),
// is signed in, logs out and in again, and is refused with 403 when opening an action.
// SQLite only; skipped when Chromium is absent.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import type { Page } from 'playwright-core';
import { accessibilityProblems, browserSkipReason, newBrowserPage } from '../support/chromium.ts';
import { dashWorld, PASSWORD } from '../dashboard.ts';

async function logInAt(page: Page, baseUrl: string, email: string, password: string): Promise<void> {
  await page.goto(`${baseUrl}/dashboard/login`);
  await page.getByLabel('Email').fill(email);
  await page.getByLabel('Password').fill(password);
  await page.getByRole('button', { name: 'Log in' }).click();
  await page.waitForURL(/\/dashboard\/(live|test)/);
}

test('an owner invites a viewer, who accepts from the email, signs in, and is refused an action', {
  skip: browserSkipReason ?? false,
}, async (t) => {
  const world = await dashWorld(t);
  const [kowhai] = world.merchants;

  const owner = await newBrowserPage(t);
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

  const invitee = await newBrowserPage(t);
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
