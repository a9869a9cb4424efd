import { test } from 'node:test';
import assert from 'node:assert/strict';
import { Browser } from '../../../test/payer.ts';
import { addMember, dashWorld, logIn, logInAs, textOf } from '../../../test/dashboard.ts';
import { runRefundJobs } from '../../../test/support/refunds.ts';

// The dashboard's Tax & receipts page and the receipts' downloads, on both engines: a wrong GST
// number is refused with a clear message and changes nothing, owners and admins save (recorded
// in the audit trail), a developer may read but not change, the payment's and the refund's pages
// link their documents' PDFs, and another merchant's document is a 404.

test('Tax & receipts: saved by an owner with a record, refused clearly when wrong, read-only to a developer; PDFs from the payment page; another merchant’s a 404', async (t) => {
  const world = await dashWorld(t, { workers: false });
  const [kowhai, tui] = world.merchants;
  const owner = await logIn(world, kowhai!);

  const form = await owner.request('/dashboard/test/tax');
  assert.equal(form.status, 200, form.text);
  const csrf = Browser.csrfOf(form.text);
  const wrong = await owner.request('/dashboard/test/tax', {
    form: {
      csrf,
      legal_name: 'Kōwhai Coffee Limited',
      gst_number: '12-345-678',
      issue_tax_invoices: 'on',
      prices_include_gst: 'yes',
    },
  });
  assert.equal(wrong.status, 400);
  assert.match(textOf(wrong.text), /That is not a valid GST number: enter the 8 or 9 digits/);
  assert.match(wrong.text, /value="12-345-678"/, 'what was typed stays in the form');
  assert.deepEqual((await kowhai!.test.get('/v1/tax-settings')).body, { tax_settings: null });
  const withoutNumber = await owner.request('/dashboard/test/tax', {
    form: { csrf, legal_name: 'Kōwhai Coffee Limited', gst_number: '', issue_tax_invoices: 'on' },
  });
  assert.equal(withoutNumber.status, 400);
  assert.match(textOf(withoutNumber.text), /Tax invoices show your GST number/);
  // a legal name over the limit is refused and shown again whole, not saved cut short
  const longName = `Kōwhai Coffee ${'Limited '.repeat(30)}`.trim();
  const tooLong = await owner.request('/dashboard/test/tax', {
    form: { csrf, legal_name: longName, gst_number: '', prices_include_gst: 'yes' },
  });
  assert.equal(tooLong.status, 400);
  assert.match(textOf(tooLong.text), /“Legal name” can be at most 200 characters: shorten it\. Nothing was changed\./);
  assert.match(tooLong.text, /id="legal_name" name="legal_name" value="([^"]+)"[^>]*aria-invalid="true"/);
  assert.equal(/id="legal_name" name="legal_name" value="([^"]+)"/.exec(tooLong.text)![1], longName, 'kept whole');
  assert.deepEqual((await kowhai!.test.get('/v1/tax-settings')).body, { tax_settings: null });

  const saved = await owner.request('/dashboard/test/tax', {
    form: {
      csrf,
      legal_name: 'Kōwhai Coffee Limited',
      gst_number: '136410132',
      issue_tax_invoices: 'on',
      email_receipts: 'on',
      prices_include_gst: 'no',
    },
  });
  assert.equal(saved.status, 303, saved.text);
  const settings = (await kowhai!.test.get('/v1/tax-settings')).body.tax_settings;
  assert.deepEqual(settings, {
    legal_name: 'Kōwhai Coffee Limited',
    gst_number: '136-410-132',
    prices_include_gst: false,
    issue_tax_invoices: true,
    email_receipts: true,
  });
  const [record] = (await kowhai!.live.get('/v1/audit-events?action=tax_settings.update')).body.audit_events;
  assert.equal(record.actor.kind, 'member');

  const developer = await addMember(world, kowhai!, 'developer');
  const dev = await logInAs(world, developer.email);
  const readOnly = await dev.request('/dashboard/test/tax');
  assert.equal(readOnly.status, 200);
  assert.doesNotMatch(readOnly.text, /Save tax settings/);
  const refused = await dev.request('/dashboard/test/tax', {
    form: { csrf: Browser.csrfOf(readOnly.text), legal_name: 'Someone else', gst_number: '' },
  });
  assert.equal(refused.status, 403);
  assert.equal((await kowhai!.test.get('/v1/tax-settings')).body.tax_settings.legal_name, 'Kōwhai Coffee Limited');

  const request = (
    await kowhai!.test.post('/v1/requests', {
      bank_account_id: kowhai!.bankAccountId,
      message: 'Beans',
      amount: '23.00 NZD',
    })
  ).body.request;
  const payment = (await kowhai!.test.post(`/v1/test-helpers/requests/${request.id}/pay`, {})).body.payment;
  const [receipt] = (await kowhai!.test.get(`/v1/receipts?payment_id=${payment.id}`)).body.receipts;
  const page = await owner.request(`/dashboard/test/payments/${payment.id}`);
  assert.match(textOf(page.text), /Tax invoice R-000001 \(.+, \$23\.00\): Download PDF/);
  const pdf = await owner.request(`/dashboard/test/receipts/${receipt.id}/pdf`);
  assert.equal(pdf.status, 200);
  assert.equal(pdf.headers.get('content-type'), 'application/pdf');
  assert.match(pdf.headers.get('content-disposition') ?? '', /filename="test-R-000001\.pdf"/);
  const list = await owner.request('/dashboard/test/tax');
  assert.match(textOf(list.text), /R-000001 Tax invoice/);

  // The refund's page links its credit note.
  const refund = (await kowhai!.test.post('/v1/refunds', { payment_id: payment.id, amount: '3.00 NZD' })).body.refund;
  await runRefundJobs(world.app.deps.worker);
  const refundPage = await owner.request(`/dashboard/test/refunds/${refund.id}`);
  assert.match(textOf(refundPage.text), /Credit note CN-000001: Download PDF/);

  // Another merchant's document, and this one in the other mode, are not found.
  const other = await logIn(world, tui!);
  assert.equal((await other.request(`/dashboard/test/receipts/${receipt.id}/pdf`)).status, 404);
  assert.equal((await owner.request(`/dashboard/live/receipts/${receipt.id}/pdf`)).status, 404);
});
