// Reconciliation in a real browser (Debian's Chromium through playwright-core): a statement file
// chosen in the upload form is imported, the view shows what matched, the money not seen and the
// credits that match nothing, and a line is unmatched with its button. SQLite only; skipped when
// Chromium is absent.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { accessibilityProblems, browserSkipReason, newBrowserPage } from '../support/chromium.ts';
import { dashWorld, PASSWORD } from '../dashboard.ts';
import { statementFile } from '../support/statements.ts';
import { localDateAt } from '../../src/shared/zone.ts';

test('a statement uploaded in the dashboard is matched and shown, and a line is unmatched', {
  skip: browserSkipReason ?? false,
}, async (t) => {
  const world = await dashWorld(t, { workers: false });
  const [kowhai] = world.merchants;
  const pay = async (reference: string) => {
    const request = (
      await kowhai.test.post('/v1/requests', {
        bank_account_id: kowhai.bankAccountId,
        message: 'Flat whites',
        amount: '12.50 NZD',
        reference,
      })
    ).body.request;
    return (await kowhai.test.post(`/v1/test-helpers/requests/${request.id}/pay`, {})).body.payment;
  };
  const first = await pay('INV-1');
  const second = await pay('INV-2');
  const unseen = await pay('INV-3');
  const today = localDateAt(world.app.deps.clock.now(), world.app.deps.config.serviceTimeZone);
  const content = statementFile('westpac', { p1: first.pcr.particulars, r1: 'INV-1', r2: 'INV-2', today });
  const { page, errors } = await newBrowserPage(t);

  await page.goto(`${world.baseUrl}/dashboard`);
  await page.getByLabel('Email').fill(kowhai.email);
  await page.getByLabel('Password').fill(PASSWORD);
  await page.getByRole('button', { name: 'Log in' }).click();
  await page.getByRole('heading', { name: 'The last 30 days' }).waitFor();
  await page.getByRole('link', { name: 'Reconciliation' }).first().click();
  await page.getByRole('heading', { name: 'Reconciliation', level: 1 }).waitFor();

  await page.getByLabel('Statement file').setInputFiles({
    name: 'westpac.csv',
    mimeType: 'text/csv',
    buffer: Buffer.from(content),
  });
  await page.getByRole('button', { name: 'Import' }).click();
  await page.getByText('The statement is imported: 7 new lines, 2 matched.').waitFor();

  await page.getByLabel('Money not seen after (days)').fill('0');
  await page.getByRole('button', { name: 'Show' }).click();
  await page.waitForURL(/days=0/);
  const notSeen = page.getByRole('table', { name: 'Money not seen' });
  assert.match(await notSeen.innerText(), new RegExp(unseen.id));
  const matched = page.getByRole('table', { name: 'Matched' });
  assert.match(await matched.innerText(), new RegExp(first.id));
  assert.match(await matched.innerText(), new RegExp(second.id));
  assert.match(await page.getByRole('table', { name: 'Credits matching nothing' }).innerText(), /\$1,000\.00/);
  assert.deepEqual(await accessibilityProblems(page), []);

  await matched.getByRole('button', { name: new RegExp(`Unmatch the line of .* to ${first.id}`) }).click();
  await page.getByText('The line is unmatched').waitFor();
  assert.ok(!(await page.getByRole('table', { name: 'Matched' }).innerText()).includes(first.id));
  assert.deepEqual(errors, [], 'no script errors and no CSP violations');
});
