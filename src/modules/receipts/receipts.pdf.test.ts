import { test } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import { extractText, getDocumentProxy } from 'unpdf';
import { renderMail } from '../mail/mail.templates.ts';
import { receiptPdf } from './receipt-pdf.ts';
import { buildDocument, documentNumber, type DocumentInput, type ReceiptDocument } from './receipts.rules.ts';

// Golden files: a document of each band, and a credit note, made into a PDF whose text (extracted
// with unpdf, PDF.js) must be exactly the committed test/golden/receipts/*.txt. UPDATE_GOLDEN=1 writes them
// anew, for a change that means to change what documents show. The payer's email of each shows
// the same figures, and the same document always gives the same bytes.

const golden = path.join(import.meta.dirname, '../../../test/golden/receipts');
const ISSUED = Date.UTC(2027, 2, 2, 23, 30); // 3 March 2027, 12:30pm in New Zealand

const settings = {
  legalName: 'Kōwhai Coffee Limited',
  gstNumber: '49091850',
  pricesIncludeGst: true,
  issueTaxInvoices: true,
  emailReceipts: true,
};
const base: DocumentInput = {
  kind: 'receipt',
  number: 1,
  date: '3 March 2027',
  merchantName: 'Kōwhai Coffee',
  settings,
  description: 'Flat white and a scone',
  totalCents: 1_250,
  buyer: { name: 'Aroha Ngata', address: ['12 Tāmaki Drive', 'Ōrākei', 'Auckland 1071'] },
  statement: 'Kowhai Coffee INV-7',
  paymentId: 'payment_01JD2Q8Z7M3V4K5N6P7R8S9T0V',
  original: null,
  reason: null,
  test: false,
};

const cases: Record<string, ReceiptDocument> = {
  'up-to-200': buildDocument(base),
  'up-to-1000': buildDocument({
    ...base,
    number: 2,
    totalCents: 46_000,
    description: 'Espresso machine service',
    settings: { ...settings, pricesIncludeGst: false },
  }),
  'over-1000': buildDocument({ ...base, number: 3, totalCents: 230_000, description: 'Catering, 40 people' }),
  'credit-note': buildDocument({
    ...base,
    kind: 'credit_note',
    number: 1,
    totalCents: 23_000,
    description: 'Catering, 40 people',
    original: { number: documentNumber('receipt', 3), date: '3 March 2027' },
    reason: 'Ten fewer people came',
  }),
  'no-tax-settings': buildDocument({ ...base, number: 4, settings: null, totalCents: 46_000 }),
};

async function pdfText(pdf: Buffer): Promise<string> {
  const document = await getDocumentProxy(new Uint8Array(pdf));
  const { text } = await extractText(document, { mergePages: true });
  return `${text.trim()}\n`;
}

for (const [name, document] of Object.entries(cases)) {
  test(`the PDF of ${name} reads as its golden file, and its email shows the same figures`, async () => {
    const pdf = await receiptPdf(document, ISSUED);
    assert.ok(pdf.subarray(0, 5).toString() === '%PDF-');
    assert.deepEqual(await receiptPdf(document, ISSUED), pdf, 'the same document gives the same bytes');
    const text = await pdfText(pdf);
    const file = path.join(golden, `${name}.txt`);
    if (process.env.UPDATE_GOLDEN === '1') fs.writeFileSync(file, text);
    assert.equal(text, fs.readFileSync(file, 'utf8'));

    const mail = renderMail(
      'receipt',
      { merchant: document.supplier, document, test: false, dashboard: true },
      'https://pay.example/customer',
    );
    assert.equal(
      mail.subject,
      `${document.title} ${document.number} from Kōwhai ${document.supplier.includes('Limited') ? 'Coffee Limited' : 'Coffee'}`,
    );
    for (const line of document.lines) {
      assert.ok(mail.text.includes(`${line.label}: ${line.value}`), `text part: ${line.label}`);
      assert.ok(mail.html.includes(line.value.replace(/’/g, '’')), `html part: ${line.value}`);
      // The PDF may wrap a long value; its words are all there, in order.
      assert.ok(text.replace(/\s+/g, ' ').includes(line.value.replace(/\s+/g, ' ')), `pdf: ${line.value}`);
    }
  });
}

test('what each band shows: GST from $200, the buyer over $1,000, and a plain receipt without tax settings', () => {
  const show = (doc: ReceiptDocument) => doc.lines.map((line) => line.label);
  assert.equal(cases['up-to-200']!.title, 'Tax invoice');
  assert.ok(!show(cases['up-to-200']!).includes('Buyer'));
  assert.ok(show(cases['up-to-1000']!).includes('GST at 15%'));
  assert.ok(show(cases['over-1000']!).includes('Buyer'));
  assert.equal(cases['no-tax-settings']!.title, 'Receipt');
  assert.ok(!show(cases['no-tax-settings']!).includes('GST number'));
});
