import { amountValue, displayAmount } from '../../shared/money.ts';
import type { PayerDetails } from '../customers/customers.service.ts';
import { completeOneOffReturn, startOneOffPayment } from '../payments/one-off.service.ts';
import { recurringOptionsOf, subscriptionOptionsOf } from '../requests/requests.present.ts';
import type { Deps } from '../context.ts';
import type { RequestRow } from '../requests/requests.tables.ts';

// What differs between kinds of request at checkout: the summary the payer reads, the consent to
// create at the bank and what happens when the payer comes back. One-off payments are built here;
// recurring consents and subscriptions provide their own strategy in their module's manifest.

export type SummaryLine = { label: string; value: string };
export type Summary = {
  /** The big line: the amount, or what the payer is agreeing to. */
  headline: string | null;
  lines: SummaryLine[];
  /** The consent wording above the bank choice. */
  consentText: string;
  /** Label of the continue button. */
  action: string;
};

export type StartInput = {
  amountCents: number | null;
  bankId: string;
  details: PayerDetails | null;
  channel: 'page' | 'embed' | 'api';
};
export type StartOutcome =
  | { ok: true; redirectUrl: string; paymentId: string | null }
  | { ok: false; message: string; paymentId: string | null };
export type ReturnInput = { state: string; code?: string | null; error?: string | null };
/** Where the payer's return ended: the request, the payment (if one was made) and its status. */
export type ReturnOutcome = { requestId: string; paymentId: string | null; status: string; channel: string | null };

/** What the payer reads on the page of a request that set something up (a consent, a subscription). */
export type SetUpView = { heading: string; paragraphs: string[] };

export type CheckoutStrategy = {
  summary(request: RequestRow): Summary;
  /** Null when the page can take this request; otherwise a plain message for the payer. */
  unavailable(request: RequestRow): string | null;
  start(deps: Deps, request: RequestRow, input: StartInput): Promise<StartOutcome>;
  /** Completes a return whose state this strategy issued; null when the state is not its own. */
  completeReturn(deps: Deps, input: ReturnInput): Promise<ReturnOutcome | null>;
  /**
   * For kinds whose approval moves no money: what was set up, for the page of the request once it
   * is done (right after approval and on every later visit). Absent for one-off payments.
   */
  setUpView?(deps: Deps, request: RequestRow, merchantName: string): Promise<SetUpView | null>;
};

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
    lines:
      recurring?.max_per_payment_cents != null
        ? [{ label: 'Most per payment', value: displayAmount(recurring.max_per_payment_cents) }]
        : [],
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
