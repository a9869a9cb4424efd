import type { BankResult } from './bank-connector.ts';
import type { BankHttp } from './open-banking.http.ts';

// The security step of a bank connection, kept apart from the payment calls so that a real
// bank's FAPI profile (private_key_jwt client authentication, PAR, JARM, mTLS) can replace the
// sandbox's simple one without touching open-banking.connector.ts.

export interface BankSecurity {
  /** Authorization (and any other) headers for calls made as the client itself. */
  clientHeaders(): Promise<BankResult<{ headers: Record<string, string> }>>;
  /** The bank refused the client token (401): forget it so the next call fetches a new one. */
  invalidateClientToken(): void;
  /** Headers for calls made under a consent, with the token from exchangeCode. */
  consentHeaders(accessToken: string): Record<string, string>;
  /** Where the payer's browser goes to sign in and approve. */
  authoriseUrl(input: { consentId: string; redirectUri: string; state: string }): string;
  /** The authorization code, exchanged once, for a consent-bound access token. */
  exchangeCode(input: { code: string; redirectUri: string }): Promise<BankResult<{ accessToken: string; consentId: string }>>;
}

export type ClientCredentials = { clientId: string; clientSecret: string };

/**
 * OAuth client credentials with a client secret (the sandbox bank's profile): POST /token
 * grant_type=client_credentials for API calls, authorization_code after approval, and a plain
 * GET /authorize redirect.
 */
export class ClientSecretSecurity implements BankSecurity {
  private readonly baseUrl: string;
  private readonly credentials: ClientCredentials;
  private readonly http: BankHttp;
  private readonly now: () => number;
  private cached: { token: string; expiresAt: number } | null = null;
  private pending: Promise<BankResult<{ headers: Record<string, string> }>> | null = null;

  constructor(options: { baseUrl: string; credentials: ClientCredentials; http: BankHttp; now?: () => number }) {
    this.baseUrl = options.baseUrl;
    this.credentials = options.credentials;
    this.http = options.http;
    this.now = options.now ?? Date.now;
  }

  async clientHeaders(): Promise<BankResult<{ headers: Record<string, string> }>> {
    // Refresh a minute early, and let concurrent callers share one token request.
    if (this.cached && this.cached.expiresAt - 60_000 > this.now()) {
      return { ok: true, headers: { authorization: `Bearer ${this.cached.token}` } };
    }
    this.pending ??= this.fetchClientToken().finally(() => {
      this.pending = null;
    });
    return this.pending;
  }

  private async fetchClientToken(): Promise<BankResult<{ headers: Record<string, string> }>> {
    const reply = await this.http.send({
      method: 'POST',
      url: `${this.baseUrl}/token`,
      form: { grant_type: 'client_credentials', client_id: this.credentials.clientId, client_secret: this.credentials.clientSecret, scope: 'payments' },
      retryable: true,
    });
    if (!reply.ok) return reply;
    if (reply.status !== 200 || typeof reply.body?.access_token !== 'string') return tokenRefusal(reply.status, reply.body);
    const ttl = typeof reply.body.expires_in === 'number' ? reply.body.expires_in * 1000 : 300_000;
    this.cached = { token: reply.body.access_token, expiresAt: this.now() + ttl };
    return { ok: true, headers: { authorization: `Bearer ${this.cached.token}` } };
  }

  invalidateClientToken(): void {
    this.cached = null;
  }

  consentHeaders(accessToken: string): Record<string, string> {
    return { authorization: `Bearer ${accessToken}` };
  }

  authoriseUrl(input: { consentId: string; redirectUri: string; state: string }): string {
    const query = new URLSearchParams({ consent_id: input.consentId, redirect_uri: input.redirectUri, state: input.state, client_id: this.credentials.clientId });
    return `${this.baseUrl}/authorize?${query}`;
  }

  async exchangeCode(input: { code: string; redirectUri: string }): Promise<BankResult<{ accessToken: string; consentId: string }>> {
    // Not retried: a code works once, so a repeat after a lost answer could only fail.
    const reply = await this.http.send({
      method: 'POST',
      url: `${this.baseUrl}/token`,
      form: {
        grant_type: 'authorization_code',
        code: input.code,
        redirect_uri: input.redirectUri,
        client_id: this.credentials.clientId,
        client_secret: this.credentials.clientSecret,
      },
      retryable: false,
    });
    if (!reply.ok) return reply;
    if (reply.status !== 200 || typeof reply.body?.access_token !== 'string' || typeof reply.body?.consent_id !== 'string') {
      return tokenRefusal(reply.status, reply.body);
    }
    return { ok: true, accessToken: reply.body.access_token, consentId: reply.body.consent_id };
  }
}

function tokenRefusal(status: number, body: any): BankResult<never> {
  const error = typeof body?.error === 'string' ? body.error : `http_${status}`;
  return {
    ok: false,
    reason: error === 'invalid_grant' ? 'invalid_code' : error === 'invalid_client' ? 'client_rejected' : 'token_refused',
    message: typeof body?.error_description === 'string' ? body.error_description : `The bank refused the token request (${status})`,
    bankCode: error,
    unknown: false,
  };
}
