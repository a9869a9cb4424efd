import { newId } from '../../shared/ids.ts';
import type { CheckoutStrategy, ReturnOutcome, SetUpView } from '../manifest.ts';
import { summaryOfEnduring } from '../checkout/checkout.strategies.ts';
import { emitEvent } from '../events/events.service.ts';
import { PCR_CODE } from '../payments/payments.rules.ts';
import { recurringOptionsOf } from '../requests/requests.present.ts';
import {
  completeAuthorisation,
  startAuthorisation,
  type AuthorisationResult,
  type EnduringKind,
} from '../authorisations/authorisations.service.ts';
import { sealConsentTokens } from '../banks/consent-tokens.ts';
import {
  bankTokenColumns,
  findConsentById,
  findConsentOfRequest,
  insertConsent,
  type ConsentRow,
} from './consents.repo.ts';
import { enduringPeriodOf, hashConsentToken, limitsOf, newConsentToken, NO_USAGE } from './consents.rules.ts';
import { noticeConsentAuthorised } from './consents.notices.ts';
import { scheduleExpiry } from './consents.service.ts';
import { describeLimits, type RecurringTerms } from './limits.ts';
import type { Deps } from '../context.ts';
import type { RequestRow } from '../requests/requests.tables.ts';

// The recurring request at checkout: the page states the limits in plain words; the payer's bank
// gets an enduring consent with the same limits (src/modules/authorisations); when the payer comes
// back approved, the recurring consent is created and the token sent, once, in
// recurring_payment.authorised, in the transaction that creates the customer and marks the request
// paid. A decline creates nothing.

function limitsOfRequest(request: RequestRow): RecurringTerms {
  const options = recurringOptionsOf(request);
  if (!options) throw new Error(`request ${request.id} has no recurring_options`);
  return options;
}

/** The recurring kind of enduring consent: the request's limits at the bank, a recurring consent on approval. */
export const recurringKind: EnduringKind = {
  kind: 'recurring',
  refusal: 'Your bank could not set up the authority',
  consentTerms(request, now) {
    const limits = limitsOfRequest(request);
    return {
      // Kept on the consent as starts_at: the bank counts fortnights from this instant's week.
      fromAt: now,
      toAt: limits.end_at,
      maxPerPaymentCents: limits.max_per_payment_cents,
      period: enduringPeriodOf(limits.period),
      maxPerPeriodCents: limits.max_per_period_cents,
      maxCountPerPeriod: null,
      totalCount: limits.total_count,
      totalAmountCents: limits.total_amount_cents,
      remittance: { particulars: '', code: PCR_CODE, reference: request.reference ?? '' },
    };
  },
  async create(trx, deps, approved) {
    const { request, customer, now } = approved;
    const limits = limitsOfRequest(request);
    const secret = newConsentToken();
    const consent: ConsentRow = {
      id: newId('recurring'),
      user_id: request.user_id,
      mode: request.mode,
      status: 'active',
      request_id: request.id,
      bank_account_id: request.bank_account_id,
      customer_id: customer.id,
      email: customer.email,
      description: request.message,
      merchant_identifier: request.merchant_identifier,
      reference: request.reference,
      token_hash: hashConsentToken(secret),
      bank_id: approved.bankId,
      bank_consent_id: approved.bankConsentId,
      ...bankTokenColumns(
        sealConsentTokens(deps.secrets, {
          accessToken: approved.bankAccessToken,
          refreshToken: approved.bankRefreshToken,
          expiresAt: approved.bankTokenExpiresAt,
        }),
      ),
      period: limits.period,
      max_per_period_cents: limits.max_per_period_cents,
      max_per_payment_cents: limits.max_per_payment_cents,
      total_count: limits.total_count,
      total_amount_cents: limits.total_amount_cents,
      end_at: limits.end_at,
      starts_at: approved.startsAt,
      revoked_by: null,
      created_at: now,
      updated_at: now,
      revoked_at: null,
      expired_at: null,
      ...NO_USAGE,
    };
    await insertConsent(trx, consent);
    // The token is in clear only in deliveries of this event to the endpoints that exist now.
    await emitEvent(
      trx,
      { userId: request.user_id, mode: request.mode },
      'recurring_payment.authorised',
      consent.id,
      {
        id: consent.id,
        merchant_identifier: consent.merchant_identifier,
        status: 'active',
        token: secret,
      },
      now,
      { secrets: deps.secrets },
    );
    await scheduleExpiry(trx, deps, consent);
    await noticeConsentAuthorised(trx, consent, deps.config.serviceTimeZone, now);
    return consent.id;
  },
};

async function statusAfter(deps: Deps, result: AuthorisationResult): Promise<string> {
  if (result.outcome === 'declined') return 'cancelled';
  if (result.outcome === 'failed') return 'failed';
  const consent = result.objectId ? await findConsentById(deps.db, result.objectId) : undefined;
  if (!consent) return 'failed';
  return consent.status === 'active' ? 'successful' : consent.status;
}

/** The 'recurring' checkout strategy; `zone` is the service time zone the limits are described in. */
export const recurringCheckout = (zone: string): CheckoutStrategy => ({
  summary(request) {
    const base = summaryOfEnduring(request);
    const words = describeLimits(limitsOfRequest(request), zone);
    return {
      ...base,
      lines: [{ label: 'Limits', value: words.charAt(0).toUpperCase() + words.slice(1) }, ...base.lines],
    };
  },
  unavailable: () => null,
  start: (deps, request, input) => startAuthorisation(deps, recurringKind, request, input),
  async completeReturn(deps, input): Promise<ReturnOutcome | null> {
    const result = await completeAuthorisation(deps, recurringKind, input);
    if (!result) return null;
    return { requestId: result.request.id, paymentId: null, status: await statusAfter(deps, result), channel: null };
  },
  async setUpView(deps, request, merchant): Promise<SetUpView | null> {
    const consent = await findConsentOfRequest(deps.db, request.id);
    if (!consent) return null;
    if (consent.status === 'revoked') {
      return {
        heading: 'Payment authority revoked',
        paragraphs: [
          `You had authorised regular payments to ${merchant}. This authority has been revoked, so no more payments can be taken with it.`,
        ],
      };
    }
    if (consent.status === 'expired') {
      return {
        heading: 'Payment authority ended',
        paragraphs: [
          `You had authorised regular payments to ${merchant}. This authority has ended, so no more payments can be taken with it.`,
        ],
      };
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
