import { setTimeout as sleep } from 'node:timers/promises';
import { openStored, type SecretBox } from '../../shared/secret-box.ts';
import type { Clock } from '../../shared/time.ts';
import type { Db } from '../../store/db.ts';
import type { Store } from '../../store/store.ts';
import { findConsentToken, replaceConsentToken, type ConsentTokenTable } from '../../store/consent-token-rows.ts';
import type {
  BankConnector,
  BankFailure,
  ConsentTokens,
  PaymentSubmission,
  SubmittedPayment,
} from './bank-connector.ts';

// Payments under an enduring consent's token, kept alive (docs/banks.md, "Consent tokens that
// expire"). A bank may issue a consent's access token for a while only, with a refresh token that
// renews it (OAuth 2). Each holder of such a token (a recurring consent, a subscription, a refund
// authority) keeps the access token, the refresh token and the access token's expiry, sealed,
// and pays through submitUnderConsent:
//
// - an access token known to expire within a minute is renewed before the payment is sent (if
//   that renewal fails short of the consent ending while the token has not expired yet, the
//   payment goes with it);
// - a 401 to the payment under the consent's token renews it once, and the same body is sent again
//   under the same x-idempotency-key (a 401 is the bank refusing the caller before anything else,
//   so the first sending took nothing);
// - the renewed token (and the rotated refresh token, when the bank rotates them) is saved in its
//   own small transaction, only over the token it replaces (a compare on the old sealed value), so
//   two processes renewing at once never lose the rotated refresh token: the one that saves second
//   keeps the first one's. A process renews one holder's token once at a time: the payments that
//   find it expired together wait for the one renewal.
// - a refresh the bank refuses (invalid_grant) is first checked against the row: another process
//   may have rotated the refresh token a moment before, and then its token is used. Otherwise the
//   bank is asked how the consent stands: revoked (or no longer usable) there, the answer is a
//   refusal with reason 'consent_revoked', which each holder treats as the consent ended at the
//   bank (a payment sent before stays unconfirmed); still authorised, the refresh token was lost
//   (a renewal whose answer never came, after the bank rotated it), so the payment is refused
//   with 'consent_token_refused', the consent stays as it is, and an error asks for it to be
//   authorised again.
// - a token endpoint that cannot be reached, or whose answer was lost, is an unknown outcome, but
//   only where the payment may have been sent: when nothing was sent under the key (the token had
//   expired, or the bank answered 401), the payment was not made, and that is the answer.

/** A holder's token as it stores it: sealed, with the access token's expiry (epoch ms, real time) when known. */
export type SealedConsentToken = { access: string; refresh: string | null; expiresAt: number | null };

/** The row that holds an enduring consent's token, for submitUnderConsent. */
export type ConsentTokenHolder = {
  /** Names the row, e.g. `recurring_consents:recurring_…`: a process renews its token once at a time. */
  key: string;
  /** The token as read with the row. */
  token: SealedConsentToken;
  /** The token as stored now; null when the row is gone. */
  reread(): Promise<SealedConsentToken | null>;
  /** Saves `next` in a transaction of its own, only if the stored access token is still `previousAccess` (sealed); true when saved. */
  replace(previousAccess: string, next: SealedConsentToken): Promise<boolean>;
};

/**
 * The holder of the token kept on row `id` of `table` (a recurring consent's, a subscription's or a
 * refund authority's), as read with the row: re-read and replaced there, the replacement in a
 * transaction of its own.
 */
export function rowTokenHolder(
  deps: { db: Db; store: Store },
  table: ConsentTokenTable,
  id: string,
  token: SealedConsentToken,
): ConsentTokenHolder {
  return {
    key: `${table}:${id}`,
    token,
    reread: () => findConsentToken(deps.db, table, id),
    replace: (previousAccess, next) =>
      deps.store.transaction((trx) => replaceConsentToken(trx, table, id, previousAccess, next)),
  };
}

export type ConsentTokenDeps = {
  secrets: SecretBox;
  /** Real time: banks' tokens age by it, whatever a merchant's test clock says. */
  clock: Clock;
  log: {
    info(object: object, message: string): void;
    warn(object: object, message: string): void;
    error(object: object, message: string): void;
  };
};

/** An access token this close to its expiry is renewed before it is used. */
export const RENEW_BEFORE_EXPIRY_MS = 60_000;
/**
 * A refused refresh waits this long for another process's rotated token to be saved before the
 * consent is taken as ended: that process saves it in a small transaction right after its answer.
 */
export const ROTATION_SAVE_WAIT_MS = 1_000;

/** The sealed columns of a token the bank gave, over the one it renews (whose refresh token stays when none came). */
export function sealConsentTokens(
  secrets: SecretBox,
  tokens: ConsentTokens,
  previousRefresh: string | null = null,
): SealedConsentToken {
  return {
    access: secrets.seal(tokens.accessToken),
    refresh: tokens.refreshToken !== null ? secrets.seal(tokens.refreshToken) : previousRefresh,
    expiresAt: tokens.expiresAt,
  };
}

/** Whether the token should be renewed before it is used at `now`. */
export function needsRenewal(token: SealedConsentToken, now: number): boolean {
  return token.refresh !== null && token.expiresAt !== null && token.expiresAt - RENEW_BEFORE_EXPIRY_MS <= now;
}

type Renewed = { ok: true; accessToken: string; token: SealedConsentToken };

/**
 * Renewals under way, per service (its deps: one per process, or per service a test runs side by
 * side), by holder and the sealed access token they replace.
 */
const renewing = new WeakMap<ConsentTokenDeps, Map<string, Promise<Renewed | BankFailure>>>();

/**
 * POST /domestic-payments under the holder's consent token, renewing the token first when it is
 * known to expire, and once after a 401 (then the same submission, same key, again).
 */
export async function submitUnderConsent(
  deps: ConsentTokenDeps,
  connector: BankConnector,
  holder: ConsentTokenHolder,
  submission: Omit<PaymentSubmission, 'accessToken'>,
): Promise<SubmittedPayment> {
  let token = holder.token;
  let accessToken = openStored(deps.secrets, token.access);
  let renewed = false;
  const now = deps.clock.now();
  if (needsRenewal(token, now)) {
    const fresh = await renew(deps, connector, holder, token, submission);
    renewed = true;
    if (fresh.ok) ({ token, accessToken } = fresh);
    // The consent ended, or the token has expired with no new one: nothing is sent now, so the
    // payment is not made (never unknown). A token still valid for a few seconds more is used, the
    // renewal tried again next time.
    else if (fresh.reason === 'consent_revoked' || token.expiresAt! <= now) return { ...fresh, unknown: false };
  }
  const first = await connector.submitPayment({ ...submission, accessToken });
  if (renewed || token.refresh === null || !isUnauthorised(first)) return first;
  const fresh = await renew(deps, connector, holder, token, submission);
  // The bank refused the caller and took nothing: without a new token that stays the answer.
  if (!fresh.ok) return fresh.unknown ? first : fresh;
  // The bank refused the caller, not the payment: the same body under the same key.
  return connector.submitPayment({ ...submission, accessToken: fresh.accessToken });
}

/** The bank refused the consent's token itself (401), with nothing lost before it. */
function isUnauthorised(result: SubmittedPayment): boolean {
  return !result.ok && !result.unknown && result.reason === 'unauthorised';
}

/** Renews `token` once for everyone in this process that holds it. */
function renew(
  deps: ConsentTokenDeps,
  connector: BankConnector,
  holder: ConsentTokenHolder,
  token: SealedConsentToken,
  submission: Pick<PaymentSubmission, 'consentId' | 'trace'>,
): Promise<Renewed | BankFailure> {
  let flights = renewing.get(deps);
  if (!flights) renewing.set(deps, (flights = new Map()));
  const key = `${holder.key}\n${token.access}`;
  let flight = flights.get(key);
  if (!flight) {
    flight = renewOnce(deps, connector, holder, token, submission).finally(() => flights.delete(key));
    flights.set(key, flight);
  }
  return flight;
}

async function renewOnce(
  deps: ConsentTokenDeps,
  connector: BankConnector,
  holder: ConsentTokenHolder,
  token: SealedConsentToken,
  { consentId, trace }: Pick<PaymentSubmission, 'consentId' | 'trace'>,
): Promise<Renewed | BankFailure> {
  if (token.refresh === null) throw new Error('a consent token without a refresh token cannot be renewed');
  const result = await connector.refreshConsentToken({
    refreshToken: openStored(deps.secrets, token.refresh),
    trace,
  });
  if (result.ok) {
    const next = sealConsentTokens(deps.secrets, result, token.refresh);
    if (await holder.replace(token.access, next)) {
      deps.log.info({ ...trace, rotated: result.refreshToken !== null }, 'consent access token renewed');
      return { ok: true, accessToken: result.accessToken, token: next };
    }
    // Another process renewed and saved first: its token stays stored (its refresh token is the
    // one the bank expects next if the bank rotates on every use); ours serves this payment.
    deps.log.info({ ...trace }, 'consent access token renewed; another process saved its renewal first');
    return { ok: true, accessToken: result.accessToken, token: (await holder.reread()) ?? next };
  }
  if (result.unknown) return result;
  if (result.reason !== 'refresh_refused') {
    // Our client, not the consent, was refused (invalid_client, say): as the 401 it follows.
    deps.log.warn({ ...trace, bank_code: result.bankCode }, 'the bank refused to renew a consent access token');
    return { ...result, reason: 'unauthorised' };
  }
  // Refused: the refresh token may have been rotated by another process, whose save lands a moment later.
  for (const wait of [0, ROTATION_SAVE_WAIT_MS]) {
    if (wait > 0) await sleep(wait);
    const stored = await holder.reread();
    if (stored && stored.access !== token.access)
      return { ok: true, accessToken: openStored(deps.secrets, stored.access), token: stored };
  }
  // Refused for good: the consent may have ended at the bank, or only the refresh token been lost.
  const consent = await connector.getConsent({ consentId, kind: 'enduring', trace });
  if (!consent.ok) return { ...consent, unknown: true };
  const code = result.bankCode ?? 'invalid_grant';
  if (consent.status === 'Authorised') {
    deps.log.error(
      { ...trace, bank_code: code },
      'the bank no longer renews the access of a consent it still holds authorised: the payer must authorise it again',
    );
    return {
      ok: false,
      reason: 'consent_token_refused',
      message: `The bank refused to renew the consent's access (${code}), though the consent is still authorised there`,
      bankCode: code,
      unknown: false,
    };
  }
  deps.log.warn(
    { ...trace, bank_code: code, consent_status: consent.status },
    'the bank refused to renew a consent access token',
  );
  return {
    ok: false,
    reason: 'consent_revoked',
    message: `The bank no longer renews the consent's access (${code}); the consent is ${consent.status} there`,
    bankCode: code,
    unknown: false,
  };
}
