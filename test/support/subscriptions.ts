// Test fixtures: subscription requests over the API and subscriptions made straight through the
// domain (as the checkout strategy does after the bank's approval), for tests and the bench.
import assert from 'node:assert/strict';
import type { TestContext } from 'node:test';
import type { Runtime } from '../../src/runtime.ts';
import { apiClient, createTestMerchant } from '../helpers.ts';
import { listeningApp } from './banks.ts';
import { transact } from '../../src/store/store.ts';
import { findRequestById } from '../../src/modules/requests/requests.service.ts';
import { subscriptionOptionsOf } from '../../src/modules/requests/requests.present.ts';
import { clockOf } from '../../src/modules/merchants/merchants.clock.ts';
import { createSubscription } from '../../src/modules/subscriptions/subscriptions.service.ts';
import type { SubscriptionRow } from '../../src/modules/subscriptions/subscriptions.repo.ts';

type Api = { post(url: string, body?: unknown): Promise<{ status: number; body: any }> };

export async function createSubscriptionRequest(
  api: Api,
  bankAccountId: string,
  options: Record<string, unknown>,
  extra: Record<string, unknown> = {},
) {
  const created = await api.post('/v1/requests', {
    bank_account_id: bankAccountId,
    message: 'Coffee subscription',
    subscription_options: options,
    cust_info: { email: 'Payer@Example.com', first_name: 'Pat', last_name: 'Payer' },
    ...extra,
  });
  if (created.status !== 201) throw new Error(`create request: ${created.status} ${JSON.stringify(created.body)}`);
  return created.body.request as { id: string };
}

/** A subscription authorised now on its clock, with a made-up bank consent (no bank is called). */
export async function authoriseDirectly(
  runtime: Runtime,
  requestId: string,
  bank = { id: 'sandbox', consentId: 'consent-1', token: 'token-1' },
): Promise<SubscriptionRow> {
  const { deps } = runtime;
  const request = (await findRequestById(deps.db, requestId))!;
  const options = subscriptionOptionsOf(request)!;
  const clock = await clockOf(deps, request);
  return transact(deps.db, (trx) =>
    createSubscription(trx, deps, {
      request,
      options,
      email: JSON.parse(request.cust_info ?? '{}').email,
      customerId: null,
      payerDetails: request.cust_info ? JSON.parse(request.cust_info) : null,
      bankId: bank.id,
      bankConsentId: bank.consentId,
      bankAccessToken: bank.token,
      authorisedAt: clock.now(),
    }),
  );
}

/**
 * A merchant's subscriptions over the API, paid at the sandbox bank on a listening app, with its
 * test clock: what the subscription tests share.
 */
export async function subscriptionsOverApi(t: TestContext) {
  const app = await listeningApp(t);
  const merchant = await createTestMerchant(app);
  const api = apiClient(app, merchant.testKey);
  const clockNow = async () => Date.parse((await api.get('/v1/test-helpers/clock')).body.clock.now);
  const advanceTo = async (to: number) => {
    const reply = await api.post('/v1/test-helpers/clock/advance', { to: new Date(to).toISOString() });
    assert.equal(reply.status, 200, JSON.stringify(reply.body));
  };
  /** A subscription request, approved at the sandbox bank: active. */
  const subscribe = async (options: Record<string, unknown>) => {
    const request = await createSubscriptionRequest(api, merchant.bankAccountId, options);
    const paid = await api.post(`/v1/test-helpers/requests/${request.id}/pay`, {});
    assert.equal(paid.status, 200, JSON.stringify(paid.body));
    assert.equal(paid.body.subscription.status, 'active');
    return { request, sub: paid.body.subscription as { id: string } };
  };
  const get = async (id: string) => (await api.get(`/v1/subscriptions/${id}`)).body.subscription;
  const payments = async (id: string) => (await api.get(`/v1/subscriptions/${id}/payments`)).body.payments as any[];
  return { app, merchant, api, clockNow, advanceTo, subscribe, get, payments };
}
