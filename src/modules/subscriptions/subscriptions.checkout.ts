import type { Kysely } from 'kysely';
import { randomSecret } from '../../shared/crypto.ts';
import type { Database } from '../../store/tables.ts';
import { transact } from '../../store/tx.ts';
import type { CheckoutStrategy, ReturnInput, ReturnOutcome, SetUpView, StartInput, StartOutcome, Summary } from '../checkout/checkout.strategies.ts';
import { EMPTY_DETAILS, upsertCustomer, type PayerDetails } from '../customers/customers.service.ts';
import { bankReturnUrl, connectorFor, creditorOf } from '../payments/payments.banks.ts';
import { clockOf } from '../payments/payments.service.ts';
import { findRequestById, lockRequest } from '../requests/requests.service.ts';
import { subscriptionOptionsOf } from '../requests/requests.present.ts';
import { markRequestPaid } from '../requests/requests.service.ts';
import { describeSchedule, type SubscriptionPeriod } from './schedule.ts';
import { describeMoment } from '../../shared/zone.ts';
import { consentPlan } from './subscriptions.rules.ts';
import { createSubscription } from './subscriptions.service.ts';
import { findSubscriptionByRequest, type SubscriptionRow } from './subscriptions.repo.ts';
import type { Deps } from '../context.ts';
import { type RequestRow } from '../requests/requests.tables.ts';

// The hosted page's subscription kind: the plan in plain words, an enduring consent at the bank
// that fits it, and on the payer's approval the subscription, the customer and the paid request,
// in one transaction.

type Db = Kysely<Database>;
const STATE_PREFIX = 'sub.';

/** The payer's details: the request's cust_info (the merchant's verified email wins) over what the page collected. */
function payerDetails(request: RequestRow, collected: PayerDetails | null): PayerDetails & { email: string } {
  const given = request.cust_info ? (JSON.parse(request.cust_info) as Partial<PayerDetails> & { email: string }) : null;
  const merged = { ...EMPTY_DETAILS, ...(collected ?? {}) };
  for (const [key, value] of Object.entries(given ?? {})) if (value !== undefined && value !== null && value !== '') (merged as Record<string, unknown>)[key] = value;
  return { ...merged, email: (given?.email ?? collected?.email ?? '').trim().toLowerCase() };
}

export function subscriptionSummary(request: RequestRow, zone: string): Summary {
  const options = subscriptionOptionsOf(request)!;
  return {
    headline: describeSchedule(options, zone),
    lines: [],
    consentText: 'You will authorise these regular payments in your bank. You can cancel at any time, on your Tono payer page or at your bank.',
    action: 'Continue to your bank',
  };
}

async function start(deps: Deps, request: RequestRow, input: StartInput): Promise<StartOutcome> {
  const options = subscriptionOptionsOf(request);
  const bank = connectorFor(deps, input.bankId, request.mode);
  if (!options) return { ok: false, message: 'This request is not a subscription', paymentId: null };
  if (!bank) return { ok: false, message: 'That bank is not connected', paymentId: null };
  const now = (await clockOf(deps, request)).now();
  const plan = consentPlan(options, now);
  const state = STATE_PREFIX + randomSecret(24);
  const consent = await bank.createEnduringConsent({
    ...plan,
    totalAmountCents: null,
    creditor: await creditorOf(deps.db, request),
    remittance: { particulars: 'SUBSCRIPTION', code: 'TONO', reference: request.reference ?? '' },
    idempotencyKey: state,
    at: now,
  });
  if (!consent.ok) return { ok: false, message: `The bank could not set up the subscription: ${consent.message}`, paymentId: null };
  await deps.db.insertInto('subscription_authorisations').values({
    state,
    request_id: request.id,
    bank_id: input.bankId,
    bank_consent_id: consent.consentId,
    payer_details: JSON.stringify(payerDetails(request, input.details)),
    channel: input.channel,
    outcome: 'pending',
    subscription_id: null,
    created_at: now,
    updated_at: now,
  }).execute();
  return { ok: true, redirectUrl: bank.authoriseUrl({ consentId: consent.consentId, redirectUri: bankReturnUrl(deps), state }), paymentId: null };
}

async function settle(db: Db, state: string, outcome: string, now: number, subscriptionId: string | null = null): Promise<void> {
  await db.updateTable('subscription_authorisations').set({ outcome, subscription_id: subscriptionId, updated_at: now })
    .where('state', '=', state).where('outcome', '=', 'pending').execute();
}

/** The subscription a return created, or why it did not: for the page and the pay test helper. */
export type SubscriptionReturn = ReturnOutcome & { subscription: SubscriptionRow | null };

export async function completeSubscriptionReturn(deps: Deps, input: ReturnInput): Promise<SubscriptionReturn | null> {
  if (!input.state.startsWith(STATE_PREFIX)) return null;
  const pending = await deps.db.selectFrom('subscription_authorisations').selectAll().where('state', '=', input.state).executeTakeFirst();
  if (!pending) return null;
  const base = { requestId: pending.request_id, paymentId: null, channel: pending.channel };
  const existing = async () => pending.subscription_id
    ? (await deps.db.selectFrom('subscriptions').selectAll().where('id', '=', pending.subscription_id).executeTakeFirst()) ?? null
    : null;
  if (pending.outcome !== 'pending') return { ...base, status: pending.outcome, subscription: await existing() };
  const owner = await findRequestById(deps.db, pending.request_id);
  if (!owner) throw new Error(`request ${pending.request_id} of a subscription authorisation is missing`);
  const bank = connectorFor(deps, pending.bank_id, owner.mode);
  const clock = await clockOf(deps, owner);
  if (input.error || !input.code || !bank) {
    await settle(deps.db, input.state, 'declined', clock.now());
    return { ...base, status: 'cancelled', subscription: null };
  }
  const exchanged = await bank.exchangeCode({ code: input.code, redirectUri: bankReturnUrl(deps) });
  if (!exchanged.ok) {
    await settle(deps.db, input.state, 'failed', clock.now());
    return { ...base, status: 'failed', subscription: null };
  }
  const created = await transact(deps.db, async (trx) => {
    const request = await lockRequest(trx, pending.request_id);
    const now = clock.now();
    if (!request || request.status !== 'active') {
      await settle(trx, input.state, 'failed', now);
      return null;
    }
    const details = JSON.parse(pending.payer_details ?? '{}') as PayerDetails & { email: string };
    const scope = { userId: request.user_id, mode: request.mode };
    const { customer } = await upsertCustomer(trx, scope, details, now);
    const subscription = await createSubscription(trx, deps, {
      request,
      options: subscriptionOptionsOf(request)!,
      email: customer.email,
      customerId: customer.id,
      payerDetails: details,
      bankId: pending.bank_id,
      bankConsentId: exchanged.consentId,
      bankAccessToken: exchanged.accessToken,
      authorisedAt: now,
    });
    await markRequestPaid(trx, request, now);
    await settle(trx, input.state, 'active', now, subscription.id);
    return subscription;
  });
  if (!created) {
    // The request was taken (or closed) meanwhile: nothing will be charged under this consent.
    await bank.revokeConsent({ consentId: exchanged.consentId }).catch(() => undefined);
    return { ...base, status: 'failed', subscription: null };
  }
  return { ...base, status: 'successful', subscription: created };
}

export function subscriptionCheckout(deps: Deps): CheckoutStrategy {
  return {
    summary: (request) => subscriptionSummary(request, deps.config.serviceTimeZone),
    unavailable: () => null,
    start,
    completeReturn: completeSubscriptionReturn,
    setUpView: subscriptionSetUpView,
  };
}

async function subscriptionSetUpView(deps: Deps, request: RequestRow, merchant: string): Promise<SetUpView | null> {
  const subscription = await findSubscriptionByRequest(deps.db, request.id);
  if (!subscription) return null;
  const zone = subscription.zone;
  const plan = describeSchedule({ ...subscription, start_at: subscription.start_at ?? subscription.first_charge_at, period: subscription.period as SubscriptionPeriod }, zone);
  const planLine = `Your subscription to ${merchant}: ${plan}.`;
  switch (subscription.status) {
    case 'cancelled':
      return { heading: 'Subscription cancelled', paragraphs: [planLine, `It was cancelled${subscription.cancelled_at ? ` on ${describeMoment(subscription.cancelled_at, zone)}` : ''}; nothing more will be charged.`] };
    case 'completed':
      return { heading: 'Subscription completed', paragraphs: [planLine, 'Every payment has been made; nothing more will be charged.'] };
    default: {
      const charged = subscription.successful_count + subscription.failed_count + subscription.skipped_count > 0;
      const next = subscription.status === 'paused'
        ? `${merchant} has paused it; nothing is charged until they resume it.`
        : subscription.next_charge_at === null
          ? 'No further charge is scheduled.'
          : `${charged ? 'Next charge' : 'First charge'}: ${describeMoment(subscription.next_charge_at, zone)}.`;
      return {
        heading: 'Subscription set up',
        paragraphs: [
          planLine,
          next,
          `${charged ? '' : 'No money has moved yet. '}Each charge shows on your bank statement. To cancel, use your Tono payer page (sign in with your email) or your bank.`,
        ],
      };
    }
  }
}
