// The dashboard on the narrowest phones (320 px wide): pages with wide tables or long unbroken
// words scroll inside their own box, never the whole page sideways.
// SQLite only; skipped when Chromium is absent.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import type { Page } from 'playwright-core';
import { browserSkipReason, newBrowserPage } from '../support/chromium.ts';
import { addMember, dashWorld, objectsOf, PASSWORD } from '../dashboard.ts';

const NARROWEST = { width: 320, height: 800 };

async function logInAt(page: Page, baseUrl: string, email: string): Promise<void> {
  await page.goto(`${baseUrl}/dashboard/login`);
  await page.getByLabel('Email').fill(email);
  await page.getByLabel('Password').fill(PASSWORD);
  await page.getByRole('button', { name: 'Log in' }).click();
  await page.waitForURL(/\/dashboard\/(live|test)/);
}

/** How far the page as a whole can be scrolled sideways, in CSS pixels (0 when it cannot). */
async function sidewaysScroll(page: Page): Promise<number> {
  return page.evaluate('document.documentElement.scrollWidth - window.innerWidth') as Promise<number>;
}

test('at 320 px no page with a wide table or a long name scrolls sideways', {
  skip: browserSkipReason ?? false,
}, async (t) => {
  const world = await dashWorld(t);
  const [kowhai] = world.merchants;
  const objects = await objectsOf(world, kowhai);
  // a second member gives the Team page its "Role of …" labels, and a pending invitation its Revoke buttons
  await addMember(world, kowhai, 'developer');
  const { page, errors } = await newBrowserPage(t);
  await page.setViewportSize(NARROWEST);
  await logInAt(page, world.baseUrl, kowhai.email);
  await page.goto(`${world.baseUrl}/dashboard/team`);
  await page.getByLabel('Email').fill('mere@example.com');
  await page.getByRole('button', { name: 'Send the invitation' }).click();
  await page.getByText('The invitation is sent.').waitFor();

  const pages = [
    '/dashboard/test/api-keys',
    '/dashboard/team',
    '/dashboard/account',
    `/dashboard/test/subscriptions/${objects.subscription.id}`,
    `/dashboard/test/recurring-consents/${objects.consent.id}`,
    '/dashboard/test/refunds/authority',
  ];
  const overflowing: string[] = [];
  for (const url of pages) {
    const response = await page.goto(`${world.baseUrl}${url}`);
    assert.equal(response!.status(), 200, url);
    const extra = await sidewaysScroll(page);
    if (extra > 0) overflowing.push(`${url} scrolls ${extra} px sideways`);
  }
  assert.deepEqual(overflowing, []);
  assert.deepEqual(errors, [], 'no script errors');
});
