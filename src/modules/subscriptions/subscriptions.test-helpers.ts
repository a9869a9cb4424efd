import { AppError } from '../../shared/errors.ts';
import { authoriseAtBank } from '../test-helpers/pay.bank-driver.ts';
import { detailsFromBody } from '../test-helpers/pay.service.ts';
import type { PayHelper } from '../manifest.ts';
import { requireTestMode } from '../test-helpers/clock.service.ts';
import { banksFor, bankReturnUrl } from '../payments/payments.banks.ts';
import { completeSubscriptionReturn, subscriptionCheckout } from './subscriptions.checkout.ts';
import { presentSubscription } from './subscriptions.present.ts';
import { getSubscription } from './subscriptions.repo.ts';
import { cancelSubscriptionByPayer } from './subscriptions.service.ts';
import type { DeclineNextBody } from './subscriptions.schemas.ts';
import type { Ctx } from '../context.ts';
import { recordAuditAfter } from '../audit/audit.service.ts';

// Test helpers for subscriptions (test keys only). They act where a payer or their bank would:
// the sandbox bank's own test hooks over HTTP, and the payer's cancellation in the service.

const owner = (ctx: Ctx) => ({ userId: ctx.merchant.id, mode: ctx.mode });

async function sandboxHook(ctx: Ctx, path: string, body: unknown): Promise<void> {
  await ctx.deps.banks.sandboxTestHook(path, body).catch((error: Error) => {
    throw new AppError('service_unavailable', `The sandbox bank did not take the test hook: ${error.message}`, {});
  });
}

async function testSubscription(ctx: Ctx, id: string) {
  requireTestMode(ctx);
  return getSubscription(ctx.db, owner(ctx), id);
}

export async function declineNextCharges(ctx: Ctx, id: string, body: DeclineNextBody) {
  const sub = await testSubscription(ctx, id);
  await sandboxHook(ctx, `/consents/${encodeURIComponent(sub.bank_consent_id)}/decline-next`, {
    count: body.count,
    reason: body.reason ?? 'insufficient_funds',
  });
  await recordAuditAfter(ctx, 'subscription.test_decline_next', sub.id, {
    count: body.count,
    reason: body.reason ?? 'insufficient_funds',
  });
  return { subscription: presentSubscription(sub) };
}

/** The payer withdraws the consent in their banking app: no event now; the next charge finds it. */
export async function cancelAtBank(ctx: Ctx, id: string) {
  const sub = await testSubscription(ctx, id);
  await sandboxHook(ctx, `/consents/${encodeURIComponent(sub.bank_consent_id)}/revoke`, {});
  await recordAuditAfter(ctx, 'subscription.test_cancel_at_bank', sub.id);
  return { subscription: presentSubscription(sub) };
}

/** As from the payer's dashboard: cancelled at once with subscription.cancelled. */
export async function cancelByPayer(ctx: Ctx, id: string) {
  const sub = await testSubscription(ctx, id);
  return { subscription: presentSubscription(await cancelSubscriptionByPayer(ctx.deps, sub.id, sub.email, ctx)) };
}

/** POST /v1/test-helpers/requests/{id}/pay on a subscription request: approve (or decline) at the sandbox bank. */
export const paySubscriptionRequest: PayHelper = async (ctx, request, body) => {
  const deps = ctx.deps;
  const bank = banksFor(deps, 'test')[0];
  if (!bank) throw new AppError('service_unavailable', 'No bank is connected, so the sandbox bank cannot be used', {});
  const started = await subscriptionCheckout(deps).start(deps, request, {
    amountCents: null,
    bankId: bank.id,
    details: detailsFromBody(body),
    channel: 'api',
  });
  if (!started.ok) throw new AppError('service_unavailable', started.message, {});
  const back = await authoriseAtBank(started.redirectUrl, body.outcome ?? 'approve', bankReturnUrl(deps));
  const outcome = await completeSubscriptionReturn(deps, {
    state: back.searchParams.get('state') ?? '',
    code: back.searchParams.get('code'),
    error: back.searchParams.get('error'),
  });
  return { subscription: outcome?.subscription ? presentSubscription(outcome.subscription) : null };
};
