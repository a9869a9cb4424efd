import { AppError, invalidParam, notFound } from '../../shared/errors.ts';
import { newId } from '../../shared/ids.ts';
import { pageOf } from '../../shared/pagination.ts';
import { DEFAULT_ZONE, inZone } from '../../shared/zone.ts';
import type { Db } from '../../store/db.ts';
import { transact } from '../../store/store.ts';
import { recordAuditFor } from '../audit/audit.service.ts';
import { payerOfConsent } from '../consents/consents.service.ts';
import type { Ctx } from '../context.ts';
import { findCustInfoOfPayment } from '../customers/customers.service.ts';
import { queueMail } from '../mail/mail.service.ts';
import type { EmittedEvent } from '../manifest.ts';
import { merchantContact } from '../merchants/merchants.service.ts';
import { findPaymentById, type PaymentRow } from '../payments/payments.service.ts';
import { refundById, type RefundRow } from '../refunds/refunds.service.ts';
import { findRequestById } from '../requests/requests.service.ts';
import { payerOfSubscription, sendPlainChargeReceipt } from '../subscriptions/subscriptions.service.ts';
import { receiptPdf } from './receipt-pdf.ts';
import * as repo from './receipts.repo.ts';
import {
  bandOf,
  buildDocument,
  formatGstNumber,
  gstDigitsOf,
  isValidIrdNumber,
  issuesTaxInvoices,
  needsBuyerDetails,
  type Buyer,
  type DocumentKind,
  type ReceiptDocument,
  type TaxSettings,
} from './receipts.rules.ts';
import { presentReceipt, presentTaxSettings } from './receipts.present.ts';
import type { ReceiptRow, TaxSettingsRow } from './receipts.tables.ts';

// Receipts, tax invoices and credit notes (docs/receipts.md). Once the merchant has set up its tax
// settings, a document is issued in the transaction that makes its payment or refund successful
// (the manifest's onEvent hears payment.status_updated and refund.status_updated as they are
// written), numbered by a counter moved in that transaction, and frozen: the JSON of what it shows
// is stored, and the email and the PDF are both made from it. The payer is emailed it when the
// merchant turns that on, and always for a subscription's charge (which had its receipt by email
// before receipts existed).

const ownerOf = (ctx: Ctx) => ({ userId: ctx.merchant.id, mode: ctx.mode });

// ---------------------------------------------------------------------------------------------
// Tax settings.

export function settingsOf(row: TaxSettingsRow | undefined): TaxSettings | null {
  if (!row) return null;
  return {
    legalName: row.legal_name,
    gstNumber: row.gst_number,
    pricesIncludeGst: row.prices_include_gst === 1,
    issueTaxInvoices: row.issue_tax_invoices === 1,
    emailReceipts: row.email_receipts === 1,
  };
}

export async function taxSettingsOf(db: Db, userId: string): Promise<TaxSettings | null> {
  return settingsOf(await repo.findTaxSettings(db, userId));
}

/** Whether the hosted page must ask this merchant's payer of `cents` for their name and address. */
export async function buyerDetailsNeeded(db: Db, userId: string, cents: number): Promise<boolean> {
  return needsBuyerDetails(cents, issuesTaxInvoices(await taxSettingsOf(db, userId)));
}

/** Whether the merchant issues tax invoices at all (the hosted page says so by a payer-chosen amount). */
export async function merchantIssuesTaxInvoices(db: Db, userId: string): Promise<boolean> {
  return issuesTaxInvoices(await taxSettingsOf(db, userId));
}

export type TaxSettingsInput = {
  legal_name: string;
  gst_number?: string | null;
  prices_include_gst: boolean;
  issue_tax_invoices: boolean;
  email_receipts: boolean;
};

/** The input checked: every problem is a clear error, and nothing is written. */
export function checkTaxSettings(input: TaxSettingsInput): TaxSettings {
  const legalName = input.legal_name.trim();
  if (legalName === '') throw invalidParam('legal_name', 'legal_name must not be empty: the name your documents show');
  if (legalName.length > 200) throw invalidParam('legal_name', 'legal_name must be at most 200 characters');
  const typed = (input.gst_number ?? '').trim();
  let gstNumber: string | null = null;
  if (typed !== '') {
    const digits = gstDigitsOf(typed);
    if (digits === null || !isValidIrdNumber(digits))
      throw invalidParam(
        'gst_number',
        'gst_number is not a valid GST number: 8 or 9 digits such as 49-091-850, whose last digit is its check digit',
      );
    gstNumber = digits;
  }
  if (input.issue_tax_invoices && gstNumber === null)
    throw invalidParam('gst_number', 'A tax invoice shows your GST number: give gst_number to issue tax invoices');
  return {
    legalName,
    gstNumber,
    pricesIncludeGst: input.prices_include_gst,
    issueTaxInvoices: input.issue_tax_invoices,
    emailReceipts: input.email_receipts,
  };
}

export async function retrieveTaxSettings(ctx: Ctx) {
  const settings = await taxSettingsOf(ctx.db, ctx.merchant.id);
  return { tax_settings: settings ? presentTaxSettings(settings) : null };
}

/**
 * Saves the merchant's tax settings (both modes), recorded in the audit trail. Documents already
 * issued keep what they show.
 */
export async function saveTaxSettings(ctx: Ctx, input: TaxSettingsInput) {
  const settings = checkTaxSettings(input);
  const now = ctx.clock.now();
  await transact(ctx.db, async (trx) => {
    const before = settingsOf(await repo.findTaxSettings(trx, ctx.merchant.id));
    await repo.saveTaxSettings(trx, {
      user_id: ctx.merchant.id,
      legal_name: settings.legalName,
      gst_number: settings.gstNumber,
      prices_include_gst: settings.pricesIncludeGst ? 1 : 0,
      issue_tax_invoices: settings.issueTaxInvoices ? 1 : 0,
      email_receipts: settings.emailReceipts ? 1 : 0,
      created_at: now,
      updated_at: now,
    });
    const after = presentTaxSettings(settings);
    const changes = Object.fromEntries(
      Object.entries(after)
        .filter(([key, value]) => !before || (presentTaxSettings(before) as Record<string, unknown>)[key] !== value)
        .map(([key, value]) => [
          key,
          before ? { from: (presentTaxSettings(before) as Record<string, unknown>)[key], to: value } : value,
        ]),
    );
    await recordAuditFor(trx, ctx, 'tax_settings.update', null, changes, null);
  });
  return { tax_settings: presentTaxSettings(settings) };
}

/**
 * POST /v1/tax-settings: a live key only. The settings are both modes', and test keys are handed
 * to CI systems and contractors: what they do must never change a live receipt (the dashboard
 * changes them in either mode, for members allowed to).
 */
export async function saveTaxSettingsWithKey(ctx: Ctx, input: TaxSettingsInput) {
  if (ctx.mode !== 'live')
    throw new AppError(
      'forbidden.live_key_required',
      'Tax settings are the same in live and test mode, so only a live key changes them (a test key reads them); or change them in the dashboard',
    );
  return saveTaxSettings(ctx, input);
}

// ---------------------------------------------------------------------------------------------
// Issuing documents, in the transaction of the payment's or refund's success.

type Payer = { email: string; title: string | null; dashboard: boolean; subscription: boolean };

async function payerOf(db: Db, payment: PaymentRow): Promise<Payer | null> {
  if (payment.subscription_id) {
    const payer = await payerOfSubscription(db, payment.subscription_id);
    return payer && { ...payer, dashboard: true, subscription: true };
  }
  if (payment.recurring_consent_id) {
    const payer = await payerOfConsent(db, payment.recurring_consent_id);
    return payer && { ...payer, dashboard: true, subscription: false };
  }
  const details = await findCustInfoOfPayment(db, payment.id);
  return details?.email ? { email: details.email, title: null, dashboard: false, subscription: false } : null;
}

async function buyerOf(db: Db, paymentId: string): Promise<Buyer | null> {
  const details = await findCustInfoOfPayment(db, paymentId);
  if (!details) return null;
  const name = [details.first_name, details.last_name].filter((part) => part && part.trim() !== '').join(' ');
  if (name === '') return null;
  const town = [details.city, details.postcode].filter((part) => part !== '').join(' ');
  const address = [details.address1, details.address2, details.address3, details.address4, town].filter(
    (part) => part.trim() !== '',
  );
  if (address.length === 0) return null;
  return { name, address };
}

/** A date as documents print it: 3 March 2027, in New Zealand. */
export function documentDate(ms: number): string {
  return inZone(ms, DEFAULT_ZONE).toFormat('d LLLL yyyy');
}

const statementOf = (row: { particulars: string; code: string; reference: string | null }) =>
  [row.particulars, row.code, row.reference ?? ''].filter((part) => part.trim() !== '').join(' ') || '(blank)';

/**
 * Runs for every event as it is written: a successful payment gets its receipt, a successful refund
 * its credit note, once the merchant has set up its tax settings (receipts are the merchant's to
 * turn on: docs/receipts.md). Before that a subscription's charge gets the plain receipt email its
 * payer always had; a refund of a payment that has a receipt gets its credit note either way.
 */
export async function issueForEvent(trx: Db, event: EmittedEvent): Promise<void> {
  if (event.type === 'payment.status_updated') {
    const payment = (event.subject as PaymentRow | undefined) ?? (await findPaymentById(trx, event.objectId));
    if (payment?.status !== 'successful') return;
    const settings = settingsOf(await repo.findCommittedTaxSettings(trx, payment.user_id));
    if (settings) await issueReceipt(trx, payment, settings);
    else if (payment.subscription_id)
      await sendPlainChargeReceipt(trx, payment, Number(payment.completed_at ?? payment.updated_at));
  } else if (event.type === 'refund.status_updated') {
    const refund = await refundById(trx, event.objectId);
    if (refund?.status !== 'successful') return;
    const settings = settingsOf(await repo.findCommittedTaxSettings(trx, refund.user_id));
    const original = (await repo.findReceiptOfPayment(trx, refund.payment_id)) ?? null;
    if (settings || original) await issueCreditNote(trx, refund, settings, original);
  }
}

async function issue(
  trx: Db,
  payment: PaymentRow,
  kind: DocumentKind,
  settings: TaxSettings | null,
  details: {
    totalCents: number;
    issuedAt: number;
    statement: string;
    refund: RefundRow | null;
    original: ReceiptRow | null;
  },
): Promise<void> {
  const owner = { userId: payment.user_id, mode: payment.mode };
  // Read only what the document will show: a subscription's charges are issued by the thousand.
  const merchant = await merchantContact(trx, payment.user_id);
  const payer = await payerOf(trx, payment);
  const buyer =
    issuesTaxInvoices(settings) && bandOf(details.totalCents) === 'over_1000' ? await buyerOf(trx, payment.id) : null;
  const request = payer?.title ? null : await findRequestById(trx, payment.request_id);
  const number = await repo.nextNumber(trx, owner, kind);
  // Only now, holding the counter: the credit notes numbered before this one are all there to count.
  const creditedBeforeCents = kind === 'credit_note' ? await repo.creditedSoFar(trx, payment.id) : 0;
  const originalDoc = details.original ? (JSON.parse(details.original.document) as ReceiptDocument) : null;
  const document = buildDocument({
    kind,
    number,
    date: documentDate(details.issuedAt),
    merchantName: merchant.name,
    settings,
    description: payer?.title || request?.message?.trim() || `Payment to ${settings?.legalName ?? merchant.name}`,
    totalCents: details.totalCents,
    buyer,
    statement: details.statement,
    paymentId: payment.id,
    original: originalDoc ? { number: originalDoc.number, date: originalDoc.date } : null,
    creditedBeforeCents,
    reason: details.refund?.reason ?? null,
    test: payment.mode === 'test',
  });
  const emailed = payer !== null && (payer.subscription || settings?.emailReceipts === true);
  const row: ReceiptRow = {
    id: newId('receipt'),
    user_id: payment.user_id,
    mode: payment.mode,
    kind,
    number,
    payment_id: payment.id,
    refund_id: details.refund?.id ?? null,
    receipt_id: details.original?.id ?? null,
    total_cents: details.totalCents,
    gst_cents: document.gstCents,
    document: JSON.stringify(document),
    payer_email: emailed ? payer.email : null,
    issued_at: details.issuedAt,
  };
  await repo.insertReceipt(trx, row);
  if (emailed)
    await queueMail(
      trx,
      {
        to: payer.email,
        template: 'receipt',
        data: { merchant: document.supplier, document, test: payment.mode === 'test', dashboard: payer.dashboard },
        related: { type: 'receipt', id: row.id },
        owner,
        dedupeKey: `receipt:${row.id}`,
      },
      details.issuedAt,
    );
}

async function issueReceipt(trx: Db, payment: PaymentRow, settings: TaxSettings | null): Promise<void> {
  if (await repo.findReceiptOfPayment(trx, payment.id)) return;
  await issue(trx, payment, 'receipt', settings, {
    totalCents: payment.amount_cents,
    issuedAt: Number(payment.completed_at ?? payment.updated_at),
    statement: statementOf(payment),
    refund: null,
    original: null,
  });
}

async function issueCreditNote(
  trx: Db,
  refund: RefundRow,
  settings: TaxSettings | null,
  original: ReceiptRow | null,
): Promise<void> {
  if (await repo.findCreditNoteOfRefund(trx, refund.id)) return;
  const payment = await findPaymentById(trx, refund.payment_id);
  if (!payment) return;
  await issue(trx, payment, 'credit_note', settings, {
    totalCents: refund.amount_cents,
    issuedAt: Number(refund.completed_at ?? refund.updated_at),
    statement: statementOf(refund),
    refund,
    original,
  });
}

// ---------------------------------------------------------------------------------------------
// Reading them: the merchant's (API and dashboard) and the payer's.

export async function getReceipt(ctx: Ctx, id: string): Promise<ReceiptRow> {
  const row = await repo.findReceipt(ctx.db, ownerOf(ctx), id);
  if (!row) throw notFound('receipt', id);
  return row;
}

export async function retrieveReceipt(ctx: Ctx, id: string) {
  return { receipt: presentReceipt(await getReceipt(ctx, id)) };
}

export type ListReceiptsQuery = {
  limit?: number;
  starting_after?: string;
  payment_id?: string;
  refund_id?: string;
  kind?: DocumentKind;
};

export async function listReceiptsFor(ctx: Ctx, query: ListReceiptsQuery) {
  const limit = query.limit ?? 100;
  const { items, hasMore } = pageOf(await repo.listReceipts(ctx.db, ownerOf(ctx), { ...query, limit }), limit);
  return { receipts: items.map(presentReceipt), has_more: hasMore };
}

/** The documents of one of the caller's payments (its receipt and credit notes), oldest first. */
export async function receiptsOfPayment(ctx: Ctx, paymentId: string): Promise<ReceiptRow[]> {
  const rows = await repo.receiptsOfPayments(ctx.db, [paymentId]);
  return rows.filter((row) => row.user_id === ctx.merchant.id && row.mode === ctx.mode);
}

/** Documents of these payments, for the payer's pages (which have already checked the payments are the payer's). */
export function receiptsOfPayments(db: Db, paymentIds: readonly string[]): Promise<ReceiptRow[]> {
  return repo.receiptsOfPayments(db, paymentIds);
}

export function documentOf(row: ReceiptRow): ReceiptDocument {
  return JSON.parse(row.document) as ReceiptDocument;
}

export type ReceiptFile = { filename: string; pdf: Buffer };

export async function pdfOfRow(row: ReceiptRow): Promise<ReceiptFile> {
  const document = documentOf(row);
  const filename = `${row.mode === 'test' ? 'test-' : ''}${document.number}.pdf`;
  return { filename, pdf: await receiptPdf(document, Number(row.issued_at)) };
}

/** The PDF of one of the caller's documents; another merchant's, or the other mode's, is not found. */
export async function receiptPdfFor(ctx: Ctx, id: string): Promise<ReceiptFile> {
  return pdfOfRow(await getReceipt(ctx, id));
}

/** A document by id for the payer dashboard, which checks its payment is the payer's. */
export function receiptById(db: Db, id: string): Promise<ReceiptRow | undefined> {
  return repo.findReceiptById(db, id);
}

export { formatGstNumber, presentReceipt, presentTaxSettings };
export type { ReceiptDocument, ReceiptRow, TaxSettings };
