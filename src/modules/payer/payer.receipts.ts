import { AppError } from '../../shared/errors.ts';
import { consentOfPayer } from '../consents/consents.payer.ts';
import type { Deps } from '../context.ts';
import { findPaymentById } from '../payments/payments.service.ts';
import {
  documentOf,
  pdfOfRow,
  receiptById,
  receiptsOfPayments,
  type ReceiptFile,
} from '../receipts/receipts.service.ts';
import { subscriptionOfPayer } from '../subscriptions/subscriptions.payer.ts';

// The receipts and credit notes of the payments the payer dashboard shows (docs/payer.md, docs/receipts.md):
// listed under each payment, and downloaded as PDFs. A document is the payer's when its payment is
// under one of the payer's subscriptions or recurring consents; any other is not found.

export type PayerDocumentLine = { id: string; label: string };

/** The documents of each of these payments (already the payer's), oldest first. */
export async function documentsByPayment(
  deps: Deps,
  paymentIds: readonly string[],
): Promise<Map<string, PayerDocumentLine[]>> {
  const byPayment = new Map<string, PayerDocumentLine[]>();
  for (const row of await receiptsOfPayments(deps.db, paymentIds)) {
    const document = documentOf(row);
    const lines = byPayment.get(row.payment_id) ?? [];
    lines.push({ id: row.id, label: `${document.title} ${document.number}` });
    byPayment.set(row.payment_id, lines);
  }
  return byPayment;
}

/** The PDF of one of the payer's documents, or null when it is not theirs (or does not exist). */
export async function payerReceiptPdf(deps: Deps, email: string, id: string): Promise<ReceiptFile | null> {
  const row = await receiptById(deps.db, id);
  const payment = row && (await findPaymentById(deps.db, row.payment_id));
  if (!row || !payment) return null;
  try {
    if (payment.subscription_id) await subscriptionOfPayer(deps, email, payment.subscription_id);
    else if (payment.recurring_consent_id) await consentOfPayer(deps, email, payment.recurring_consent_id);
    else return null;
  } catch (error) {
    if (error instanceof AppError && error.status === 404) return null;
    throw error;
  }
  return pdfOfRow(row);
}
