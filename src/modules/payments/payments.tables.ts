import type { Selectable } from 'kysely';
import type { Mode } from '../../shared/mode.ts';

export interface PaymentsTable {
  id: string;
  user_id: string;
  mode: Mode;
  request_id: string;
  /** awaiting-consent | successful | failed | cancelled | unconfirmed */
  status: string;
  /** What was asked for; limits and caps use this. */
  amount_cents: number;
  /** What moves at the bank: the same, except 1 cent in test mode. */
  settled_cents: number;
  bank_id: string | null;
  particulars: string;
  code: string;
  reference: string | null;
  merchant_identifier: string | null;
  bank_consent_id: string | null;
  bank_payment_id: string | null;
  /** OAuth-style state tying the bank's redirect back to this payment. */
  auth_state: string | null;
  recurring_consent_id: string | null;
  subscription_id: string | null;
  idempotency_key: string | null;
  fingerprint: string | null;
  failure_reason: string | null;
  created_at: number;
  updated_at: number;
  completed_at: number | null;
  /** When execution at the bank was claimed (migration 0005); null until then. */
  submitted_at: number | null;
  /** 'page' | 'embed' | 'api' (migration 0005). */
  channel: string | null;
  /** The payer's account from the bank, sealed JSON { scheme_name, identification, name } (migration 0016); null until read. */
  payer_account_sealed: string | null;
  /** What refunds not failed add up to, in requested cents (migration 0030); never more than amount_cents. */
  refunded_cents: number;
  /**
   * A one-off payment's bank access token, sealed, while it is claimed for submission and the bank
   * has not named it (migration 0032): the reconciler submits again with it, under the same key.
   */
  submission_token_sealed: string | null;
}

/**
 * The payer's account behind an enduring consent (a recurring consent or a subscription), as the
 * bank released it for the first successful payment under it (migration 0022): every later payment
 * under that consent debits the same account, and takes it from here (docs/banks.md).
 */
export interface EnduringPayerAccountsTable {
  /** The recurring consent's or the subscription's id. */
  enduring_id: string;
  /** Sealed JSON { scheme_name, identification, name }, as payments.payer_account_sealed. */
  payer_account_sealed: string;
  created_at: number;
}

export interface PaymentTables {
  payments: PaymentsTable;
  enduring_payer_accounts: EnduringPayerAccountsTable;
}

declare module '../../store/tables.ts' {
  interface Database extends PaymentTables {}
}

export type PaymentRow = Selectable<PaymentsTable>;
