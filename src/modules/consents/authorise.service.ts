import { invalidParam } from '../../shared/errors.ts';
import { newId } from '../../shared/ids.ts';
import { transact } from '../../store/tx.ts';
import type { CheckoutStrategy, ReturnInput, ReturnOutcome, SetUpView, StartInput, StartOutcome } from '../checkout/checkout.strategies.ts';
import { summaryOfEnduring } from '../checkout/checkout.strategies.ts';
import { EMPTY_DETAILS, upsertCustomer, type PayerDetails } from '../customers/customers.service.ts';
import { emitEvent } from '../events/events.service.ts';
import { bankReturnUrl, connectorFor, creditorOf } from '../payments/payments.banks.ts';
import { effectiveStatus, PCR_CODE } from '../payments/payments.rules.ts';
import { clockOf, newAuthState } from '../payments/payments.service.ts';
import { findRequestById, lockRequest } from '../requests/requests.service.ts';
import { recurringOptionsOf } from '../requests/requests.present.ts';
import type { CustInfo } from '../requests/requests.rules.ts';
import { markRequestPaid } from '../requests/requests.service.ts';
import {
  closeAuthorisation, findAuthorisation, findConsentOfRequest, insertAuthorisation, insertConsent, setAuthorisationBankConsent, type ConsentRow,
} from './consents.repo.ts';
import { enduringPeriodOf, hashConsentToken, limitsOf, maskConsentToken, newConsentToken, NO_USAGE } from './consents.rules.ts';
import { noticeConsentAuthorised } from './consents.notices.ts';
import { scheduleExpiry } from './consents.service.ts';
import { describeLimits, type RecurringLimits } from './limits.ts';
import type { Deps } from '../context.ts';
import { type RequestRow } from '../requests/requests.tables.ts';

// The recurring request at checkout: the page states the limits in plain words; the payer's bank
// gets an enduring consent with the same limits; when the payer comes back approved, the service
// creates the recurring consent, the customer, marks the request paid and sends the token, once,
// in recurring_payment.authorised, all in one transaction. A decline creates nothing.

function limitsOfRequest(request: RequestRow): RecurringLimits {
  const options = recurringOptionsOf(request);
  if (!options) throw new Error(`request ${request.id} has no recurring_options`);
  return options;
}

/** The payer's details: what the merchant gave at creation, completed by what the payer typed. */
function payerDetailsOf(request: RequestRow, typed: PayerDetails | null): PayerDetails & { email: string } {
  const given = request.cust_info ? (JSON.parse(request.cust_info) as CustInfo) : null;
  const merged: PayerDetails = { ...EMPTY_DETAILS, ...typed };
  for (const key of ['first_name', 'last_name', 'phone'] as const) {
    if (!merged[key] && given?.[key]) merged[key] = given[key]!;
  }
  // The email is the one the merchant verified: it gives the payer access to the consent dashboard.
  return { ...merged, email: given?.email ?? merged.email ?? '' };
}

async function start(deps: Deps, request: RequestRow, input: StartInput): Promise<StartOutcome> {
  const limits = limitsOfRequest(request);
  const connector = connectorFor(deps, input.bankId, request.mode);
  if (!connector) throw invalidParam('bank', 'Choose one of the banks offered for this request');
  const clock = await clockOf(deps, request);
  const now = clock.now();
  const state = newAuthState();
  await insertAuthorisation(deps.db, {
    state,
    request_id: request.id,
    bank_id: input.bankId,
    bank_consent_id: null,
    details: input.details ? JSON.stringify(input.details) : null,
    outcome: null,
    created_at: now,
    completed_at: null,
  });
  const consent = await connector.createEnduringConsent({
    fromAt: now,
    toAt: limits.end_at,
    maxPerPaymentCents: limits.max_per_payment_cents,
    period: enduringPeriodOf(limits.period),
    maxPerPeriodCents: limits.max_per_period_cents,
    maxCountPerPeriod: null,
    totalCount: limits.total_count,
    totalAmountCents: limits.total_amount_cents,
    creditor: await creditorOf(deps.db, request),
    remittance: { particulars: '', code: PCR_CODE, reference: request.reference ?? '' },
    idempotencyKey: state,
    at: now,
  });
  if (!consent.ok) {
    await closeAuthorisation(deps.db, state, 'failed', now);
    return { ok: false, message: `Your bank could not set up the authority: ${consent.message}`, paymentId: null };
  }
  await setAuthorisationBankConsent(deps.db, state, consent.consentId);
  return { ok: true, redirectUrl: connector.authoriseUrl({ consentId: consent.consentId, redirectUri: bankReturnUrl(deps), state }), paymentId: null };
}

export type AuthorisationResult = { request: RequestRow; consent: ConsentRow | null; outcome: 'authorised' | 'declined' | 'failed' | 'repeated' };

/** The payer is back from the bank with `state`; null when the state is not a recurring authorisation. */
export async function completeAuthorisation(deps: Deps, input: ReturnInput): Promise<AuthorisationResult | null> {
  const pending = await findAuthorisation(deps.db, input.state);
  if (!pending) return null;
  const request = (await findRequestById(deps.db, pending.request_id))!;
  const clock = await clockOf(deps, request);
  const repeated = async (): Promise<AuthorisationResult> => ({ request, consent: (await findConsentOfRequest(deps.db, request.id)) ?? null, outcome: 'repeated' });
  if (pending.outcome !== null) return repeated();

  if (input.error || !input.code) {
    // Declined at the bank: nothing is created and the request stays active for another try.
    return (await closeAuthorisation(deps.db, pending.state, 'declined', clock.now())) ? { request, consent: null, outcome: 'declined' } : repeated();
  }
  const connector = connectorFor(deps, pending.bank_id, request.mode);
  const token = connector ? await connector.exchangeCode({ code: input.code, redirectUri: bankReturnUrl(deps) }) : null;
  if (!token || !token.ok || token.consentId !== pending.bank_consent_id) {
    return (await closeAuthorisation(deps.db, pending.state, 'failed', clock.now())) ? { request, consent: null, outcome: 'failed' } : repeated();
  }

  const secret = newConsentToken();
  const created = await transact(deps.db, async (trx) => {
    const now = clock.now();
    if (!(await closeAuthorisation(trx, pending.state, 'authorised', now))) return null;
    const locked = (await lockRequest(trx, request.id))!;
    if (effectiveStatus(locked, now) !== 'active') {
      await closeAuthorisation(trx, pending.state, 'failed', now);
      return { consent: null, request: locked };
    }
    const limits = limitsOfRequest(locked);
    const scope = { userId: locked.user_id, mode: locked.mode };
    const details = payerDetailsOf(locked, pending.details ? (JSON.parse(pending.details) as PayerDetails) : null);
    const { customer } = await upsertCustomer(trx, scope, details, now);
    const consent: ConsentRow = {
      id: newId('recurring'),
      user_id: locked.user_id,
      mode: locked.mode,
      status: 'active',
      request_id: locked.id,
      bank_account_id: locked.bank_account_id,
      customer_id: customer.id,
      email: customer.email,
      merchant_identifier: locked.merchant_identifier,
      reference: locked.reference,
      token_hash: hashConsentToken(secret),
      bank_id: pending.bank_id,
      bank_consent_id: token.consentId,
      bank_access_token: deps.secrets.seal(token.accessToken),
      period: limits.period,
      max_per_period_cents: limits.max_per_period_cents,
      max_per_payment_cents: limits.max_per_payment_cents,
      total_count: limits.total_count,
      total_amount_cents: limits.total_amount_cents,
      end_at: limits.end_at,
      revoked_by: null,
      created_at: now,
      updated_at: now,
      revoked_at: null,
      expired_at: null,
      ...NO_USAGE,
    };
    await insertConsent(trx, consent);
    await markRequestPaid(trx, locked, now);
    // The token is in clear only in deliveries of this event to the endpoints that exist now.
    await emitEvent(trx, scope, 'recurring_payment.authorised', consent.id, {
      id: consent.id, merchant_identifier: consent.merchant_identifier, status: 'active', token: maskConsentToken(secret),
    }, now, deps.secrets.seal(secret));
    await scheduleExpiry(trx, deps, consent);
    await noticeConsentAuthorised(trx, consent, deps.config.serviceTimeZone, now);
    return { consent, request: { ...locked, status: 'paid', updated_at: now } };
  });
  if (created === null) return repeated();
  if (created.consent === null) {
    // The request closed while the payer was at the bank: give the bank consent back.
    await connector!.revokeConsent({ consentId: token.consentId }).catch(() => undefined);
    return { request: created.request, consent: null, outcome: 'failed' };
  }
  return { request: created.request, consent: created.consent, outcome: 'authorised' };
}

function statusAfter(result: AuthorisationResult): string {
  if (result.consent) return result.consent.status === 'active' ? 'successful' : result.consent.status;
  return result.outcome === 'declined' ? 'cancelled' : 'failed';
}

/** The 'recurring' checkout strategy; `zone` is the service time zone the limits are described in. */
export const recurringCheckout = (zone: string): CheckoutStrategy => ({
  summary(request) {
    const base = summaryOfEnduring(request);
    const words = describeLimits(limitsOfRequest(request), zone);
    return { ...base, lines: [{ label: 'Limits', value: words.charAt(0).toUpperCase() + words.slice(1) }, ...base.lines] };
  },
  unavailable: () => null,
  start,
  async completeReturn(deps, input): Promise<ReturnOutcome | null> {
    const result = await completeAuthorisation(deps, input);
    if (!result) return null;
    return { requestId: result.request.id, paymentId: null, status: statusAfter(result), channel: null };
  },
  async setUpView(deps, request, merchant): Promise<SetUpView | null> {
    const consent = await findConsentOfRequest(deps.db, request.id);
    if (!consent) return null;
    if (consent.status === 'revoked') {
      return { heading: 'Payment authority revoked', paragraphs: [`You had authorised regular payments to ${merchant}. This authority has been revoked, so no more payments can be taken with it.`] };
    }
    if (consent.status === 'expired') {
      return { heading: 'Payment authority ended', paragraphs: [`You had authorised regular payments to ${merchant}. This authority has ended, so no more payments can be taken with it.`] };
    }
    return {
      heading: 'Regular payments authorised',
      paragraphs: [
        `You have authorised ${merchant} to take payments from your account, ${describeLimits(limitsOf(consent), zone)}.`,
        `No money has moved yet. Each payment ${merchant} takes shows on your bank statement, and none can go over these limits.`,
        `To stop future payments, revoke this authority on your Tono payer page (sign in with your email) or at your bank.`,
      ],
    };
  },
});
