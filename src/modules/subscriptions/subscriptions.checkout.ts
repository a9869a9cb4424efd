import type { CheckoutStrategy, ReturnInput, ReturnOutcome, SetUpView, Summary } from '../manifest.ts';
import {
  completeAuthorisation,
  startAuthorisation,
  type EnduringKind,
} from '../authorisations/authorisations.service.ts';
import { subscriptionOptionsOf } from '../requests/requests.present.ts';
import { setUpWithLine } from '../checkout/checkout.strategies.ts';
import { describeSchedule, type SubscriptionPeriod } from './schedule.ts';
import { describeMoment } from '../../shared/zone.ts';
import { displayAmount } from '../../shared/money.ts';
import { paymentsUnder } from '../payments/payments.service.ts';
import { bankLimitsSentence, consentPlan } from './subscriptions.rules.ts';
import { createSubscription } from './subscriptions.service.ts';
import { findSubscriptionById, findSubscriptionByRequest, type SubscriptionRow } from './subscriptions.repo.ts';
import { clockOf } from '../merchants/merchants.clock.ts';
import type { Deps } from '../context.ts';
import type { RequestRow } from '../requests/requests.tables.ts';

// The hosted page's subscription kind: the plan in plain words, an enduring consent at the bank
// that fits it (src/modules/authorisations), and on the payer's approval the subscription, in the
// transaction that creates the customer and marks the request paid.

export function subscriptionSummary(request: RequestRow, zone: string): Summary {
  const options = subscriptionOptionsOf(request)!;
  return {
    headline: describeSchedule(options, zone),
    lines: setUpWithLine(request),
    consentText: `You will authorise these regular payments in your bank. ${bankLimitsSentence(options)} You can cancel at any time, on your Tono payer page or at your bank.`,
    action: 'Continue to your bank',
  };
}

function optionsOf(request: RequestRow) {
  const options = subscriptionOptionsOf(request);
  if (!options) throw new Error(`request ${request.id} is not a subscription`);
  return options;
}

/** The subscription kind of enduring consent: a consent that fits the plan at the bank, the subscription on approval. */
export const subscriptionKind: EnduringKind = {
  kind: 'subscription',
  refusal: 'The bank could not set up the subscription',
  consentTerms: (request, now) => ({
    ...consentPlan(optionsOf(request), now),
    totalAmountCents: null,
    remittance: { particulars: 'SUBSCRIPTION', code: 'TONO', reference: request.reference ?? '' },
  }),
  async create(trx, deps, approved) {
    const subscription = await createSubscription(trx, deps, {
      request: approved.request,
      options: optionsOf(approved.request),
      email: approved.customer.email,
      customerId: approved.customer.id,
      payerDetails: approved.details,
      bankId: approved.bankId,
      bankConsentId: approved.bankConsentId,
      bankAccessToken: approved.bankAccessToken,
      bankRefreshToken: approved.bankRefreshToken,
      bankTokenExpiresAt: approved.bankTokenExpiresAt,
      authorisedAt: approved.now,
    });
    return subscription.id;
  },
};

/** The subscription a return created, or why it did not: for the page and the pay test helper. */
export type SubscriptionReturn = ReturnOutcome & { subscription: SubscriptionRow | null };

export async function completeSubscriptionReturn(deps: Deps, input: ReturnInput): Promise<SubscriptionReturn | null> {
  const result = await completeAuthorisation(deps, subscriptionKind, input);
  if (!result) return null;
  const subscription = result.objectId ? ((await findSubscriptionById(deps.db, result.objectId)) ?? null) : null;
  const status = result.outcome === 'declined' ? 'cancelled' : subscription ? 'successful' : 'failed';
  return { requestId: result.request.id, paymentId: null, channel: result.channel, status, subscription };
}

export function subscriptionCheckout(deps: Deps): CheckoutStrategy {
  return {
    summary: (request) => subscriptionSummary(request, deps.config.serviceTimeZone),
    unavailable: () => null,
    start: (deps, request, input) => startAuthorisation(deps, subscriptionKind, request, input),
    completeReturn: completeSubscriptionReturn,
    setUpView: subscriptionSetUpView,
  };
}

async function subscriptionSetUpView(deps: Deps, request: RequestRow, merchant: string): Promise<SetUpView | null> {
  const subscription = await findSubscriptionByRequest(deps.db, request.id);
  if (!subscription) return null;
  const zone = subscription.zone;
  const plan = describeSchedule(
    {
      ...subscription,
      start_at: subscription.start_at ?? subscription.first_charge_at,
      period: subscription.period as SubscriptionPeriod,
    },
    zone,
  );
  const planLine = `Your subscription “${subscription.description}” with ${merchant}: ${plan}.`;
  switch (subscription.status) {
    case 'cancelled':
      return {
        heading: 'Subscription cancelled',
        paragraphs: [
          planLine,
          `It was cancelled${subscription.cancelled_at ? ` on ${describeMoment(subscription.cancelled_at, zone)}` : ''}; nothing more will be charged.`,
        ],
      };
    case 'completed':
      return {
        heading: 'Subscription completed',
        paragraphs: [planLine, 'Every payment has been made; nothing more will be charged.'],
      };
    default: {
      const charged = subscription.successful_count + subscription.failed_count + subscription.skipped_count > 0;
      // What was taken already (the first charge, at once when the plan starts now), before what comes next.
      const [latest] = await paymentsUnder(deps.db, { subscriptionId: subscription.id }, 1);
      const taken =
        latest?.status === 'successful'
          ? [
              `Charged: ${displayAmount(latest.amount_cents)} on ${describeMoment(latest.completed_at ?? latest.created_at, zone)}.`,
            ]
          : [];
      // The first charge is due (a plan that starts on approval) or under way, and not yet settled.
      const now = (await clockOf(deps, subscription)).now();
      const firstUnderWay =
        !charged &&
        subscription.status === 'active' &&
        latest?.status !== 'successful' &&
        ((latest !== undefined && latest.status !== 'failed' && latest.status !== 'cancelled') ||
          (subscription.next_charge_at !== null && subscription.next_charge_at <= now));
      const next = firstUnderWay
        ? `Your first charge of ${displayAmount(subscription.amount_cents)} is being taken now; you will get a receipt.`
        : subscription.status === 'paused'
          ? `${merchant} has paused it; nothing is charged until they resume it.`
          : subscription.next_charge_at === null
            ? 'No further charge is scheduled.'
            : `${charged ? 'Next charge' : 'First charge'}: ${describeMoment(subscription.next_charge_at, zone)}.`;
      const nothingYet = !charged && !firstUnderWay && latest?.status !== 'successful';
      return {
        heading: 'Subscription set up',
        paragraphs: [
          planLine,
          ...taken,
          next,
          `${nothingYet ? 'No money has moved yet. ' : ''}Each charge shows on your bank statement. To cancel, use your Tono payer page (sign in with your email) or your bank.`,
        ],
      };
    }
  }
}
