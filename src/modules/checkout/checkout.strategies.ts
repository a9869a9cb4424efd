import { amountValue, displayAmount } from '../../shared/money.ts';
import { completeOneOffReturn, startOneOffPayment } from '../payments/one-off.service.ts';
import { recurringOptionsOf, subscriptionOptionsOf } from '../requests/requests.present.ts';
import type { Deps } from '../context.ts';
import type { CheckoutStrategy, ReturnInput, ReturnOutcome, Summary, SummaryLine } from '../manifest.ts';
import type { RequestRow } from '../requests/requests.tables.ts';

// What differs between kinds of request at checkout: the summary the payer reads, the consent to
// create at the bank and what happens when the payer comes back. One-off payments are built here;
// recurring consents and subscriptions provide their own strategy in their module's manifest.

export const oneOffCheckout: CheckoutStrategy = {
  summary(request) {
    const fixed = request.amount_cents;
    return {
      headline: fixed === null ? null : displayAmount(fixed),
      // A payer-chosen amount has its own field, with the bounds beside it.
      lines: [],
      consentText:
        'You will approve this one payment in your bank. Your bank details are never shared with the merchant.',
      action: 'Continue to your bank',
    };
  },
  unavailable: () => null,
  async start(deps, request, input) {
    const started = await startOneOffPayment(deps, request, input);
    return started.ok
      ? { ok: true, redirectUrl: started.redirectUrl, paymentId: started.payment.id }
      : { ok: false, message: started.message, paymentId: started.payment.id };
  },
  async completeReturn(deps, input) {
    const payment = await completeOneOffReturn(deps, input);
    return (
      payment && {
        requestId: payment.request_id,
        paymentId: payment.id,
        status: payment.status,
        channel: payment.channel,
      }
    );
  },
};

const notYet = (what: string): CheckoutStrategy => ({
  summary: (request) => summaryOfEnduring(request),
  unavailable: () => `${what} cannot be set up on this page yet. Please contact the merchant.`,
  start: async () => ({ ok: false, message: `${what} is not available yet`, paymentId: null }),
  completeReturn: async () => null,
});

/**
 * The email a recurring consent or a subscription is set up with (the request's cust_info): the
 * payer signs in to the payer dashboard with it, so the page says which one it is.
 */
export function setUpWithLine(request: RequestRow): SummaryLine[] {
  const email = request.cust_info ? (JSON.parse(request.cust_info) as { email?: string }).email : undefined;
  return email ? [{ label: 'Set up with the email', value: email.trim().toLowerCase() }] : [];
}

/** The summary of a recurring or subscription request, for whichever strategy shows it. */
export function summaryOfEnduring(request: RequestRow): Summary {
  const recurring = recurringOptionsOf(request);
  const subscription = subscriptionOptionsOf(request);
  if (subscription) {
    return {
      headline: `${displayAmount(subscription.amount_cents)} ${subscription.period}`,
      lines: [
        { label: 'Charged', value: `${amountValue(subscription.amount_cents)} ${subscription.period}` },
        ...(subscription.total_count !== null
          ? [{ label: 'Number of payments', value: String(subscription.total_count) }]
          : []),
      ],
      consentText: 'You will authorise these regular payments in your bank. You can cancel at any time.',
      action: 'Continue to your bank',
    };
  }
  return {
    headline: recurring
      ? `Up to ${displayAmount(recurring.max_per_period_cents)} per ${recurring.period.replace(/ly$/, '').replace('dai', 'day')}`
      : null,
    lines: [
      ...(recurring?.max_per_payment_cents != null
        ? [{ label: 'Most per payment', value: displayAmount(recurring.max_per_payment_cents) }]
        : []),
      ...setUpWithLine(request),
    ],
    consentText:
      'You will authorise future payments within these limits in your bank. You can revoke this at any time, on your Tono payer page or at your bank.',
    action: 'Continue to your bank',
  };
}

/** The strategy of each kind of request, from the modules' manifests. */
export type CheckoutStrategies = ReadonlyMap<string, CheckoutStrategy>;

const unknownKind = notYet('This kind of request');

export function strategyFor(strategies: CheckoutStrategies, request: Pick<RequestRow, 'kind'>): CheckoutStrategy {
  return strategies.get(request.kind) ?? unknownKind;
}

/** Asks each strategy whether the returning state is its own. */
export async function completeReturn(
  strategies: CheckoutStrategies,
  deps: Deps,
  input: ReturnInput,
): Promise<ReturnOutcome | null> {
  for (const strategy of new Set(strategies.values())) {
    const outcome = await strategy.completeReturn(deps, input);
    if (outcome) return outcome;
  }
  return null;
}
