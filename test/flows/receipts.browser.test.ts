// Tax settings and receipts in a real browser (Debian's Chromium through playwright-core): the
// merchant sets its GST details on the Tax & receipts page (a wrong GST number is refused with a
// clear message and changes nothing), a payment made after it has a tax invoice, and the payment's
// page downloads it as a PDF whose text shows the GST number. SQLite only; skipped when Chromium is absent.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import { extractText, getDocumentProxy } from 'unpdf';
import { accessibilityProblems, browserSkipReason, newBrowserPage } from '../support/chromium.ts';
import { dashWorld, PASSWORD } from '../dashboard.ts';

test('a merchant sets its GST details in the dashboard and downloads a payment’s tax invoice', {
  skip: browserSkipReason ?? false,
}, async (t) => {
  const world = await dashWorld(t, { workers: false });
  const [kowhai] = world.merchants;
  const { page, errors } = await newBrowserPage(t);

  await page.goto(`${world.baseUrl}/dashboard`);
  await page.getByLabel('Email').fill(kowhai!.email);
  await page.getByLabel('Password').fill(PASSWORD);
  await page.getByRole('button', { name: 'Log in' }).click();
  await page.getByRole('heading', { name: 'The last 30 days' }).waitFor();
  await page.goto(`${world.baseUrl}/dashboard/test`);
  await page.getByRole('link', { name: 'Tax & receipts' }).first().click();
  await page.getByRole('heading', { name: 'Tax & receipts' }).waitFor();

  await page.getByLabel('Legal name').fill('Kōwhai Coffee Limited');
  await page.getByLabel('GST number').fill('49-091-851');
  await page.getByLabel(/Issue tax invoices/).check();
  await page.getByRole('button', { name: 'Save tax settings' }).click();
  await page.getByRole('alert').waitFor();
  assert.match(await page.getByRole('alert').innerText(), /not a valid GST number/);
  assert.equal(await page.getByLabel('GST number').getAttribute('aria-invalid'), 'true');
  assert.deepEqual((await kowhai!.test.get('/v1/tax-settings')).body, { tax_settings: null });

  await page.getByLabel('GST number').fill('49-091-850');
  await page.getByRole('button', { name: 'Save tax settings' }).click();
  await page.getByText('The tax settings are saved.').waitFor();
  assert.deepEqual(await accessibilityProblems(page), []);
  assert.equal((await kowhai!.test.get('/v1/tax-settings')).body.tax_settings.gst_number, '49-091-850');

  const request = (
    await kowhai!.test.post('/v1/requests', {
      bank_account_id: kowhai!.bankAccountId,
      message: 'Espresso machine service',
      amount: '460.00 NZD',
    })
  ).body.request;
  const paid = await kowhai!.test.post(`/v1/test-helpers/requests/${request.id}/pay`, {});
  assert.equal(paid.body.payment.status, 'successful', paid.text);

  await page.goto(`${world.baseUrl}/dashboard/test/payments/${paid.body.payment.id}`);
  await page.getByRole('heading', { name: 'Receipts' }).waitFor();
  const [download] = await Promise.all([
    page.waitForEvent('download'),
    page.getByRole('link', { name: /Download PDF/ }).click(),
  ]);
  assert.equal(download.suggestedFilename(), 'test-R-000001.pdf');
  const pdf = fs.readFileSync((await download.path())!);
  const { text } = await extractText(await getDocumentProxy(new Uint8Array(pdf)), { mergePages: true });
  assert.match(text, /Tax invoice/);
  assert.match(text, /GST number 49-091-850/);
  assert.match(text, /Includes GST of \$60\.00/);
  assert.deepEqual(errors, [], 'no script errors and no CSP violations');
});
