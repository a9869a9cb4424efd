// Row types of the sandbox bank's own tables (prefix sandbox_). Same conventions as the service:
// epoch milliseconds, integer cents, JSON as text. The sandbox bank only ever touches these.

export interface SandboxPayersTable {
  id: string;
  username: string;
  name: string;
  account_number: string;
  balance_cents: number;
  /**
   * A business customer's arrangement with the bank: payments under an enduring consent it
   * approved may go to any account (refunds to the accounts payments came from), not only the
   * creditor accounts the consent names. 1 or 0.
   */
  refund_arrangement: number;
  created_at: number;
}

export interface SandboxConsentsTable {
  id: string;
  /** domestic (one-off) | enduring */
  kind: string;
  client_id: string;
  /** AwaitingAuthorisation | Authorised | Rejected | Consumed | Revoked */
  status: string;
  /** The Initiation (domestic) or ControlParameters + Initiation (enduring) as sent, JSON. */
  request_body: string;
  amount_cents: number | null;
  creditor_name: string;
  creditor_account: string;
  particulars: string;
  code: string;
  reference: string;
  from_at: number | null;
  to_at: number | null;
  max_per_payment_cents: number | null;
  period: string | null;
  max_per_period_cents: number | null;
  max_count_per_period: number | null;
  total_count: number | null;
  total_amount_cents: number | null;
  payer_id: string | null;
  /** Test hook: refuse the next N executions with decline_reason. */
  decline_next: number;
  decline_reason: string | null;
  /** Test hook: hold new payments unconfirmed; -1 until released, else seconds. Null: settle at once. */
  hold_seconds: number | null;
  /** The status held payments report: Pending or AcceptedSettlementInProcess. */
  hold_status: string | null;
  /** Payments under this consent that were not rejected: how many, and their sum. */
  used_count: number;
  used_cents: number;
  /** The calendar window the period counters hold, [start, end); null before the first payment. */
  period_start: number | null;
  period_end: number | null;
  period_count: number;
  period_cents: number;
  created_at: number;
  updated_at: number;
  status_updated_at: number;
}

export interface SandboxAuthorisationsTable {
  id: string;
  consent_id: string;
  client_id: string;
  redirect_uri: string;
  state: string;
  payer_id: string | null;
  code_hash: string | null;
  code_expires_at: number | null;
  code_used_at: number | null;
  created_at: number;
  expires_at: number;
}

export interface SandboxTokensTable {
  token_hash: string;
  client_id: string;
  /** Null for a client-credentials token; the consent for an authorization_code token. */
  consent_id: string | null;
  created_at: number;
  expires_at: number | null;
}

/**
 * A refresh token, issued with an enduring consent's access token (RFC 6749 section 6), kept as its
 * SHA-256 only. Each is used once: a refresh rotates it, so the one issued with the new access
 * token is the next to use.
 */
export interface SandboxRefreshTokensTable {
  token_hash: string;
  client_id: string;
  consent_id: string;
  created_at: number;
  /** When a refresh used it (and issued its successor); a second use is refused with invalid_grant. */
  used_at: number | null;
  /** When a test hook revoked it (the bank stops renewing the consent's access); null while usable. */
  revoked_at: number | null;
}

export interface SandboxPaymentsTable {
  id: string;
  consent_id: string;
  client_id: string;
  payer_id: string;
  /** Pending | AcceptedSettlementInProcess | AcceptedSettlementCompleted | Rejected */
  status: string;
  /** Why it was rejected: InsufficientFunds, FraudCheck, Declined, … */
  status_reason: string | null;
  amount_cents: number;
  /** Whether the payer's balance has been debited (and must be refunded if it is later rejected). */
  debited: number;
  /**
   * The holder of the creditor account, when this bank holds it, credited with the amount as the
   * payer was debited; null when it holds no such account, and once a rejection took the credit back.
   */
  credited_payer_id: string | null;
  request_body: string;
  /** Bank time ("now" of the request) when it was made, for limit periods. */
  executed_at: number;
  /** Held payments settle when bank time reaches this; null with a hold means until released. */
  release_at: number | null;
  held: number;
  created_at: number;
  updated_at: number;
}

export interface SandboxIdempotencyTable {
  client_id: string;
  endpoint: string;
  key: string;
  fingerprint: string;
  resource_id: string;
  created_at: number;
}

export interface SandboxTables {
  sandbox_payers: SandboxPayersTable;
  sandbox_consents: SandboxConsentsTable;
  sandbox_authorisations: SandboxAuthorisationsTable;
  sandbox_tokens: SandboxTokensTable;
  sandbox_refresh_tokens: SandboxRefreshTokensTable;
  sandbox_payments: SandboxPaymentsTable;
  sandbox_idempotency: SandboxIdempotencyTable;
}

declare module '../store/tables.ts' {
  interface Database extends SandboxTables {}
}
