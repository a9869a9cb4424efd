import { createPrivateKey, randomUUID, type KeyObject } from 'node:crypto';
import { SignJWT } from 'jose';
import type { BankResult, ConsentTokens, Trace } from './bank-connector.ts';
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
  /**
   * The authorization code, exchanged once, for a consent-bound access token, with its refresh
   * token and expiry when the bank gives them.
   */
  exchangeCode(input: {
    code: string;
    redirectUri: string;
  }): Promise<BankResult<ConsentTokens & { consentId: string }>>;
  /** grant_type=refresh_token, the client authenticated as for the code exchange; never repeated within the call. */
  refreshConsentToken(input: { refreshToken: string; trace?: Trace }): Promise<BankResult<ConsentTokens>>;
}

export type ClientCredentials = { clientId: string; clientSecret: string };

/**
 * How the client proves itself at the token endpoint: client_secret_basic (HTTP Basic with the
 * form-encoded id and secret, RFC 6749 2.3.1), or private_key_jwt (a short-lived JWT signed with
 * the client's private key, RFC 7523), as FAPI banks ask.
 */
export type ClientAuth =
  | { method: 'client_secret_basic'; clientId: string; clientSecret: string }
  | { method: 'private_key_jwt'; clientId: string; privateKey: KeyObject; keyId?: string };

/** The JWS algorithm for a private key: PS256 for RSA, ES256 for P-256 EC keys. */
export function signingAlgorithm(key: KeyObject): 'PS256' | 'ES256' {
  if (key.asymmetricKeyType === 'rsa' || key.asymmetricKeyType === 'rsa-pss') return 'PS256';
  if (key.asymmetricKeyType === 'ec' && key.asymmetricKeyDetails?.namedCurve === 'prime256v1') return 'ES256';
  throw new Error(`a private_key_jwt key must be RSA or EC P-256, not ${key.asymmetricKeyType}`);
}

export function loadPrivateKey(pem: string | Buffer): KeyObject {
  const key = createPrivateKey(pem);
  signingAlgorithm(key);
  return key;
}

export type OAuthSecurityOptions = {
  baseUrl: string;
  http: BankHttp;
  now?: () => number;
  /** Either credentials (client_secret_basic) or clientAuth. */
  credentials?: ClientCredentials;
  clientAuth?: ClientAuth;
  /** Defaults: `${baseUrl}/token` and `${baseUrl}/authorize`. */
  tokenUrl?: string;
  authorizeUrl?: string;
};

/**
 * OAuth 2 for a bank of the standard: POST token grant_type=client_credentials for API calls,
 * authorization_code after approval, and a GET authorize redirect for the payer.
 */
export class ClientSecretSecurity implements BankSecurity {
  private readonly auth: ClientAuth;
  private readonly tokenUrl: string;
  private readonly authorizeEndpoint: string;
  private readonly http: BankHttp;
  private readonly now: () => number;
  private cached: { token: string; expiresAt: number } | null = null;
  private pending: Promise<BankResult<{ headers: Record<string, string> }>> | null = null;

  constructor(options: OAuthSecurityOptions) {
    const auth =
      options.clientAuth ?? (options.credentials && { method: 'client_secret_basic' as const, ...options.credentials });
    if (!auth) throw new Error('a bank connection needs credentials or clientAuth');
    this.auth = auth;
    this.tokenUrl = options.tokenUrl ?? `${options.baseUrl}/token`;
    this.authorizeEndpoint = options.authorizeUrl ?? `${options.baseUrl}/authorize`;
    this.http = options.http;
    this.now = options.now ?? Date.now;
  }

  /** The client's proof for one token request: a header (Basic) or form fields (client assertion). */
  private async clientProof(): Promise<{ headers: Record<string, string>; form: Record<string, string> }> {
    if (this.auth.method === 'client_secret_basic') {
      const encode = (value: string) => encodeURIComponent(value).replace(/%20/g, '+');
      const basic = Buffer.from(`${encode(this.auth.clientId)}:${encode(this.auth.clientSecret)}`).toString('base64');
      return { headers: { authorization: `Basic ${basic}` }, form: {} };
    }
    const nowSeconds = Math.floor(this.now() / 1000);
    const assertion = await new SignJWT({})
      .setProtectedHeader({
        alg: signingAlgorithm(this.auth.privateKey),
        typ: 'JWT',
        ...(this.auth.keyId && { kid: this.auth.keyId }),
      })
      .setIssuer(this.auth.clientId)
      .setSubject(this.auth.clientId)
      .setAudience(this.tokenUrl)
      .setJti(randomUUID())
      .setIssuedAt(nowSeconds)
      .setExpirationTime(nowSeconds + 60)
      .sign(this.auth.privateKey);
    return {
      headers: {},
      form: {
        client_id: this.auth.clientId,
        client_assertion_type: 'urn:ietf:params:oauth:client-assertion-type:jwt-bearer',
        client_assertion: assertion,
      },
    };
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
    const proof = await this.clientProof();
    const reply = await this.http.send({
      method: 'POST',
      url: this.tokenUrl,
      headers: proof.headers,
      form: { grant_type: 'client_credentials', scope: 'payments', ...proof.form },
      retryable: true,
    });
    if (!reply.ok) return reply;
    if (reply.status !== 200 || typeof reply.body?.access_token !== 'string')
      return tokenRefusal(reply.status, reply.body);
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
    const query = new URLSearchParams({
      consent_id: input.consentId,
      redirect_uri: input.redirectUri,
      state: input.state,
      client_id: this.auth.clientId,
    });
    return `${this.authorizeEndpoint}?${query}`;
  }

  async exchangeCode(input: {
    code: string;
    redirectUri: string;
  }): Promise<BankResult<ConsentTokens & { consentId: string }>> {
    // Not retried: a code works once, so a repeat after a lost answer could only fail.
    const proof = await this.clientProof();
    const reply = await this.http.send({
      method: 'POST',
      url: this.tokenUrl,
      headers: proof.headers,
      form: { grant_type: 'authorization_code', code: input.code, redirect_uri: input.redirectUri, ...proof.form },
      retryable: false,
    });
    if (!reply.ok) return reply;
    if (
      reply.status !== 200 ||
      typeof reply.body?.access_token !== 'string' ||
      typeof reply.body?.consent_id !== 'string'
    ) {
      return tokenRefusal(reply.status, reply.body);
    }
    return { ok: true, ...this.consentTokensOf(reply.body), consentId: reply.body.consent_id };
  }

  async refreshConsentToken(input: { refreshToken: string; trace?: Trace }): Promise<BankResult<ConsentTokens>> {
    // Not retried either: a bank that rotates refresh tokens spends this one on its first answer,
    // so a repeat after a lost answer would be refused. The caller tries again later.
    const proof = await this.clientProof();
    const reply = await this.http.send({
      method: 'POST',
      url: this.tokenUrl,
      headers: proof.headers,
      form: { grant_type: 'refresh_token', refresh_token: input.refreshToken, ...proof.form },
      retryable: false,
      trace: input.trace,
    });
    if (!reply.ok) return reply;
    if (reply.status !== 200 || typeof reply.body?.access_token !== 'string') {
      const refused = tokenRefusal(reply.status, reply.body);
      return refused.bankCode === 'invalid_grant' ? { ...refused, reason: 'refresh_refused' } : refused;
    }
    return { ok: true, ...this.consentTokensOf(reply.body) };
  }

  /** What a token answer says of a consent's token: its refresh token and expiry, when given (RFC 6749 5.1). */
  private consentTokensOf(body: {
    access_token: string;
    refresh_token?: unknown;
    expires_in?: unknown;
  }): ConsentTokens {
    const expiresIn = Number(body.expires_in);
    return {
      accessToken: body.access_token,
      refreshToken: typeof body.refresh_token === 'string' && body.refresh_token !== '' ? body.refresh_token : null,
      expiresAt:
        body.expires_in !== undefined && body.expires_in !== null && Number.isFinite(expiresIn) && expiresIn >= 0
          ? this.now() + expiresIn * 1000
          : null,
    };
  }
}

function tokenRefusal(status: number, body: any): BankResult<never> {
  const error = typeof body?.error === 'string' ? body.error : `http_${status}`;
  return {
    ok: false,
    reason:
      error === 'invalid_grant' ? 'invalid_code' : error === 'invalid_client' ? 'client_rejected' : 'token_refused',
    message:
      typeof body?.error_description === 'string'
        ? body.error_description
        : `The bank refused the token request (${status})`,
    bankCode: error,
    unknown: false,
  };
}
