import { formatAmount } from '../../shared/money.ts';
import { iso } from '../../shared/time.ts';
import {
  formatGstNumber,
  type Band,
  type DocumentKind,
  type DocumentLine,
  type TaxSettings,
} from './receipts.rules.ts';
import type { ReceiptRow } from './receipts.tables.ts';

/** The tax settings object of the API. */
export function presentTaxSettings(settings: TaxSettings) {
  return {
    legal_name: settings.legalName,
    gst_number: settings.gstNumber === null ? null : formatGstNumber(settings.gstNumber),
    prices_include_gst: settings.pricesIncludeGst,
    issue_tax_invoices: settings.issueTaxInvoices,
    email_receipts: settings.emailReceipts,
  };
}

/**
 * The receipt object of the API: a receipt (a tax invoice when it is one) or a credit note, with
 * what it shows exactly as it was issued (`lines`, `notes`), and its PDF at `/v1/receipts/{id}/pdf`.
 */
export function presentReceipt(row: ReceiptRow) {
  const document = JSON.parse(row.document) as {
    title: string;
    number: string;
    date: string;
    band: Band;
    supplier: string;
    gstNumber: string | null;
    lines: DocumentLine[];
    notes: string[];
  };
  return {
    id: row.id,
    kind: row.kind as DocumentKind,
    title: document.title,
    number: document.number,
    payment_id: row.payment_id,
    refund_id: row.refund_id,
    receipt_id: row.receipt_id,
    total: formatAmount(Number(row.total_cents)),
    gst: row.gst_cents === null ? null : formatAmount(Number(row.gst_cents)),
    band: document.band,
    supplier: document.supplier,
    gst_number: document.gstNumber,
    date: document.date,
    lines: document.lines,
    notes: document.notes,
    emailed_to: row.payer_email,
    is_test_mode: row.mode === 'test',
    issued_at: iso(Number(row.issued_at)),
  };
}
export type ReceiptObject = ReturnType<typeof presentReceipt>;
