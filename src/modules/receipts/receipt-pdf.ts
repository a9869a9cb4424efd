import { createRequire } from 'node:module';
import path from 'node:path';
import type { ReceiptDocument } from './receipts.rules.ts';

// A document as a PDF, with pdfkit. The same bytes every time for the same document: its dates are
// the document's issue time, and nothing random goes in (pdfkit's file id is a hash of those
// dates). DejaVu Sans is embedded (a subset of it) because PDF's built-in fonts have no macrons,
// and Māori names and places have them.

const require = createRequire(import.meta.url);
const fontDir = path.join(path.dirname(require.resolve('dejavu-fonts-ttf/package.json')), 'ttf');
const REGULAR = path.join(fontDir, 'DejaVuSans.ttf');
const BOLD = path.join(fontDir, 'DejaVuSans-Bold.ttf');

/** pdfkit, with its font engine some 50 modules, is loaded at the first document, not at every start. */
const pdfkit = () => import('pdfkit');

export async function receiptPdf(doc: ReceiptDocument, issuedAt: number): Promise<Buffer> {
  const { default: PDFDocument } = await pdfkit();
  const when = new Date(issuedAt);
  const pdf = new PDFDocument({
    size: 'A4',
    margin: 56,
    info: {
      Title: `${doc.title} ${doc.number}`,
      Author: doc.supplier,
      Creator: 'Tono',
      Producer: 'Tono',
      CreationDate: when,
      ModDate: when,
    },
    lang: 'en-NZ',
  });
  const chunks: Buffer[] = [];
  pdf.on('data', (chunk: Buffer) => chunks.push(chunk));
  const done = new Promise<Buffer>((resolve, reject) => {
    pdf.on('end', () => resolve(Buffer.concat(chunks)));
    pdf.on('error', reject);
  });

  pdf.registerFont('regular', REGULAR);
  pdf.registerFont('bold', BOLD);
  const left = pdf.page.margins.left;
  const labelWidth = 200;
  const valueWidth = pdf.page.width - left - pdf.page.margins.right - labelWidth - 12;

  pdf.font('bold').fontSize(22).text(doc.title, left, pdf.y);
  pdf.moveDown(0.2);
  pdf.font('regular').fontSize(12).text(doc.supplier);
  pdf.moveDown(1);

  pdf.fontSize(11);
  for (const line of doc.lines) {
    const top = pdf.y;
    pdf.font('bold').text(line.label, left, top, { width: labelWidth });
    const afterLabel = pdf.y;
    pdf.font('regular').text(line.value, left + labelWidth + 12, top, { width: valueWidth });
    pdf.y = Math.max(pdf.y, afterLabel) + 4;
  }
  if (doc.notes.length > 0) {
    pdf.moveDown(1);
    pdf.font('regular').fontSize(10);
    for (const note of doc.notes) pdf.text(note, left, pdf.y, { width: labelWidth + 12 + valueWidth });
  }
  pdf.end();
  return done;
}
