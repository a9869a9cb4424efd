import { test } from 'node:test';
import assert from 'node:assert/strict';
import { payerWorld, signIn } from '../../../test/payer.ts';

// Receipts in the payer dashboard, on both engines: a subscription's charge has its receipt under it
// to download as a PDF, emailed once (the receipt is the charge's only receipt email); another
// payer's receipt is a 404.

test('a payer downloads the receipt of their subscription’s charge; another payer’s is not found', async (t) => {
  const world = await payerWorld(t, {
    taxSettings: {
      legal_name: 'Kōwhai Coffee Limited',
      gst_number: null,
      prices_include_gst: true,
      issue_tax_invoices: false,
      email_receipts: true,
    },
  });
  const pat = await signIn(world, 'pat@example.com');
  const [{ api }] = world.merchants;
  const subscription = world.subscriptions['pat@example.com']![0]!;
  const page = await pat.request(`/customer/subscriptions/${subscription}`);
  assert.equal(page.status, 200, page.text);
  const link = /href="(\/customer\/receipts\/(receipt_[0-9A-Z]{26})\/pdf)">Download Receipt R-\d{6} \(PDF\)/.exec(
    page.text,
  );
  assert.ok(link, 'a download link under the charge');
  const pdf = await pat.request(link[1]!);
  assert.equal(pdf.status, 200);
  assert.equal(pdf.headers.get('content-type'), 'application/pdf');
  assert.ok(pdf.text.startsWith('%PDF-'));

  // The charge's receipt by email, once, and no second receipt (charge_receipt) for it.
  const receipt = (await api.get(`/v1/receipts/${link[2]}`)).body.receipt;
  assert.equal(receipt.emailed_to, 'pat@example.com');
  const mails = await world.app.deps.db
    .selectFrom('mail_messages')
    .select(['template'])
    .where('to_address', '=', 'pat@example.com')
    .where('template', 'in', ['receipt', 'charge_receipt'])
    .where('user_id', '=', world.merchants[0]!.merchant.userId)
    .execute();
  assert.deepEqual(
    mails.map((m) => m.template),
    ['receipt'],
    'one receipt for the one charge of pat’s subscription with this merchant',
  );

  // Another payer's receipt (other@example.com's subscription with the same merchant).
  const others = (
    await api.get(`/v1/subscriptions/${world.subscriptions['other@example.com']![0]}/payments`)
  ).body.payments.map((p: { id: string }) => p.id);
  const theirs = (await api.get(`/v1/receipts?payment_id=${others[0]}`)).body.receipts[0];
  assert.ok(theirs);
  assert.equal((await pat.request(`/customer/receipts/${theirs.id}/pdf`)).status, 404);
  assert.equal((await pat.request('/customer/receipts/receipt_01JD2Q8Z7M3V4K5N6P7R8S9T0V/pdf')).status, 404);
});
