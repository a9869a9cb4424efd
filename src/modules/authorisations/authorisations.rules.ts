import { EMPTY_DETAILS, type PayerDetails } from '../customers/customers.rules.ts';

/**
 * The payer's details for an enduring consent: what the merchant gave when creating the request
 * wins, field by field, and what the payer typed fills the rest. The email is the merchant's when
 * given (it opens the payer dashboard), lower-cased like every stored email (docs/recurring.md).
 */
export function mergePayerDetails(
  given: Partial<PayerDetails> | null,
  typed: PayerDetails | null,
): PayerDetails & { email: string } {
  const merged: PayerDetails = { ...EMPTY_DETAILS, ...(typed ?? {}) };
  for (const [key, value] of Object.entries(given ?? {})) {
    if (key in EMPTY_DETAILS && value !== undefined && value !== null && value !== '')
      (merged as Record<string, unknown>)[key] = value;
  }
  return { ...merged, email: (merged.email ?? '').trim().toLowerCase() };
}
