import { randomBytes } from 'node:crypto';
import { unwrap, type components, type TonoClient } from '@tono/client';

// What `trigger` does for each event type: the API calls, through the test helpers, that a
// merchant would make to cause that event in test mode. Each returns one line per step.
// Two types are not offered, as no API call causes them (docs/webhooks.md, "Testing on a laptop"):
// refund_authority.status_updated (refunds are turned on and off in the dashboard, which takes the
// merchant to their bank) and webhook_endpoint.disabled (three days of real failures).

export const TRIGGERABLE = [
  'request.created',
  'request.expired',
  'request.status_updated',
  'payment.created',
  'payment.status_updated',
  'customer.created',
  'customer.updated',
  'recurring_payment.authorised',
  'recurring_payment.revoked',
  'recurring_payment.expired',
  'subscription.created',
  'subscription.paused',
  'subscription.resumed',
  'subscription.cancelled',
  'subscription.completed',
  'subscription.charge_failed',
  'subscription.charge_skipped',
  'refund.created',
  'refund.status_updated',
  'payment.reconciled',
] as const;
export type Triggerable = (typeof TRIGGERABLE)[number];

const MESSAGE = 'Triggered from the CLI';
/** A payer of this trigger alone, so customer.created is a new customer every time. */
const payerEmail = () => `payer-${randomBytes(4).toString('hex')}@trigger.example`;

async function bankAccount(tono: TonoClient): Promise<string> {
  const { bank_accounts: accounts } = await unwrap(tono.GET('/v1/bank-accounts'));
  if (accounts.length === 0)
    throw new Error('this merchant has no bank account: add one with `npm run --silent cli -- bank-accounts add`');
  return accounts[0]!.id;
}

async function createRequest(tono: TonoClient, extra: Partial<components['schemas']['CreateRequest']> = {}) {
  const body = { bank_account_id: await bankAccount(tono), message: MESSAGE, ...extra };
  const { request } = await unwrap(tono.POST('/v1/requests', { body }));
  return request;
}

async function pay(tono: TonoClient, requestId: string, custInfo?: Record<string, string>) {
  return unwrap(
    tono.POST('/v1/test-helpers/requests/{id}/pay', {
      params: { path: { id: requestId } },
      body: { ...(custInfo && { cust_info: custInfo }) },
    }),
  );
}

async function approvedConsent(tono: TonoClient, steps: string[], endDate?: string): Promise<string> {
  const request = await createRequest(tono, {
    recurring_options: { period: 'weekly', max_per_period: '50.00 NZD', ...(endDate && { end_date: endDate }) },
    cust_info: { email: payerEmail() },
  });
  steps.push(`created recurring request ${request.id}${endDate ? `, its consent ending on ${endDate}` : ''}`);
  await pay(tono, request.id);
  const { recurring_consents: consents } = await unwrap(
    tono.GET('/v1/recurring-consents', { params: { query: { limit: 1 } } }),
  );
  const consent = consents[0];
  if (!consent) throw new Error('the payer approved, but no recurring consent appeared');
  steps.push(`payer approved at the sandbox bank: recurring consent ${consent.id}`);
  return consent.id;
}

async function activeSubscription(
  tono: TonoClient,
  steps: string[],
  options: Partial<components['schemas']['CreateRequest']['subscription_options']> = {},
): Promise<string> {
  const request = await createRequest(tono, {
    subscription_options: { amount: '5.00 NZD', period: 'weekly', ...options },
    cust_info: { email: payerEmail() },
  });
  steps.push(`created subscription request ${request.id}`);
  await pay(tono, request.id);
  const { subscriptions } = await unwrap(tono.GET('/v1/subscriptions', { params: { query: { limit: 1 } } }));
  const subscription = subscriptions[0];
  if (!subscription) throw new Error('the payer approved, but no subscription appeared');
  steps.push(`payer approved at the sandbox bank: subscription ${subscription.id}`);
  return subscription.id;
}

async function revokedConsent(tono: TonoClient, steps: string[]): Promise<void> {
  const id = await approvedConsent(tono, steps);
  // the merchant's own revoke sends no event (they made it); the payer's does
  await unwrap(tono.POST('/v1/test-helpers/recurring-consents/{id}/revoke-by-payer', { params: { path: { id } } }));
  steps.push(`the payer revoked ${id} in the payer dashboard`);
}

/** A recurring consent that ends with the day after tomorrow (local time); four days on, it has expired. */
async function expiredConsent(tono: TonoClient, steps: string[]): Promise<void> {
  await approvedConsent(tono, steps, await clockDatePlus(tono, 2));
  await advanceDays(tono, 4, steps);
}

const DAY_SECONDS = 86_400;

/** The date `days` after the test clock's now, YYYY-MM-DD (UTC: within a day of any local date). */
async function clockDatePlus(tono: TonoClient, days: number): Promise<string> {
  const { clock } = await unwrap(tono.GET('/v1/test-helpers/clock'));
  return new Date(Date.parse(clock.now) + days * DAY_SECONDS * 1000).toISOString().slice(0, 10);
}

/** The merchant's test clock, moved on by whole days; the charges due on the way run in order. */
async function advanceDays(tono: TonoClient, days: number, steps: string[]): Promise<void> {
  await unwrap(tono.POST('/v1/test-helpers/clock/advance', { body: { seconds: days * DAY_SECONDS } }));
  steps.push(`moved the test clock ${days} day${days === 1 ? '' : 's'} on`);
}

/** A subscription whose first charge is a week from the test clock's today, and the bank refusing the next `declines` attempts. */
async function subscriptionDeclining(tono: TonoClient, steps: string[], declines: number): Promise<void> {
  const start = await clockDatePlus(tono, 7);
  const id = await activeSubscription(tono, steps, { start_date: start });
  await unwrap(
    tono.POST('/v1/test-helpers/subscriptions/{id}/decline-next', {
      params: { path: { id } },
      body: { count: declines, reason: 'insufficient_funds' },
    }),
  );
  steps.push(
    `the bank will refuse the next ${declines === 1 ? 'charge' : `${declines} charges`} of ${id} (insufficient funds)`,
  );
}

/** Waits for the worker to carry a refund out at the sandbox bank (a few seconds at most); its status then. */
async function refundSettled(tono: TonoClient, id: string): Promise<string> {
  const deadline = Date.now() + 30_000;
  for (;;) {
    const { refund } = await unwrap(tono.GET('/v1/refunds/{id}', { params: { path: { id } } }));
    if (refund.status !== 'pending' || Date.now() > deadline) return refund.status;
    await new Promise((resolve) => setTimeout(resolve, 250));
  }
}

/** A payment made and refunded; with `settled`, waited on until the sandbox bank has paid it back. */
async function refundedPayment(tono: TonoClient, steps: string[], settled: boolean): Promise<void> {
  const request = await createRequest(tono, { amount: '1.00 NZD' });
  const { payment } = await pay(tono, request.id);
  if (!payment) throw new Error('the sandbox bank did not make the payment');
  steps.push(`created request ${request.id} and paid it: payment ${payment.id} ${payment.status}`);
  const { refund } = await unwrap(tono.POST('/v1/refunds', { body: { payment_id: payment.id, reason: MESSAGE } }));
  steps.push(`refunded it: refund ${refund.id} ${refund.status}`);
  if (settled) steps.push(`the sandbox bank paid it back: refund ${refund.id} ${await refundSettled(tono, refund.id)}`);
}

/**
 * A paid payment, and a Westpac statement export showing its money arrive with its particulars,
 * imported: the import matches the line to the payment (docs/reconciliation.md, "Matching").
 */
async function reconciledPayment(tono: TonoClient, steps: string[]): Promise<void> {
  const request = await createRequest(tono, { amount: '1.00 NZD' });
  const { payment } = await pay(tono, request.id);
  if (payment?.status !== 'successful' || !payment.completed_at)
    throw new Error(`the sandbox bank did not make the payment (${payment?.status ?? 'no payment'})`);
  steps.push(`created request ${request.id} and paid it: payment ${payment.id} ${payment.status}`);
  // What moved at the bank (0.01 NZD in test mode), on the day it did, as the bank shows it.
  const [year, month, day] = payment.completed_at.slice(0, 10).split('-');
  const { particulars, code, reference } = payment.pcr;
  const quoted = (field: string) => `"${field.replaceAll('"', '""')}"`;
  const content = [
    'Date,Amount,Other Party,Description,Reference,Particulars,Analysis Code',
    [
      `${day}/${month}/${year}`,
      payment.amount.value.replace(/ NZD$/, ''),
      quoted('Sandbox payer'),
      quoted('DIRECT CREDIT'),
      quoted(reference),
      quoted(particulars),
      quoted(code),
    ].join(','),
    '',
  ].join('\n');
  const { statement } = await unwrap(
    tono.POST('/v1/statements', { body: { content, filename: `trigger-${particulars}.csv` } }),
  );
  steps.push(
    `imported a Westpac statement showing it (particulars ${particulars}): statement ${statement.id}, ${statement.matched_count} line matched`,
  );
}

export async function triggerEvent(tono: TonoClient, type: Triggerable): Promise<string[]> {
  const steps: string[] = [];
  switch (type) {
    case 'request.created': {
      const request = await createRequest(tono, { amount: '1.00 NZD' });
      steps.push(`created request ${request.id}`);
      break;
    }
    case 'request.expired': {
      const request = await createRequest(tono, { amount: '1.00 NZD', expires_in: '1m' });
      steps.push(`created request ${request.id}, expiring in a minute`);
      await unwrap(tono.POST('/v1/test-helpers/clock/advance', { body: { seconds: 120 } }));
      steps.push('moved the test clock 2 minutes on');
      break;
    }
    case 'request.status_updated':
    case 'payment.created':
    case 'payment.status_updated': {
      const request = await createRequest(tono, { amount: '1.00 NZD' });
      steps.push(`created request ${request.id}`);
      const { payment } = await pay(tono, request.id);
      steps.push(`paid it at the sandbox bank: payment ${payment?.id} ${payment?.status}`);
      break;
    }
    case 'customer.created':
    case 'customer.updated': {
      const email = payerEmail();
      const request = await createRequest(tono, { amount: '1.00 NZD', type: 'multi' });
      steps.push(`created reusable request ${request.id}`);
      await pay(tono, request.id, { email, first_name: 'Aroha' });
      steps.push(`paid it as ${email}`);
      if (type === 'customer.updated') {
        await pay(tono, request.id, { email, first_name: 'Aroha', last_name: 'Ngata' });
        steps.push(`paid it again as ${email}, now with a last name`);
      }
      break;
    }
    case 'recurring_payment.authorised':
      await approvedConsent(tono, steps);
      break;
    case 'recurring_payment.revoked':
      await revokedConsent(tono, steps);
      break;
    case 'recurring_payment.expired':
      await expiredConsent(tono, steps);
      break;
    case 'payment.reconciled':
      await reconciledPayment(tono, steps);
      break;
    case 'subscription.created':
      await activeSubscription(tono, steps);
      break;
    case 'subscription.paused':
    case 'subscription.resumed':
    case 'subscription.cancelled': {
      const id = await activeSubscription(tono, steps);
      if (type === 'subscription.cancelled') {
        await unwrap(tono.PUT('/v1/subscriptions/{id}/cancel', { params: { path: { id } } }));
        steps.push(`cancelled ${id}`);
        break;
      }
      await unwrap(tono.POST('/v1/subscriptions/{id}/pause', { params: { path: { id } } }));
      steps.push(`paused ${id}`);
      if (type === 'subscription.resumed') {
        await unwrap(tono.POST('/v1/subscriptions/{id}/resume', { params: { path: { id } } }));
        steps.push(`resumed ${id}`);
      }
      break;
    }
    case 'subscription.completed': {
      // One payment in all: the first charge, due at approval, completes it.
      await activeSubscription(tono, steps, { total_count: 1 });
      await advanceDays(tono, 1, steps);
      break;
    }
    case 'subscription.charge_failed':
      await subscriptionDeclining(tono, steps, 1);
      await advanceDays(tono, 9, steps);
      break;
    case 'refund.created':
    case 'refund.status_updated':
      await refundedPayment(tono, steps, type === 'refund.status_updated');
      break;
    case 'subscription.charge_skipped':
      // The first attempt and its retries 1, 3 and 5 days later all refused: the slot is skipped.
      await subscriptionDeclining(tono, steps, 4);
      await advanceDays(tono, 18, steps);
      break;
  }
  return steps;
}
