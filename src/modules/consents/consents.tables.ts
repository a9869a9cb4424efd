// Row types of the consents module, merged into the store's Database in src/store/tables.ts.

export interface RecurringConsentsTable {
  id: string;
  user_id: string;
  mode: 'live' | 'test';
  /** active | revoked | expired */
  status: string;
  request_id: string;
  /** The merchant account paid into (the request's). */
  bank_account_id: string;
  customer_id: string | null;
  email: string;
  /** What it is for: the request's message ("Top-ups"), its title on every page and email. */
  description: string;
  merchant_identifier: string | null;
  /** The request's statement reference, the default for executions that give none. */
  reference: string | null;
  /** SHA-256 (hex) of the token; the token itself is stored nowhere. */
  token_hash: string;
  bank_id: string;
  bank_consent_id: string;
  /** The consent-bound access token the bank issued at authorisation (or its latest renewal), sealed. */
  bank_access_token: string;
  /** The refresh token that renews it, sealed; null when the bank gave none (docs/banks.md, "Consent tokens that expire"). */
  bank_refresh_token: string | null;
  /** When the access token expires (epoch ms, real time), when the bank said; null: not known to expire. */
  bank_token_expires_at: number | null;
  period: string;
  max_per_period_cents: number;
  max_per_payment_cents: number | null;
  total_count: number | null;
  total_amount_cents: number | null;
  end_at: number | null;
  /**
   * When the consent starts at the bank: the FromDateTime it was asked with, when the payer was sent
   * to approve it (before created_at). The bank counts fortnights from the week that contains it.
   */
  starts_at: number;
  /** merchant | payer | bank */
  revoked_by: string | null;
  created_at: number;
  updated_at: number;
  revoked_at: number | null;
  expired_at: number | null;
  /** Counted payments (successful, unconfirmed, in flight) in total: how many and their sum. */
  used_count: number;
  used_cents: number;
  /** The calendar window the period counters hold, [start, end); null when no window is held yet. */
  period_start: number | null;
  period_end: number | null;
  /** Counted payments created inside [period_start, period_end). */
  period_count: number;
  period_cents: number;
}

export interface ConsentTables {
  recurring_consents: RecurringConsentsTable;
}

declare module '../../store/tables.ts' {
  interface Database extends ConsentTables {}
}
