import { decodeJwt, jwtVerify } from 'jose';
import { transact } from '../store/store.ts';
import { constantTimeEqual, randomSecret, sha256Hex } from '../shared/crypto.ts';
import { DAY_MS, HOUR_MS, MINUTE_MS } from '../shared/time.ts';
import type { SandboxClient, SandboxDeps } from './sandbox.context.ts';
import { unauthorised } from './sandbox.errors.ts';
import { effectiveStatus } from './consents.service.ts';
import {
  findAuthorisation,
  findAuthorisationByCode,
  findConsent,
  findPayerByUsername,
  findRefreshToken,
  findToken,
  insertAuthorisation,
  insertRefreshToken,
  insertToken,
  updateAuthorisation,
  updateConsent,
  useCode,
  useRefreshToken,
  type ConsentRow,
  type PayerRow,
} from './sandbox.repo.ts';

// The sandbox's stand-in for the standard's FAPI security: client-credentials tokens for API
// calls, a login-and-approve page, and an authorization code exchanged once for a token bound to
// the consent. An enduring consent's token comes with a refresh token (RFC 6749 section 6), used
// once: each refresh answers a new access token and a new refresh token (rotation). Its access
// tokens last as long as TokenLifetimes says (by default for ever, as before refresh tokens).
// Secrets are stored only as hashes.

export const CLIENT_TOKEN_TTL_MS = HOUR_MS;
const CODE_TTL_MS = 10 * MINUTE_MS;
const SESSION_TTL_MS = 15 * MINUTE_MS;
const DOMESTIC_TOKEN_TTL_MS = DAY_MS;

/** OAuth token endpoint errors keep OAuth's own shape: { error, error_description }. */
export class OAuthError extends Error {
  readonly status: number;
  readonly error: string;
  constructor(status: number, error: string, description: string) {
    super(description);
    this.status = status;
    this.error = error;
  }
}

export function authenticateClient(
  deps: SandboxDeps,
  clientId: string | undefined,
  secret: string | undefined,
): SandboxClient {
  const client = deps.clients().find((c) => c.clientId === clientId);
  if (!client || client.publicKey || secret === undefined || !constantTimeEqual(client.clientSecret, secret)) {
    throw new OAuthError(401, 'invalid_client', 'Unknown client or wrong client secret');
  }
  return client;
}

export const JWT_BEARER = 'urn:ietf:params:oauth:client-assertion-type:jwt-bearer';

/** private_key_jwt (RFC 7523): a JWT from the client, signed with its key, for this token endpoint, short-lived. */
export async function authenticateAssertion(
  deps: SandboxDeps,
  clientId: string | undefined,
  assertion: string | undefined,
  tokenUrl: string,
): Promise<SandboxClient> {
  const refused = new OAuthError(
    401,
    'invalid_client',
    'The client assertion is not valid for this client and token endpoint',
  );
  if (!assertion) throw refused;
  let issuer: string | undefined;
  try {
    issuer = decodeJwt(assertion).iss;
  } catch {
    throw refused;
  }
  const id = clientId ?? issuer;
  const client = deps.clients().find((c) => c.clientId === id);
  if (!client?.publicKey) throw refused;
  try {
    await jwtVerify(assertion, client.publicKey, {
      issuer: client.clientId,
      subject: client.clientId,
      audience: tokenUrl,
      algorithms: ['PS256', 'ES256', 'RS256'],
      maxTokenAge: '5m',
      currentDate: new Date(deps.clock.now()),
      requiredClaims: ['exp', 'iat', 'jti'],
    });
  } catch {
    throw refused;
  }
  return client;
}

export type TokenResponse = {
  access_token: string;
  token_type: 'Bearer';
  expires_in?: number;
  refresh_token?: string;
  scope: string;
  consent_id?: string;
};

export async function issueClientToken(deps: SandboxDeps, client: SandboxClient): Promise<TokenResponse> {
  const token = randomSecret(32);
  const now = deps.clock.now();
  await insertToken(deps.db, {
    token_hash: sha256Hex(token),
    client_id: client.clientId,
    consent_id: null,
    created_at: now,
    expires_at: now + CLIENT_TOKEN_TTL_MS,
  });
  return { access_token: token, token_type: 'Bearer', expires_in: CLIENT_TOKEN_TTL_MS / 1000, scope: 'payments' };
}

export type Caller = { clientId: string; consentId: string | null };

/** The client (and consent, for a consent-bound token) behind an Authorization header. */
export async function authenticateBearer(deps: SandboxDeps, header: string | undefined): Promise<Caller> {
  const match = /^Bearer ([A-Za-z0-9_-]{16,128})$/.exec(header ?? '');
  if (!match) throw unauthorised('Send Authorization: Bearer <access token> from POST /token', !header);
  const row = await findToken(deps.db, sha256Hex(match[1]));
  if (!row || (row.expires_at !== null && row.expires_at <= deps.clock.now()))
    throw unauthorised('The access token is unknown or expired');
  return { clientId: row.client_id, consentId: row.consent_id };
}

export function registeredRedirect(deps: SandboxDeps, clientId: string, redirectUri: string): boolean {
  return deps.clients().some((c) => c.clientId === clientId && c.redirectUris.includes(redirectUri));
}

/** Refusals on the authorisation pages: shown to the payer, never redirected (the URI is unverified). */
export class AuthorisePageError extends Error {}

/** The consent a payer is asked to approve, checked against the redirect it will return to. */
export async function consentToAuthorise(
  deps: SandboxDeps,
  consentId: string,
  redirectUri: string,
): Promise<ConsentRow> {
  const consent = consentId ? await findConsent(deps.db, consentId) : undefined;
  if (!consent) throw new AuthorisePageError('This payment consent does not exist at Sandbox Bank.');
  if (!registeredRedirect(deps, consent.client_id, redirectUri)) {
    throw new AuthorisePageError('The return address does not match the one registered for this payment service.');
  }
  if (consent.status !== 'AwaitingAuthorisation') {
    throw new AuthorisePageError(
      `This consent cannot be approved: its status is ${effectiveStatus(consent, deps.clock.now())}.`,
    );
  }
  return consent;
}

export class LoginRefused extends Error {}

/** Username `sandbox` (or a payer made by a test hook), any non-empty password. */
export async function logIn(
  deps: SandboxDeps,
  input: { consentId: string; redirectUri: string; state: string; username: string; password: string },
): Promise<{ sessionId: string; consent: ConsentRow; payer: PayerRow }> {
  const consent = await consentToAuthorise(deps, input.consentId, input.redirectUri);
  const payer = await findPayerByUsername(deps.db, input.username.trim());
  if (!payer) throw new LoginRefused('Unknown username. At Sandbox Bank, sign in as “sandbox” with any password.');
  if (input.password === '') throw new LoginRefused('Enter a password (any password works at Sandbox Bank).');
  const sessionId = randomSecret(24);
  const now = deps.clock.now();
  await insertAuthorisation(deps.db, {
    id: sessionId,
    consent_id: consent.id,
    client_id: consent.client_id,
    redirect_uri: input.redirectUri,
    state: input.state,
    payer_id: payer.id,
    code_hash: null,
    code_expires_at: null,
    code_used_at: null,
    created_at: now,
    expires_at: now + SESSION_TTL_MS,
  });
  return { sessionId, consent, payer };
}

export async function sessionConsent(deps: SandboxDeps, sessionId: string): Promise<ConsentRow> {
  const session = await findAuthorisation(deps.db, sessionId);
  if (!session || session.expires_at <= deps.clock.now() || session.code_hash !== null) {
    throw new AuthorisePageError('This approval page has expired. Return to the payment service and start again.');
  }
  return (await findConsent(deps.db, session.consent_id))!;
}

/** Approve or decline; returns where to send the payer's browser. */
export async function decide(deps: SandboxDeps, sessionId: string, decision: 'approve' | 'decline'): Promise<string> {
  const now = deps.clock.now();
  return transact(deps.db, async (trx) => {
    const session = await findAuthorisation(trx, sessionId);
    if (!session || session.expires_at <= now || session.code_hash !== null) {
      throw new AuthorisePageError('This approval page has expired. Return to the payment service and start again.');
    }
    const consent = await findConsent(trx, session.consent_id, { forUpdate: true });
    if (consent?.status !== 'AwaitingAuthorisation') {
      throw new AuthorisePageError('This consent has already been decided.');
    }
    const back = new URL(session.redirect_uri);
    if (decision === 'decline') {
      await updateConsent(trx, consent.id, { status: 'Rejected', updated_at: now, status_updated_at: now });
      await updateAuthorisation(trx, session.id, { expires_at: now });
      back.searchParams.set('error', 'access_denied');
      back.searchParams.set('error_description', 'The payer declined');
    } else {
      const code = randomSecret(24);
      await updateConsent(trx, consent.id, {
        status: 'Authorised',
        payer_id: session.payer_id,
        updated_at: now,
        status_updated_at: now,
      });
      await updateAuthorisation(trx, session.id, { code_hash: sha256Hex(code), code_expires_at: now + CODE_TTL_MS });
      back.searchParams.set('code', code);
    }
    back.searchParams.set('state', session.state);
    return back.toString();
  });
}

/** authorization_code grant: once per code, same client and redirect URI as the authorisation. */
export async function exchangeCode(
  deps: SandboxDeps,
  client: SandboxClient,
  code: string | undefined,
  redirectUri: string | undefined,
): Promise<TokenResponse> {
  if (!code) throw new OAuthError(400, 'invalid_request', 'code is required');
  const session = await findAuthorisationByCode(deps.db, sha256Hex(code));
  const now = deps.clock.now();
  if (!session || session.client_id !== client.clientId || (session.code_expires_at ?? 0) <= now) {
    throw new OAuthError(400, 'invalid_grant', 'The code is unknown, expired or for another client');
  }
  if (session.redirect_uri !== redirectUri)
    throw new OAuthError(400, 'invalid_grant', 'redirect_uri does not match the authorisation request');
  if (!(await useCode(deps.db, session.id, now)))
    throw new OAuthError(400, 'invalid_grant', 'The code has already been used');
  const consent = (await findConsent(deps.db, session.consent_id))!;
  if (consent.kind === 'enduring')
    return transact(deps.db, (trx) => issueConsentTokens({ ...deps, db: trx }, client, consent.id, now));
  const token = randomSecret(32);
  const expiresAt = now + DOMESTIC_TOKEN_TTL_MS;
  await insertToken(deps.db, {
    token_hash: sha256Hex(token),
    client_id: client.clientId,
    consent_id: consent.id,
    created_at: now,
    expires_at: expiresAt,
  });
  return {
    access_token: token,
    token_type: 'Bearer',
    expires_in: DOMESTIC_TOKEN_TTL_MS / 1000,
    scope: 'payments',
    consent_id: consent.id,
  };
}

/**
 * An enduring consent's access token, lasting as TokenLifetimes says (expires_in only when it
 * expires), with a new refresh token.
 */
async function issueConsentTokens(
  deps: SandboxDeps,
  client: SandboxClient,
  consentId: string,
  now: number,
): Promise<TokenResponse> {
  const token = randomSecret(32);
  const refresh = randomSecret(32);
  const lifetime = deps.tokenLifetimes.enduringMs(client.clientId);
  await insertToken(deps.db, {
    token_hash: sha256Hex(token),
    client_id: client.clientId,
    consent_id: consentId,
    created_at: now,
    expires_at: lifetime === null ? null : now + lifetime,
  });
  await insertRefreshToken(deps.db, {
    token_hash: sha256Hex(refresh),
    client_id: client.clientId,
    consent_id: consentId,
    created_at: now,
    used_at: null,
    revoked_at: null,
  });
  return {
    access_token: token,
    token_type: 'Bearer',
    ...(lifetime !== null && { expires_in: Math.ceil(lifetime / 1000) }),
    refresh_token: refresh,
    scope: 'payments',
    consent_id: consentId,
  };
}

/**
 * refresh_token grant (RFC 6749 section 6): a refresh token of this client, not used before and
 * not revoked, of a consent still Authorised, gives a new access token and a new refresh token;
 * the one presented is spent. Anything else is invalid_grant. A scope, when sent, can only be the
 * one granted (payments).
 */
export async function refreshConsentToken(
  deps: SandboxDeps,
  client: SandboxClient,
  refreshToken: string | undefined,
  scope: string | undefined,
): Promise<TokenResponse> {
  if (!refreshToken) throw new OAuthError(400, 'invalid_request', 'refresh_token is required');
  if (scope?.split(' ').some((part) => part !== 'payments'))
    throw new OAuthError(400, 'invalid_scope', 'The scope can only be the one granted: payments');
  const hash = sha256Hex(refreshToken);
  const row = await findRefreshToken(deps.db, hash);
  if (!row || row.client_id !== client.clientId)
    throw new OAuthError(400, 'invalid_grant', 'The refresh token is unknown or was issued to another client');
  if (row.revoked_at !== null) throw new OAuthError(400, 'invalid_grant', 'The refresh token has been revoked');
  if (row.used_at !== null)
    throw new OAuthError(400, 'invalid_grant', 'The refresh token has already been used: it was rotated');
  const consent = await findConsent(deps.db, row.consent_id);
  if (consent?.status !== 'Authorised')
    throw new OAuthError(
      400,
      'invalid_grant',
      `The consent's status is ${consent?.status ?? 'unknown'}: its access is no longer renewed`,
    );
  const now = deps.clock.now();
  return transact(deps.db, async (trx) => {
    if (!(await useRefreshToken(trx, hash, now)))
      throw new OAuthError(400, 'invalid_grant', 'The refresh token has already been used: it was rotated');
    return issueConsentTokens({ ...deps, db: trx }, client, consent.id, now);
  });
}

/** The client id and secret of an `Authorization: Basic` header (RFC 6749 2.3.1); none when absent or not Basic. */
export function basicCredentials(header: string | undefined): [string | undefined, string | undefined] {
  const match = /^Basic ([A-Za-z0-9+/=]+)$/.exec(header ?? '');
  if (!match) return [undefined, undefined];
  const decoded = Buffer.from(match[1], 'base64').toString('utf8');
  const colon = decoded.indexOf(':');
  if (colon < 0) return [undefined, undefined];
  // RFC 6749 2.3.1: the id and secret are form-url-encoded before Basic encoding.
  const unescapePart = (part: string) => {
    try {
      return decodeURIComponent(part.replace(/\+/g, ' '));
    } catch {
      throw new OAuthError(
        401,
        'invalid_client',
        'The client credentials in Authorization: Basic are not validly encoded',
      );
    }
  };
  return [unescapePart(decoded.slice(0, colon)), unescapePart(decoded.slice(colon + 1))];
}
