import { enqueue } from '../../jobs/queue.ts';
import type { JobHandler } from '../../jobs/worker.ts';
import { invalidParam } from '../../shared/errors.ts';
import type { Mode } from '../../shared/mode.ts';
import type { Db } from '../../store/db.ts';
import type { EnduringConsentInput } from '../banks/bank-connector.ts';
import type { ReturnInput, StartInput, StartOutcome } from '../manifest.ts';
import { upsertCustomer } from '../customers/customers.service.ts';
import type { PayerDetails } from '../customers/customers.rules.ts';
import { bankReturnUrl, connectorFor, creditorOf } from '../payments/payments.banks.ts';
import { effectiveStatus } from '../payments/payments.rules.ts';
import { newAuthState } from '../payments/payments.service.ts';
import { clockOf } from '../merchants/merchants.clock.ts';
import type { CustInfo } from '../requests/requests.rules.ts';
import { findRequestById, holdRequestToPay, markRequestPaid } from '../requests/requests.service.ts';
import type { RequestRow } from '../requests/requests.tables.ts';
import type { Deps } from '../context.ts';
import {
  closeAuthorisation,
  findAuthorisation,
  findPendingAuthorisationOfRequest,
  insertAuthorisation,
  setAuthorisationBankConsent,
  type AuthorisationRow,
} from './authorisations.repo.ts';
import { mergePayerDetails } from './authorisations.rules.ts';

// One way to authorise an enduring consent at the payer's bank, for recurring consents and
// subscriptions alike (docs/architecture.md): the authorisation is recorded before the bank is
// asked (the state is the bank's idempotency key, so a retry after a crash asks for the same
// consent); on the payer's approval, what they agreed to, the customer and the paid request are
// created in one transaction; a consent the bank gave for a request that closed meanwhile is
// given back by a retried job, never dropped.

export const GIVE_BACK_CONSENT_JOB = 'authorisation.give_back';

declare module '../../jobs/queue.ts' {
  interface JobPayloads {
    'authorisation.give_back': { bank_id: string; mode: Mode; consent_id: string };
  }
}

/** What an approval creates, and the consent it asks the bank for: the recurring and subscription kinds. */
export type EnduringKind = {
  kind: 'recurring' | 'subscription';
  /** The consent's terms for this request, asked at `now`. */
  consentTerms(
    request: RequestRow,
    now: number,
  ): Omit<EnduringConsentInput, 'creditor' | 'idempotencyKey' | 'at' | 'trace'>;
  /** What the bank's refusal to make the consent reads as, to the payer. */
  refusal: string;
  /** Creates what the payer agreed to, in the transaction that marks the request paid; returns its id. */
  create(trx: Db, deps: Deps, approved: Approved): Promise<string>;
};

export type Approved = {
  /** The request, locked and still active. */
  request: RequestRow;
  customer: { id: string; email: string };
  details: PayerDetails & { email: string };
  bankId: string;
  bankConsentId: string;
  bankAccessToken: string;
  /** The refresh token and the access token's expiry (real time), when the bank gave them. */
  bankRefreshToken: string | null;
  bankTokenExpiresAt: number | null;
  /** The consent's start at the bank: the FromDateTime it was asked with, when the payer was sent there. */
  startsAt: number;
  now: number;
};

/** Sends the payer to their bank to approve the kind's consent for this request. */
export async function startAuthorisation(
  deps: Deps,
  kind: EnduringKind,
  request: RequestRow,
  input: StartInput,
): Promise<StartOutcome> {
  const connector = connectorFor(deps, input.bankId, request.mode);
  if (!connector) throw invalidParam('bank', 'Choose one of the banks offered for this request');
  const now = (await clockOf(deps, request)).now();
  const state = newAuthState();
  await insertAuthorisation(deps.db, {
    state,
    kind: kind.kind,
    request_id: request.id,
    bank_id: input.bankId,
    bank_consent_id: null,
    details: input.details ? JSON.stringify(input.details) : null,
    channel: input.channel,
    outcome: null,
    object_id: null,
    created_at: now,
    completed_at: null,
  });
  const consent = await connector.createEnduringConsent({
    ...kind.consentTerms(request, now),
    creditor: await creditorOf(deps.db, request),
    idempotencyKey: state,
    at: now,
  });
  if (!consent.ok) {
    await closeAuthorisation(deps.db, state, 'failed', now);
    return { ok: false, message: `${kind.refusal}: ${consent.message}`, paymentId: null };
  }
  await setAuthorisationBankConsent(deps.db, state, consent.consentId);
  return {
    ok: true,
    redirectUrl: connector.authoriseUrl({ consentId: consent.consentId, redirectUri: bankReturnUrl(deps), state }),
    paymentId: null,
  };
}

/** Where a return from the bank ended: `repeated` when an earlier return had settled it. */
export type AuthorisationResult = {
  request: RequestRow;
  objectId: string | null;
  outcome: 'authorised' | 'declined' | 'failed' | 'repeated';
  channel: string | null;
};

/** The payer is back from the bank with `state`; null when the state is not an authorisation of this kind. */
export async function completeAuthorisation(
  deps: Deps,
  kind: EnduringKind,
  input: ReturnInput,
): Promise<AuthorisationResult | null> {
  const pending = await findAuthorisation(deps.db, input.state);
  if (!pending || pending.kind !== kind.kind) return null;
  const request = await findRequestById(deps.db, pending.request_id);
  if (!request) throw new Error(`request ${pending.request_id} of authorisation is missing`);
  const clock = await clockOf(deps, request);
  const result = (
    outcome: AuthorisationResult['outcome'],
    objectId: string | null = null,
    settled = request,
  ): AuthorisationResult => ({ request: settled, objectId, outcome, channel: pending.channel });
  const repeated = async () => {
    const settled = await findAuthorisation(deps.db, pending.state);
    return result('repeated', settled?.object_id ?? null);
  };
  if (pending.outcome !== null) return result('repeated', pending.object_id);

  if (input.error || !input.code) {
    // Declined at the bank: nothing is created and the request stays active for another try.
    return (await closeAuthorisation(deps.db, pending.state, 'declined', clock.now()))
      ? result('declined')
      : repeated();
  }
  const connector = connectorFor(deps, pending.bank_id, request.mode);
  const token = connector ? await connector.exchangeCode({ code: input.code, redirectUri: bankReturnUrl(deps) }) : null;
  if (!token?.ok || token.consentId !== pending.bank_consent_id) {
    return (await closeAuthorisation(deps.db, pending.state, 'failed', clock.now())) ? result('failed') : repeated();
  }

  const created = await deps.store
    .transaction(async (trx) => {
      const now = clock.now();
      const locked = await holdRequestToPay(trx, request.id);
      if (!locked || effectiveStatus(locked, now) !== 'active') {
        if (!(await closeAuthorisation(trx, pending.state, 'failed', now))) return null;
        // The request closed while the payer was at the bank: the consent goes back to the bank.
        await enqueueGiveBack(
          trx,
          { bankId: pending.bank_id, mode: request.mode, consentId: token.consentId },
          deps.clock.now(),
        );
        return { objectId: null, request: locked ?? request };
      }
      const scope = { userId: locked.user_id, mode: locked.mode };
      const given = locked.cust_info ? (JSON.parse(locked.cust_info) as CustInfo as Partial<PayerDetails>) : null;
      const details = mergePayerDetails(given, pending.details ? (JSON.parse(pending.details) as PayerDetails) : null);
      const { customer } = await upsertCustomer(trx, scope, details, now, given);
      const objectId = await kind.create(trx, deps, {
        request: locked,
        customer,
        details,
        bankId: pending.bank_id,
        bankConsentId: token.consentId,
        bankAccessToken: token.accessToken,
        bankRefreshToken: token.refreshToken,
        bankTokenExpiresAt: token.expiresAt,
        // The consent was asked for (consentTerms) at the moment this authorisation was written.
        startsAt: Number(pending.created_at),
        now,
      });
      // Settled last, so a concurrent return that settled first rolls all of this back.
      if (!(await closeAuthorisation(trx, pending.state, 'authorised', now, objectId))) throw new AlreadySettled();
      await markRequestPaid(trx, locked, now);
      return { objectId, request: { ...locked, status: 'paid', updated_at: now } };
    })
    .catch((error: unknown) => {
      if (error instanceof AlreadySettled) return null;
      throw error;
    });
  if (created === null) {
    // Another return of this state settled it first: a reload whose exchange of the spent code
    // failed. The payer approved at the bank and this return holds the only token, so unless the
    // other return authorised it, the consent goes back to the bank rather than stay usable there.
    const settled = await findAuthorisation(deps.db, pending.state);
    if (settled?.outcome !== 'authorised')
      await deps.store.transaction((trx) =>
        enqueueGiveBack(
          trx,
          { bankId: pending.bank_id, mode: request.mode, consentId: token.consentId },
          deps.clock.now(),
        ),
      );
    return result('repeated', settled?.object_id ?? null);
  }
  return created.objectId === null
    ? result('failed', null, created.request)
    : result('authorised', created.objectId, created.request);
}

class AlreadySettled extends Error {}

type GiveBack = { bank_id: string; mode: Mode; consent_id: string };

async function enqueueGiveBack(
  trx: Db,
  consent: { bankId: string; mode: Mode; consentId: string },
  realNow: number,
): Promise<void> {
  const payload: GiveBack = { bank_id: consent.bankId, mode: consent.mode, consent_id: consent.consentId };
  await enqueue(
    trx,
    {
      kind: GIVE_BACK_CONSENT_JOB,
      runAt: realNow,
      payload,
      dedupeKey: `${GIVE_BACK_CONSENT_JOB}:${consent.consentId}`,
    },
    realNow,
  );
}

/** Job: revokes at the bank a consent nothing will use; a failure throws, so the job is retried with backoff. */
export function giveBackConsentJob(deps: Deps): JobHandler {
  return async (payload: GiveBack) => {
    const connector = connectorFor(deps, payload.bank_id, payload.mode);
    if (!connector)
      throw new Error(
        `bank ${payload.bank_id} is not connected; consent ${payload.consent_id} is still to be given back`,
      );
    const state = await connector.getConsent({ consentId: payload.consent_id, kind: 'enduring' });
    if (state.ok && state.status !== 'Authorised' && state.status !== 'AwaitingAuthorisation') return;
    const revoked = await connector.revokeConsent({ consentId: payload.consent_id });
    if (!revoked.ok) throw new Error(`the bank did not revoke consent ${payload.consent_id}: ${revoked.message}`);
  };
}

/** The bank consent a payer of this recurring or subscription request is approving now, if any. */
export async function pendingBankConsentOfAuthorisation(db: Db, requestId: string): Promise<string | null> {
  return (await findPendingAuthorisationOfRequest(db, requestId))?.bank_consent_id ?? null;
}

export type { AuthorisationRow };
