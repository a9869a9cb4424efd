import { iso } from '../../shared/time.ts';
import type {
  BankConnector,
  BankConsentStatus,
  BankPaymentOutcome,
  BankResult,
  ConsentTokens,
  DebtorAccount,
  EnduringConsentInput,
  PaymentSubmission,
  SingleConsentInput,
  Trace,
} from './bank-connector.ts';
import type { BankCall, BankHttp, BankReply } from './open-banking.http.ts';
import { unknownFailure } from './open-banking.http.ts';
import {
  amountOf,
  bankIdempotencyKey,
  consentStatusOf,
  creditorAccount,
  initiation,
  outcomeOf,
  refusalOf,
} from './open-banking.mapping.ts';
import { SANDBOX_REASON_HEADER, SANDBOX_TIME_HEADER } from '../../shared/open-banking.wire.ts';
import type { BankSecurity } from './security.ts';

// BankConnector for banks that follow the NZ payment-initiation standard, over HTTP. The
// security step (tokens, authorisation) is a separate BankSecurity, so only it changes per bank.

export type OpenBankingConnectorOptions = {
  bankId: string;
  /** The bank's API base, e.g. http://127.0.0.1:3000/sandbox-bank (no trailing slash). */
  baseUrl: string;
  security: BankSecurity;
  http: BankHttp;
  /** Send the caller's clock as x-sandbox-time (the sandbox bank only). */
  sendSandboxTime?: boolean;
};

export class OpenBankingConnector implements BankConnector {
  readonly bankId: string;
  private readonly baseUrl: string;
  private readonly security: BankSecurity;
  private readonly http: BankHttp;
  private readonly sendSandboxTime: boolean;

  constructor(options: OpenBankingConnectorOptions) {
    this.bankId = options.bankId;
    this.baseUrl = options.baseUrl;
    this.security = options.security;
    this.http = options.http;
    this.sendSandboxTime = options.sendSandboxTime ?? false;
  }

  async createSingleConsent(input: SingleConsentInput): Promise<BankResult<{ consentId: string }>> {
    const reply = await this.asClient({
      method: 'POST',
      url: `${this.baseUrl}/domestic-payment-consents`,
      headers: { 'x-idempotency-key': bankIdempotencyKey(input.idempotencyKey), ...this.timeHeader(input.at) },
      // DebtorAccountRelease: the payer's account is kept for refunds (getDebtorAccount).
      json: { Data: { Consent: { ...initiation(input), DebtorAccountRelease: true } }, Risk: {} },
      retryable: true,
      trace: input.trace,
    });
    return consentCreated(reply);
  }

  async createEnduringConsent(input: EnduringConsentInput): Promise<BankResult<{ consentId: string }>> {
    const consent = {
      FromDateTime: iso(input.fromAt),
      ...(input.toAt !== null && { ToDateTime: iso(input.toAt) }),
      ...(input.totalCount !== null && { TotalCount: input.totalCount }),
      DebtorAccountRelease: true,
      ...(input.totalAmountCents !== null && { TotalAmount: amountOf(input.totalAmountCents) }),
      // Required by the standard: without a per-payment maximum, one payment can be at most the period's cap.
      MaximumAmount: amountOf(input.maxPerPaymentCents ?? input.maxPerPeriodCents),
      Frequency: {
        Period: input.period,
        ...(input.maxCountPerPeriod !== null && { TotalCount: input.maxCountPerPeriod }),
        TotalAmount: amountOf(input.maxPerPeriodCents),
      },
      CreditorAccount: [creditorAccount(input.creditor)],
    };
    const reply = await this.asClient({
      method: 'POST',
      url: `${this.baseUrl}/enduring-payment-consents`,
      headers: { 'x-idempotency-key': bankIdempotencyKey(input.idempotencyKey), ...this.timeHeader(input.at) },
      json: { Data: { Consent: consent }, Risk: {} },
      retryable: true,
      trace: input.trace,
    });
    return consentCreated(reply);
  }

  authoriseUrl(input: { consentId: string; redirectUri: string; state: string }): string {
    return this.security.authoriseUrl(input);
  }

  exchangeCode(input: {
    code: string;
    redirectUri: string;
  }): Promise<BankResult<ConsentTokens & { consentId: string }>> {
    return this.security.exchangeCode(input);
  }

  refreshConsentToken(input: { refreshToken: string; trace?: Trace }): Promise<BankResult<ConsentTokens>> {
    return this.security.refreshConsentToken(input);
  }

  async submitPayment(
    input: PaymentSubmission,
  ): Promise<BankResult<{ paymentId: string; outcome: BankPaymentOutcome; failureReason?: string }>> {
    const reply = await this.http.send({
      method: 'POST',
      url: `${this.baseUrl}/domestic-payments`,
      headers: {
        ...this.security.consentHeaders(input.accessToken),
        'x-idempotency-key': bankIdempotencyKey(input.idempotencyKey),
        ...this.timeHeader(input.at),
      },
      json: { Data: { ConsentId: input.consentId, Initiation: initiation(input) }, Risk: {} },
      retryable: true,
      trace: input.trace,
    });
    if (!reply.ok) return reply;
    if (reply.status !== 201 && reply.status !== 200) return refusalOf(reply.status, reply.body);
    const data = reply.body?.Data;
    if (typeof data?.DomesticPaymentId !== 'string')
      return unknownFailure('bank_unavailable', 'The bank answered without a payment id');
    // A status the standard does not name (or none): the bank holds the payment, so it is followed
    // by its id (GET) until the bank says how it ended, never submitted again.
    const mapped = outcomeOf(data.Status, reply.headers[SANDBOX_REASON_HEADER]) ?? { outcome: 'pending' as const };
    return { ok: true, paymentId: data.DomesticPaymentId, ...mapped };
  }

  async getPaymentStatus(input: {
    paymentId: string;
    at?: number;
    trace?: Trace;
  }): Promise<BankResult<{ outcome: BankPaymentOutcome; failureReason?: string }>> {
    const reply = await this.asClient({
      method: 'GET',
      url: `${this.baseUrl}/domestic-payments/${encodeURIComponent(input.paymentId)}`,
      headers: this.timeHeader(input.at),
      retryable: true,
      trace: input.trace,
    });
    if (!reply.ok) return reply;
    if (reply.status !== 200) return refusalOf(reply.status, reply.body);
    const mapped = outcomeOf(reply.body?.Data?.Status, reply.headers[SANDBOX_REASON_HEADER]);
    if (!mapped) return unknownFailure('bank_unavailable', 'The bank answered without a payment status');
    return { ok: true, ...mapped };
  }

  async getConsent(input: {
    consentId: string;
    kind: 'single' | 'enduring';
    at?: number;
    trace?: Trace;
  }): Promise<BankResult<{ status: BankConsentStatus }>> {
    const resource = input.kind === 'single' ? 'domestic-payment-consents' : 'enduring-payment-consents';
    const reply = await this.asClient({
      method: 'GET',
      url: `${this.baseUrl}/${resource}/${encodeURIComponent(input.consentId)}`,
      headers: this.timeHeader(input.at),
      retryable: true,
      trace: input.trace,
    });
    if (!reply.ok) return reply;
    if (reply.status !== 200) return refusalOf(reply.status, reply.body);
    const status = consentStatusOf(reply.body?.Data?.Status);
    if (!status) return unknownFailure('bank_unavailable', 'The bank answered without a consent status');
    return { ok: true, status };
  }

  async getDebtorAccount(input: { paymentId: string; trace?: Trace }): Promise<BankResult<{ account: DebtorAccount }>> {
    const reply = await this.asClient({
      method: 'GET',
      url: `${this.baseUrl}/domestic-payments/${encodeURIComponent(input.paymentId)}/debtor-account`,
      retryable: true,
      trace: input.trace,
    });
    if (!reply.ok) return reply;
    if (reply.status !== 200) return refusalOf(reply.status, reply.body);
    const account = reply.body?.Data?.DebtorAccount;
    if (typeof account?.Identification !== 'string')
      return unknownFailure('bank_unavailable', 'The bank answered without a DebtorAccount');
    return {
      ok: true,
      account: {
        schemeName: String(account.SchemeName ?? 'BECSElectronicCredit'),
        identification: account.Identification,
        name: typeof account.Name === 'string' ? account.Name : null,
      },
    };
  }

  async revokeConsent(input: { consentId: string; trace?: Trace }): Promise<BankResult<Record<never, never>>> {
    const reply = await this.asClient({
      method: 'DELETE',
      url: `${this.baseUrl}/enduring-payment-consents/${encodeURIComponent(input.consentId)}`,
      retryable: true,
      trace: input.trace,
    });
    if (!reply.ok) return reply;
    if (reply.status !== 204 && reply.status !== 200) return refusalOf(reply.status, reply.body);
    return { ok: true };
  }

  /** A call with the client's token; one fresh token and one more try if the bank says 401. */
  private async asClient(call: BankCall): Promise<BankReply> {
    for (let attempt = 0; ; attempt++) {
      const auth = await this.security.clientHeaders();
      if (!auth.ok) return auth;
      const reply = await this.http.send({ ...call, headers: { ...call.headers, ...auth.headers } });
      if (reply.ok && reply.status === 401 && attempt === 0) {
        this.security.invalidateClientToken();
        continue;
      }
      return reply;
    }
  }

  private timeHeader(at: number | undefined): Record<string, string> {
    return this.sendSandboxTime && at !== undefined ? { [SANDBOX_TIME_HEADER]: iso(at) } : {};
  }
}

function consentCreated(reply: BankReply): BankResult<{ consentId: string }> {
  if (!reply.ok) return reply;
  if (reply.status !== 201 && reply.status !== 200) return refusalOf(reply.status, reply.body);
  const consentId = reply.body?.Data?.ConsentId;
  if (typeof consentId !== 'string') return unknownFailure('bank_unavailable', 'The bank answered without a ConsentId');
  return { ok: true, consentId };
}
