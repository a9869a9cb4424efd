import { test, type TestContext } from 'node:test';
import assert from 'node:assert/strict';
import { extractText, getDocumentProxy } from 'unpdf';
import { apiClient, buildTestApp, createTestMerchant } from '../../../test/helpers.ts';
import { createRequest, payViaPage, submitPage, type CheckoutWorld } from '../../../test/flows/checkout.fixtures.ts';
import { smtpReceiver, type SmtpReceiver } from '../../../test/smtp.ts';
import { runRefundJobs } from '../../../test/support/refunds.ts';
import { createOwnerMember } from '../team/team.service.ts';

// Receipts through the API, on both engines: tax settings checked and audited, a document per
// successful payment and refund, numbered without gaps under concurrency, frozen when issued, its
// PDF, another merchant's a 404, and the payer's email (through a real SMTP receiver) showing the
// same figures as the PDF.

async function world(t: TestContext, smtp?: SmtpReceiver): Promise<CheckoutWorld> {
  const app = await buildTestApp(t, smtp ? { smtpUrl: smtp.url, workers: true } : {});
  const address = await app.app.listen({ port: 0, host: '127.0.0.1' });
  const baseUrl = address.replace('localhost', '127.0.0.1');
  app.deps.config.publicBaseUrl = baseUrl;
  const merchant = await createTestMerchant(app, 'Kōwhai Coffee');
  return { app, baseUrl, merchant, api: apiClient(app, merchant.testKey), live: apiClient(app, merchant.liveKey) };
}

const SETTINGS = {
  legal_name: 'Kōwhai Coffee Limited',
  gst_number: '49-091-850',
  prices_include_gst: true,
  issue_tax_invoices: true,
  email_receipts: true,
};

async function pay(
  w: CheckoutWorld,
  amount: string,
  custInfo: Record<string, string> = { email: 'aroha@example.com' },
) {
  const request = await createRequest(w, { amount, reference: 'INV-7', message: 'Catering' });
  const paid = await w.api.post(`/v1/test-helpers/requests/${request.id}/pay`, { cust_info: custInfo });
  assert.equal(paid.status, 200, paid.text);
  assert.equal(paid.body.payment.status, 'successful');
  return paid.body.payment as { id: string };
}

async function receiptOf(w: CheckoutWorld, paymentId: string) {
  const list = await w.api.get(`/v1/receipts?payment_id=${paymentId}&kind=receipt`);
  assert.equal(list.status, 200, list.text);
  assert.equal(list.body.receipts.length, 1);
  return list.body.receipts[0];
}

async function pdfTextOf(w: CheckoutWorld, id: string): Promise<string> {
  const response = await w.app.app.inject({
    method: 'GET',
    url: `/v1/receipts/${id}/pdf`,
    headers: { authorization: `Bearer ${w.merchant.testKey}` },
  });
  assert.equal(response.statusCode, 200, response.body);
  assert.equal(response.headers['content-type'], 'application/pdf');
  const { text } = await extractText(await getDocumentProxy(new Uint8Array(response.rawPayload)), {
    mergePages: true,
  });
  return text.replace(/\s+/g, ' ');
}

test('tax settings: a wrong GST number or tax invoices without one are refused and change nothing; a valid one is kept and audited', async (t) => {
  const w = await world(t);
  assert.deepEqual((await w.api.get('/v1/tax-settings')).body, { tax_settings: null });
  const wrong = await w.live.post('/v1/tax-settings', { ...SETTINGS, gst_number: '49-091-851' });
  assert.equal(wrong.status, 400);
  assert.equal(wrong.body.code, 'bad_request.invalid_param.gst_number');
  const none = await w.live.post('/v1/tax-settings', { ...SETTINGS, gst_number: null });
  assert.equal(none.status, 400);
  assert.match(none.body.message, /GST number/);
  assert.deepEqual((await w.api.get('/v1/tax-settings')).body, { tax_settings: null });

  // The settings are both modes': a test key reads them but never changes them.
  const byTestKey = await w.api.post('/v1/tax-settings', { ...SETTINGS, gst_number: '049 091 850' });
  assert.equal(byTestKey.status, 403);
  assert.equal(byTestKey.body.code, 'forbidden.live_key_required');
  assert.match(byTestKey.body.message, /only a live key changes them/);
  assert.deepEqual((await w.live.get('/v1/tax-settings')).body, { tax_settings: null });

  const saved = await w.live.post('/v1/tax-settings', { ...SETTINGS, gst_number: '049 091 850' });
  assert.equal(saved.status, 200, saved.text);
  assert.equal(saved.body.tax_settings.gst_number, '49-091-850');
  // The same in the other mode.
  assert.equal((await w.api.get('/v1/tax-settings')).body.tax_settings.legal_name, 'Kōwhai Coffee Limited');
  const audit = await w.live.get('/v1/audit-events?action=tax_settings.update');
  assert.equal(audit.status, 200, audit.text);
  assert.equal(audit.body.audit_events.length, 1);
});

test('every successful payment gets a receipt, numbered without gaps or duplicates under concurrency; a failed one none', async (t) => {
  const w = await world(t);
  await w.live.post('/v1/tax-settings', SETTINGS);
  const payments = await Promise.all(Array.from({ length: 8 }, () => pay(w, '11.50 NZD')));
  const numbers = (await Promise.all(payments.map((p) => receiptOf(w, p.id)))).map((r) => r.number).sort();
  assert.deepEqual(numbers, [
    'R-000001',
    'R-000002',
    'R-000003',
    'R-000004',
    'R-000005',
    'R-000006',
    'R-000007',
    'R-000008',
  ]);

  const declined = await createRequest(w, { amount: '5.00 NZD' });
  const failed = await w.api.post(`/v1/test-helpers/requests/${declined.id}/pay`, { outcome: 'decline' });
  assert.notEqual(failed.body.payment.status, 'successful');
  assert.equal((await w.api.get(`/v1/receipts?payment_id=${failed.body.payment.id}`)).body.receipts.length, 0);

  // Live mode numbers on its own.
  const live = await w.live.get('/v1/receipts');
  assert.deepEqual(live.body.receipts, []);
});

test('a receipt shows its band’s figures, keeps them when the settings change, and is another merchant’s 404', async (t) => {
  const w = await world(t);
  await w.live.post('/v1/tax-settings', SETTINGS);
  const small = await receiptOf(w, (await pay(w, '115.00 NZD')).id);
  assert.equal(small.title, 'Tax invoice');
  assert.equal(small.band, 'up_to_200');
  assert.deepEqual(small.gst, { value: '15.00 NZD', formatted: '$15.00' });
  assert.equal(small.gst_number, '49-091-850');
  assert.equal(small.emailed_to, 'aroha@example.com');

  const big = await receiptOf(
    w,
    (
      await pay(w, '2300.00 NZD', {
        email: 'aroha@example.com',
        first_name: 'Aroha',
        last_name: 'Ngata',
        address1: '12 Tāmaki Drive',
        city: 'Auckland',
        postcode: '1071',
      })
    ).id,
  );
  assert.equal(big.title, 'Tax invoice');
  assert.equal(big.band, 'over_1000');
  assert.ok(big.lines.some((line: any) => line.label === 'Buyer' && line.value === 'Aroha Ngata'));
  const text = await pdfTextOf(w, big.id);
  assert.match(text, /Buyer’s address 12 Tāmaki Drive, Auckland 1071/);
  assert.match(text, /Includes GST of \$300\.00/);

  // Over $1,000 without the buyer's address: a receipt, not a tax invoice, saying why.
  const unnamed = await receiptOf(w, (await pay(w, '1500.00 NZD')).id);
  assert.equal(unnamed.title, 'Receipt');
  assert.match(unnamed.notes.join(' '), /buyer’s name and address/);

  await w.live.post('/v1/tax-settings', { ...SETTINGS, legal_name: 'Renamed Limited', prices_include_gst: false });
  const again = await w.api.get(`/v1/receipts/${small.id}`);
  assert.deepEqual(again.body.receipt, small);

  const other = await createTestMerchant(w.app, 'Other');
  const stranger = apiClient(w.app, other.testKey);
  assert.equal((await stranger.get(`/v1/receipts/${small.id}`)).status, 404);
  assert.equal((await stranger.get(`/v1/receipts/${small.id}/pdf`)).status, 404);
  assert.equal((await w.live.get(`/v1/receipts/${small.id}`)).status, 404);
  assert.equal((await stranger.get('/v1/receipts')).body.receipts.length, 0);
});

test('receipts start with the tax settings: none before; then a plain receipt for a merchant not registered for GST, and a credit note naming it', async (t) => {
  const w = await world(t);
  const before = await pay(w, '12.00 NZD');
  assert.deepEqual((await w.api.get(`/v1/receipts?payment_id=${before.id}`)).body.receipts, []);
  const saved = await w.live.post('/v1/tax-settings', {
    legal_name: 'Kōwhai Coffee',
    gst_number: null,
    prices_include_gst: true,
    issue_tax_invoices: false,
    email_receipts: false,
  });
  assert.equal(saved.status, 200, saved.text);
  const payment = await pay(w, '46.00 NZD');
  const receipt = await receiptOf(w, payment.id);
  assert.equal(receipt.title, 'Receipt');
  assert.equal(receipt.number, 'R-000001', 'the first document: the payment before the settings has none');
  assert.equal(receipt.supplier, 'Kōwhai Coffee');
  assert.equal(receipt.gst, null);
  assert.equal(receipt.emailed_to, null, 'not emailed: the merchant has not turned it on');

  const refund = await w.api.post('/v1/refunds', { payment_id: payment.id, amount: '6.00 NZD', reason: 'Cold' });
  assert.equal(refund.status, 201, refund.text);
  await runRefundJobs(w.app.deps.worker);
  assert.equal((await w.api.get(`/v1/refunds/${refund.body.refund.id}`)).body.refund.status, 'successful');
  const notes = await w.api.get(`/v1/receipts?refund_id=${refund.body.refund.id}`);
  assert.equal(notes.body.receipts.length, 1);
  const note = notes.body.receipts[0];
  assert.equal(note.kind, 'credit_note');
  assert.equal(note.number, 'CN-000001');
  assert.equal(note.receipt_id, receipt.id);
  assert.ok(note.lines.some((line: any) => line.label === 'Credits' && line.value.startsWith(receipt.number)));
  assert.match(await pdfTextOf(w, note.id), /Total credited -\$6\.00/);
});

test('credit notes of a payment refunded in parts, side by side, credit exactly its receipt’s GST: each what the GST of all credited grows by', async (t) => {
  const w = await world(t);
  await w.live.post('/v1/tax-settings', SETTINGS);
  const payment = await pay(w, '1.00 NZD');
  const receipt = await receiptOf(w, payment.id);
  assert.equal(receipt.gst.value, '0.13 NZD');
  const refund = async (amount: string) => {
    const created = await w.api.post('/v1/refunds', { payment_id: payment.id, amount });
    assert.equal(created.status, 201, created.text);
  };
  await refund('0.33 NZD');
  await runRefundJobs(w.app.deps.worker);
  await refund('0.33 NZD');
  await refund('0.34 NZD');
  // The last two succeed together, as workers in two processes would carry them out: each credit
  // note counts the other only if it was numbered first.
  const worker = w.app.deps.worker;
  const jobs = (await worker.claim(200)).filter((job) => job.kind === 'refund.execute');
  assert.equal(jobs.length, 2);
  await Promise.all(jobs.map((job) => worker.run(job)));

  const notes = (await w.api.get(`/v1/receipts?payment_id=${payment.id}&kind=credit_note`)).body.receipts;
  const inNumberOrder = notes.sort((a: any, b: any) => a.number.localeCompare(b.number));
  assert.deepEqual(
    inNumberOrder.map((note: any) => note.number),
    ['CN-000001', 'CN-000002', 'CN-000003'],
  );
  // Whatever order they were credited in, 0.33, 0.34 and 0.33 of 1.00 hold GST of 0.04, 0.09 and 0.13 so
  // far: 0.04, 0.05 and 0.04 each. Rounded one by one they would be 0.04 each, 0.12 in all.
  assert.deepEqual(
    inNumberOrder.map((note: any) => note.gst.value),
    ['0.04 NZD', '0.05 NZD', '0.04 NZD'],
  );
  for (const note of inNumberOrder)
    assert.ok(
      note.lines.some(
        (line: any) => line.label === 'Includes GST of' && line.value === `-$${note.gst.value.split(' ')[0]}`,
      ),
    );
});

test('the payer’s email carries the same figures as the PDF, through a real SMTP server', async (t) => {
  const smtp = await smtpReceiver(t);
  const w = await world(t, smtp);
  // Test mode emails only the merchant's own people (docs/email.md, Transport): the payer is on its team.
  await createOwnerMember(w.app.deps.db, {
    userId: w.merchant.userId,
    email: 'aroha@example.com',
    passwordHash: 'unused',
    now: Date.now(),
  });
  await w.live.post('/v1/tax-settings', { ...SETTINGS, prices_include_gst: false });
  const receipt = await receiptOf(w, (await pay(w, '460.00 NZD', { email: 'Aroha@Example.com' })).id);
  const mail = await smtp.waitFor((m) => m.to === 'aroha@example.com' && m.subject.includes(receipt.number));
  assert.equal(mail.subject, `[Test] Tax invoice ${receipt.number} from Kōwhai Coffee Limited`);
  const pdf = await pdfTextOf(w, receipt.id);
  for (const line of receipt.lines) {
    assert.ok(mail.text.includes(`${line.label}: ${line.value}`), `email text: ${line.label}`);
    assert.ok(mail.html.includes(line.value), `email html: ${line.value}`);
    assert.ok(pdf.includes(`${line.label} ${line.value}`), `pdf: ${line.label} ${line.value}`);
  }
  assert.ok(mail.text.includes('Price excluding GST: $400.00'));
  assert.ok(mail.text.includes('GST at 15%: $60.00'));
});

test('over $1,000 the pay page asks for the buyer’s name and address, and the tax invoice shows them', async (t) => {
  const w = await world(t);
  const small = await createRequest(w, { amount: '1000.00 NZD' });
  const request = await createRequest(w, { amount: '1500.00 NZD', message: 'Catering' });
  // Before the merchant issues tax invoices, nothing is asked.
  assert.doesNotMatch(await (await fetch(`${w.baseUrl}/pay/${request.id}`)).text(), /name="first_name"/);
  await w.live.post('/v1/tax-settings', SETTINGS);
  const page = await (await fetch(`${w.baseUrl}/pay/${request.id}`)).text();
  assert.match(page, /id="first_name" name="first_name"[^>]* required/);
  assert.match(page, /id="address1" name="address1"[^>]* required/);
  assert.match(page, /shows the buyer’s name and address/);
  assert.doesNotMatch(await (await fetch(`${w.baseUrl}/pay/${small.id}`)).text(), /name="first_name"/);

  const missing = await submitPage(w.baseUrl, request.id, { bank: 'sandbox' });
  assert.equal(missing.status, 400);
  assert.match(missing.body, /Enter your first name/);
  assert.match(missing.body, /Enter your street address/);
  assert.equal((await w.api.get(`/v1/requests/${request.id}/payments`)).body.payments.length, 0);

  await payViaPage(w, request.id, {
    first_name: 'Aroha',
    last_name: 'Ngata',
    address1: '12 Tāmaki Drive',
    city: 'Auckland',
    postcode: '1071',
  });
  const [payment] = (await w.api.get(`/v1/requests/${request.id}/payments`)).body.payments;
  assert.equal(payment.status, 'successful');
  const receipt = await receiptOf(w, payment.id);
  assert.equal(receipt.title, 'Tax invoice');
  assert.ok(receipt.lines.some((line: any) => line.value === '12 Tāmaki Drive, Auckland 1071'));
});
