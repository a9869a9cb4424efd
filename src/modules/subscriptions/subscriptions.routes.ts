import { Type } from 'typebox';
import { apiKeyAuth, keyScope } from '../merchants/merchants.auth.ts';
import { errorResponses, IdempotencyHeaders, IdParams } from '../../http/schemas.ts';
import { listQueryFields } from '../../shared/pagination.ts';
import { PaymentObject } from '../payments/payments.schemas.ts';
import { listSubscriptionPayments } from './subscriptions.payments.ts';
import {
  DeclineNextBody,
  ListSubscriptionsQuery,
  SubscriptionEnvelope,
  SubscriptionObject,
} from './subscriptions.schemas.ts';
import { cancelAtBank, cancelByPayer, declineNextCharges } from './subscriptions.test-helpers.ts';
import {
  cancelSubscription,
  listSubscriptionsFor,
  pauseSubscription,
  resumeSubscription,
  retrieveSubscription,
} from './subscriptions.service.ts';
import type { Deps } from '../context.ts';
import type { App } from '../../http/app-type.ts';

export async function registerSubscriptionRoutes(app: App, deps: Deps): Promise<void> {
  registerSubscriptionReads(app, deps);
  registerSubscriptionActions(app, deps);
  registerSubscriptionTestHelpers(app, deps);
}

/** A subscription and the list of them. */
function registerSubscriptionReads(app: App, deps: Deps): void {
  const auth = apiKeyAuth(deps);
  const tags = ['Subscriptions'];
  const params = IdParams('Subscription id (subscription_…)');

  app.get(
    '/v1/subscriptions/:id',
    {
      onRequest: auth,
      config: { keyScope: keyScope('subscriptions') },
      schema: {
        tags,
        summary: 'Get a subscription',
        params,
        response: { 200: SubscriptionEnvelope, ...errorResponses },
      },
    },
    async (request) => retrieveSubscription(request.ctx, request.params.id),
  );

  app.get(
    '/v1/subscriptions',
    {
      onRequest: auth,
      config: { keyScope: keyScope('subscriptions') },
      schema: {
        tags,
        summary: 'List subscriptions, newest first',
        querystring: ListSubscriptionsQuery,
        response: {
          200: Type.Object({ subscriptions: Type.Array(SubscriptionObject), has_more: Type.Boolean() }),
          ...errorResponses,
        },
      },
    },
    async (request) => listSubscriptionsFor(request.ctx, request.query),
  );
}

/** Pausing, resuming, cancelling, and a subscription's payments. */
function registerSubscriptionActions(app: App, deps: Deps): void {
  const auth = apiKeyAuth(deps);
  const tags = ['Subscriptions'];
  const params = IdParams('Subscription id (subscription_…)');

  const actions = [
    {
      method: 'post',
      action: 'pause',
      run: pauseSubscription,
      summary: 'Pause a subscription: no charges (pending retries dropped) until resumed',
    },
    {
      method: 'post',
      action: 'resume',
      run: resumeSubscription,
      summary: 'Resume a paused subscription: the next charge is one period from today, at the charge time',
    },
    {
      method: 'put',
      action: 'cancel',
      run: cancelSubscription,
      summary: 'Cancel a subscription: no further charges; the consent is revoked at the bank',
    },
  ] as const;
  for (const { method, action, run, summary } of actions) {
    app[method](
      `/v1/subscriptions/:id/${action}`,
      {
        onRequest: auth,
        config: { keyScope: keyScope('subscriptions') },
        schema: {
          tags,
          summary,
          params,
          headers: IdempotencyHeaders,
          response: { 200: SubscriptionEnvelope, ...errorResponses },
        },
      },
      async (request, reply) => {
        const result = await run(request.ctx, request.params.id, request.headers['idempotency-key']);
        if (result.replayed) reply.header('idempotent-replayed', 'true');
        return reply.status(result.status).send(result.body);
      },
    );
  }

  const paymentsRoute = {
    onRequest: auth,
    config: { keyScope: keyScope('payments') },
    schema: {
      tags,
      summary: "A subscription's payments, newest first, each with cust_info (all of them unless limit is given)",
      params,
      querystring: Type.Object(listQueryFields('payment'), { additionalProperties: false }),
      response: {
        200: Type.Object({ payments: Type.Array(PaymentObject), has_more: Type.Boolean() }),
        ...errorResponses,
      },
    },
  };
  const listPayments = async (request: any) => listSubscriptionPayments(request.ctx, request.params.id, request.query);
  app.get('/v1/subscriptions/:id/payments', paymentsRoute, listPayments);
  app.get(
    '/subscriptions/:id/payments',
    { ...paymentsRoute, schema: { ...paymentsRoute.schema, hide: true } },
    listPayments,
  );
}

/** Test helpers: what the payer's bank or the payer does to a subscription. */
function registerSubscriptionTestHelpers(app: App, deps: Deps): void {
  const auth = apiKeyAuth(deps);
  const params = IdParams('Subscription id (subscription_…)');

  const helperTags = ['Test helpers'];
  app.post(
    '/v1/test-helpers/subscriptions/:id/decline-next',
    {
      onRequest: auth,
      config: { keyScope: keyScope('subscriptions') },
      schema: {
        tags: helperTags,
        summary: 'Make the bank refuse the next charge attempts (test keys only)',
        params,
        body: DeclineNextBody,
        response: { 200: SubscriptionEnvelope, ...errorResponses },
      },
    },
    async (request) => declineNextCharges(request.ctx, request.params.id, request.body),
  );
  app.post(
    '/v1/test-helpers/subscriptions/:id/cancel-at-bank',
    {
      onRequest: auth,
      config: { keyScope: keyScope('subscriptions') },
      schema: {
        tags: helperTags,
        summary: 'The payer revokes the consent at their bank; the next charge finds out (test keys only)',
        params,
        response: { 200: SubscriptionEnvelope, ...errorResponses },
      },
    },
    async (request) => cancelAtBank(request.ctx, request.params.id),
  );
  app.post(
    '/v1/test-helpers/subscriptions/:id/cancel-by-payer',
    {
      onRequest: auth,
      config: { keyScope: keyScope('subscriptions') },
      schema: {
        tags: helperTags,
        summary: 'The payer cancels in the customer dashboard (test keys only)',
        params,
        response: { 200: SubscriptionEnvelope, ...errorResponses },
      },
    },
    async (request) => cancelByPayer(request.ctx, request.params.id),
  );
}
