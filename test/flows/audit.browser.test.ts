// The audit log in a real browser (Debian's Chromium through playwright-core): a change made on a
// dashboard page shows in the Audit log at once, with the member who made it, and the filters
// narrow it. SQLite only; skipped when Chromium is absent.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { browserSkipReason, newBrowserPage } from '../support/chromium.ts';
import { dashWorld, PASSWORD } from '../dashboard.ts';

test('a key made in the dashboard shows in the Audit log, by the member, and the filters narrow the log', {
  skip: browserSkipReason ?? false,
}, async (t) => {
  const world = await dashWorld(t, { workers: false });
  const [kowhai, tui] = world.merchants;
  const theirs = (
    await tui.test.post('/v1/requests', { bank_account_id: tui.bankAccountId, message: 'Theirs', amount: '2.00 NZD' })
  ).body.request;
  const { page, errors } = await newBrowserPage(t);

  await page.goto(`${world.baseUrl}/dashboard`);
  await page.getByLabel('Email').fill(kowhai.email);
  await page.getByLabel('Password').fill(PASSWORD);
  await page.getByRole('button', { name: 'Log in' }).click();
  await page.getByRole('heading', { name: 'The last 30 days' }).waitFor();
  await page.goto(`${world.baseUrl}/dashboard/test/api-keys`);
  await page.getByLabel('Name').fill('Shop server');
  await page.getByRole('button', { name: 'Create a test key' }).click();
  const key = await page.getByLabel('API key').inputValue();
  await page.getByRole('link', { name: 'I have copied it' }).click();

  await page.getByRole('link', { name: 'Audit log' }).first().click();
  await page.getByRole('heading', { name: 'Audit log' }).waitFor();
  const newest = page.locator('table.audit tbody tr').first();
  assert.match(await newest.innerText(), new RegExp(`api_key\\.create\\s+member: ${kowhai.email}`));
  assert.ok(!(await newest.innerText()).includes(key), 'the key itself is never in the log');
  assert.match(await newest.innerText(), new RegExp(`sk_test_…${key.slice(-4)}`));
  assert.ok(!(await page.content()).includes(theirs.id), "another merchant's records are not shown");

  await page.getByLabel('Action').fill('merchant.create');
  await page.getByRole('button', { name: 'Filter' }).click();
  await page.waitForURL(/action=merchant\.create/);
  const rows = page.locator('table.audit tbody tr');
  assert.equal(await rows.count(), 1);
  assert.match(await rows.first().innerText(), /merchant\.create\s+operator: setup/);
  assert.deepEqual(errors, [], 'no script errors and no CSP violations');
});
