import type { Logger } from 'pino';

// The seam between the service and a payer's bank. One implementation speaks the NZ
// payment-initiation standard over HTTP (open-banking.connector.ts); the sandbox bank implements
// the bank side of the same standard. Expected outcomes are values, never exceptions.
//
// The payer's browser comes back from the bank to `${PUBLIC_BASE_URL}/pay/return?state=…&code=…`
// (or `&error=…`): that is the redirect URI registered for the service at every bank.
//
// `at` (epoch ms) is the caller's clock. Real banks use their own time and ignore it; the sandbox
// bank uses it as "now" for consent validity and limit periods, so test-mode work on a merchant's
// advanced test clock sees the bank agree about which day, week or month it is.

export type BankFailure = {
  ok: false;
  /** Short machine reason, e.g. 'insufficient_funds', 'consent_revoked', 'limit_exceeded', 'timeout'. */
  reason: string;
  /** Human-readable detail from the bank (its error Code/Message). */
  message: string;
  /** The bank's error code when it gave one (e.g. Resource.Consent.Exceed.MaximumAmount). */
  bankCode?: string;
  /** True when the outcome is unknown (timeout, 5xx, network): the call may or may not have taken effect. */
  unknown: boolean;
  /**
   * With reason 'limit_exceeded': which of the consent's limits the bank applied, in the service's
   * words: 'max_per_payment' | 'max_per_period' | 'total_count' | 'total_amount' | 'end_date'.
   */
  limit?: string;
};
export type BankResult<T> = ({ ok: true } & T) | BankFailure;

export type Creditor = { name: string; accountNumber: string };
/** The statement text block on both sides: particulars V-XXXXXX, code TONO, merchant reference. */
export type Remittance = { particulars: string; code: string; reference: string };

/** The standard's Frequency.Period; it has no quarter (docs/banks.md says how quarterly plans map). */
export type EnduringPeriod = 'Daily' | 'Weekly' | 'Fortnightly' | 'Monthly' | 'Annual';

/** Ids that go into the log line of each bank call with its x-fapi-interaction-id, e.g. { payment_id }. */
export type Trace = Record<string, string>;

export type SingleConsentInput = {
  trace?: Trace;
  amountCents: number;
  creditor: Creditor;
  remittance: Remittance;
  idempotencyKey: string;
  at?: number;
};

export type EnduringConsentInput = {
  trace?: Trace;
  fromAt: number;
  toAt: number | null;
  /** Sent as the standard's required MaximumAmount; without one, the per-period cap is the most one payment can be. */
  maxPerPaymentCents: number | null;
  period: EnduringPeriod;
  maxPerPeriodCents: number;
  /** Payments allowed in one period (the standard's Frequency.TotalCount), if limited. */
  maxCountPerPeriod: number | null;
  totalCount: number | null;
  totalAmountCents: number | null;
  creditor: Creditor;
  /** Not part of the standard's enduring consent: each payment carries its own statement block. */
  remittance: Remittance;
  idempotencyKey: string;
  at?: number;
};

/** The payer's account as the bank released it for a payment (kept for refunds). */
export type DebtorAccount = { schemeName: string; identification: string; name: string | null };

/** A consent at the bank and the status the bank reports for it (the standard has no Expired: an ended consent stays Authorised). */
export type BankConsentStatus = 'AwaitingAuthorisation' | 'Authorised' | 'Rejected' | 'Consumed' | 'Revoked';
/** Payment outcome mapped from the standard's statuses. */
export type BankPaymentOutcome = 'successful' | 'failed' | 'pending';

/**
 * A consent-bound access token as the bank's token endpoint gave it: with the refresh token that
 * renews it and when it expires (epoch ms, real time), when the bank gave them (OAuth 2's
 * refresh_token and expires_in); a bank that gives neither issues a token that does not expire.
 */
export type ConsentTokens = { accessToken: string; refreshToken: string | null; expiresAt: number | null };

export type PaymentSubmission = {
  trace?: Trace;
  consentId: string;
  /** The consent-bound access token from exchangeCode. */
  accessToken: string;
  amountCents: number;
  creditor: Creditor;
  remittance: Remittance;
  /** Sent as x-idempotency-key: the bank processes one payment per key. */
  idempotencyKey: string;
  at?: number;
};

export interface BankConnector {
  readonly bankId: string;
  createSingleConsent(input: SingleConsentInput): Promise<BankResult<{ consentId: string }>>;
  createEnduringConsent(input: EnduringConsentInput): Promise<BankResult<{ consentId: string }>>;
  /** Where to send the payer to log in and approve. */
  authoriseUrl(input: { consentId: string; redirectUri: string; state: string }): string;
  /** The bank redirected back with ?code: exchange it (once) for a consent-bound token. */
  exchangeCode(input: {
    code: string;
    redirectUri: string;
  }): Promise<BankResult<ConsentTokens & { consentId: string }>>;
  /**
   * A new access token for an enduring consent (grant_type=refresh_token), with a new refresh token
   * when the bank rotates them. Never repeated within the call: a refresh token may work once. A
   * refusal of the refresh token itself is reason 'refresh_refused' (OAuth's invalid_grant).
   */
  refreshConsentToken(input: { refreshToken: string; trace?: Trace }): Promise<BankResult<ConsentTokens>>;
  submitPayment(input: PaymentSubmission): Promise<SubmittedPayment>;
  /** `at` as elsewhere: the sandbox bank settles delayed payments by it. */
  getPaymentStatus(input: {
    paymentId: string;
    at?: number;
    trace?: Trace;
  }): Promise<BankResult<{ outcome: BankPaymentOutcome; failureReason?: string }>>;
  getConsent(input: {
    consentId: string;
    kind: 'single' | 'enduring';
    at?: number;
    trace?: Trace;
  }): Promise<BankResult<{ status: BankConsentStatus }>>;
  /** The account a payment was made from, when the consent asked for its release. */
  getDebtorAccount(input: { paymentId: string; trace?: Trace }): Promise<BankResult<{ account: DebtorAccount }>>;
  revokeConsent(input: { consentId: string; trace?: Trace }): Promise<BankResult<Record<never, never>>>;
}

/**
 * How long a bank keeps an x-idempotency-key (24 hours in the Payments NZ standard), less an hour for
 * clocks that differ: a payment first sent this long ago and never answered is not sent again under
 * its key, as the bank could take the key for a new payment.
 */
export const RESEND_UNDER_KEY_WITHIN_MS = 23 * 60 * 60_000;

/** Whether a payment first sent at `firstSentAt`, never answered, may still be sent again under its key at `now`. */
export function mayResendUnderKey(firstSentAt: number, now: number): boolean {
  return now - firstSentAt < RESEND_UNDER_KEY_WITHIN_MS;
}

export type SubmittedPayment = BankResult<{ paymentId: string; outcome: BankPaymentOutcome; failureReason?: string }>;

/**
 * How a payment the bank already named stands now, answered as a submission is. Asking is how a
 * payment the bank took and left pending is followed: submitting it again would be answered from
 * the bank's idempotency record, which need not follow the payment (and keeps a key for 24 hours
 * only). A bank that will not say gives an unknown answer, to ask again later, never a refusal;
 * a bank that refuses to say is logged as a warning.
 */
export async function followNamedPayment(
  connector: BankConnector,
  input: { paymentId: string; at?: number; trace?: Trace },
  log: Pick<Logger, 'warn'>,
): Promise<SubmittedPayment> {
  const status = await connector.getPaymentStatus(input);
  if (!status.ok) {
    // A refusal is no answer about a payment the bank named, but unlike an outage it will not pass
    // by itself: the payment stays unconfirmed, holding what it holds, until someone looks.
    if (!status.unknown)
      log.warn(
        { ...input.trace, bank_payment_id: input.paymentId, reason: status.reason, bank_code: status.bankCode },
        `the bank would not say how a payment it named stands (${status.message}): it stays unconfirmed and is asked again`,
      );
    return { ...status, unknown: true };
  }
  return { ok: true, paymentId: input.paymentId, outcome: status.outcome, failureReason: status.failureReason };
}

/** The banks a payer can choose, and the connector for each in a mode. */
export interface BankRegistry {
  list(mode: 'live' | 'test'): Array<{ id: string; name: string }>;
  connectorFor(bankId: string, mode: 'live' | 'test'): BankConnector | null;
  /**
   * Calls one of the sandbox bank's test hooks (`/test/…`) as the service's client, for the test
   * helpers. A refusal is 409 conflict.invalid_state with the bank's message; the bank failing or out of
   * reach is 503 service_unavailable. Answers the bank's JSON reply.
   */
  sandboxTestHook(path: string, body: unknown): Promise<unknown>;
  /** The service's client at the sandbox bank, which the mounted bank accepts. */
  readonly sandboxCredentials: { clientId: string; clientSecret: string };
}
