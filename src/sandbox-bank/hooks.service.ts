import { ulid } from '../shared/ids.ts';
import type { SandboxDeps } from './sandbox.context.ts';
import { fieldInvalid, unknownId } from './sandbox.errors.ts';
import { AuthorisePageError, LoginRefused, decide, logIn } from './auth.service.ts';
import { revokeEnduringConsent } from './consents.service.ts';
import { canonicalAccountNumber, newAccountNumber } from './sandbox.accounts.ts';
import {
  expireConsentAccessTokens,
  findConsent,
  findPayerByUsername,
  findPayment,
  insertPayerUnlessTaken,
  revokeConsentRefreshTokens,
  updateConsent,
  type PayerRow,
} from './sandbox.repo.ts';

// Scenarios for tests, behind /sandbox-bank/test/…: payers with balances, scripted declines,
// delayed confirmation, revocation by the payer, and a shortcut through the approval pages.

export const DEFAULT_PAYER = 'sandbox';
/** A large balance so everyday testing never runs out: 100,000,000.00 NZD. */
export const DEFAULT_BALANCE_CENTS = 10_000_000_000;

export async function ensureDefaultPayer(deps: SandboxDeps): Promise<void> {
  await createPayer(deps, {
    username: DEFAULT_PAYER,
    name: 'Sandbox Payer',
    balanceCents: DEFAULT_BALANCE_CENTS,
    ifAbsent: true,
  });
}

export type NewPayer = {
  username: string;
  balanceCents: number;
  name?: string;
  /** The holder's own account number (a merchant's, say); else the bank makes one. */
  accountNumber?: string;
  /** A holder of this username already there is the answer, as it is, instead of a refusal. */
  ifAbsent?: boolean;
  /** Payments under its enduring consents may go to any account (a merchant's refunds). */
  refundArrangement?: boolean;
};

/** A number the bank makes is random, so it may be held already; it makes another, a few times. */
const TRIES_AT_A_FREE_NUMBER = 5;

/** An account holder at the bank (a payer, or a merchant a refund is paid from); `created` false when ifAbsent found one. */
export async function createPayer(deps: SandboxDeps, input: NewPayer): Promise<{ payer: PayerRow; created: boolean }> {
  for (let tries = 0; tries < TRIES_AT_A_FREE_NUMBER; tries++) {
    const row = payerRow(deps, input);
    if (await insertPayerUnlessTaken(deps.db, row)) return { payer: row, created: true };
    const existing = await findPayerByUsername(deps.db, input.username);
    if (existing && input.ifAbsent) return { payer: existing, created: false };
    if (existing) throw fieldInvalid('username', `A payer named ${input.username} already exists`);
    if (input.accountNumber !== undefined)
      throw fieldInvalid('account_number', `The account ${row.account_number} is held by another payer`);
  }
  throw new Error(`No free account number in ${TRIES_AT_A_FREE_NUMBER} tries`);
}

function payerRow(deps: SandboxDeps, input: NewPayer): PayerRow {
  return {
    id: `payer-${ulid()}`,
    username: input.username,
    name: input.name ?? input.username,
    account_number:
      input.accountNumber === undefined ? newAccountNumber() : canonicalAccountNumber(input.accountNumber),
    balance_cents: input.balanceCents,
    refund_arrangement: input.refundArrangement ? 1 : 0,
    created_at: deps.clock.now(),
  };
}

export async function getPayer(deps: SandboxDeps, username: string): Promise<PayerRow> {
  const row = await findPayerByUsername(deps.db, username);
  if (!row) throw unknownId('username', username);
  return row;
}

/** A consent of the calling client: a hook acts on nothing else, so one client cannot disturb another's payers. */
export async function clientConsent(deps: SandboxDeps, clientId: string, id: string) {
  const row = await findConsent(deps.db, id);
  if (!row || row.client_id !== clientId) throw unknownId('ConsentId', id);
  return row;
}

/** A payment of the calling client. */
export async function clientPayment(deps: SandboxDeps, clientId: string, id: string) {
  const row = await findPayment(deps.db, id);
  if (!row || row.client_id !== clientId) throw unknownId('DomesticPaymentId', id);
  return row;
}

export async function declineNext(
  deps: SandboxDeps,
  clientId: string,
  consentId: string,
  count: number,
  reason: string,
): Promise<void> {
  await clientConsent(deps, clientId, consentId);
  await updateConsent(deps.db, consentId, {
    decline_next: count,
    decline_reason: reason,
    updated_at: deps.clock.now(),
  });
}

/** Hold new payments unconfirmed: for `seconds` of bank time, or until released (seconds null). */
export async function delayConfirmation(
  deps: SandboxDeps,
  clientId: string,
  consentId: string,
  input: { off: boolean; seconds: number | null; status: 'Pending' | 'AcceptedSettlementInProcess' },
): Promise<void> {
  await clientConsent(deps, clientId, consentId);
  await updateConsent(deps.db, consentId, {
    hold_seconds: input.off ? null : (input.seconds ?? -1),
    hold_status: input.off ? null : input.status,
    updated_at: deps.clock.now(),
  });
}

/** As the payer would in their banking app: later executions fail with InvalidStatus. */
/** The payer revokes at their bank (not the client's DELETE): a consent of the calling client only. */
export async function revokeAtBank(deps: SandboxDeps, clientId: string, consentId: string) {
  await clientConsent(deps, clientId, consentId);
  return revokeEnduringConsent(deps, consentId, null);
}

/**
 * As time would: the consent's access tokens expire now, so the next call under one is 401
 * Header.Invalid. With `refreshTokens`, its refresh tokens are revoked too, so the next refresh is
 * invalid_grant: the bank no longer renews the consent's access, as a bank may without saying why.
 */
export async function expireConsentTokens(
  deps: SandboxDeps,
  clientId: string,
  consentId: string,
  input: { refreshTokens: boolean },
): Promise<{ accessTokens: number; refreshTokens: number }> {
  await clientConsent(deps, clientId, consentId);
  const now = deps.clock.now();
  const accessTokens = await expireConsentAccessTokens(deps.db, consentId, now);
  const refreshTokens = input.refreshTokens ? await revokeConsentRefreshTokens(deps.db, consentId, now) : 0;
  return { accessTokens, refreshTokens };
}

/** The approval pages without a browser: the same login and decision, returning the redirect. */
export async function authoriseDirectly(
  deps: SandboxDeps,
  clientId: string,
  input: { consentId: string; redirectUri: string; state: string; username: string; decision: 'approve' | 'decline' },
): Promise<string> {
  const consent = await findConsent(deps.db, input.consentId);
  if (!consent || consent.client_id !== clientId) throw unknownId('consent_id', input.consentId);
  try {
    const { sessionId } = await logIn(deps, { ...input, password: 'test-hook' });
    return await decide(deps, sessionId, input.decision);
  } catch (error) {
    if (error instanceof LoginRefused) throw fieldInvalid('username', error.message);
    if (error instanceof AuthorisePageError) throw fieldInvalid('consent_id', error.message);
    throw error;
  }
}

/**
 * Slow answers for timeout tests: the next `count` API responses about one consent (its own
 * reads and revocation, and payments made under it) wait `ms` after processing. Nothing else slows.
 */
export class Latency {
  private readonly byConsent = new Map<string, { ms: number; remaining: number }>();
  set(consentId: string, ms: number, count: number): void {
    if (count <= 0 || ms <= 0) this.byConsent.delete(consentId);
    else this.byConsent.set(consentId, { ms, remaining: count });
  }
  take(consentId: string | null): number {
    const entry = consentId === null ? undefined : this.byConsent.get(consentId);
    if (!entry) return 0;
    entry.remaining -= 1;
    if (entry.remaining <= 0) this.byConsent.delete(consentId!);
    return entry.ms;
  }
}
