import { Type } from 'typebox';
import type { App } from '../../app.ts';
import { apiKeyAuth } from '../../http/auth.ts';
import type { Deps } from '../../http/context.ts';
import { errorResponses, IdempotencyHeaders, IdParams } from '../../http/schemas.ts';
import { ListSubscriptionsQuery, SubscriptionEnvelope, SubscriptionObject } from './subscriptions.schemas.ts';
import {
  cancelSubscription, listSubscriptionsFor, pauseSubscription, resumeSubscription, retrieveSubscription,
} from './subscriptions.service.ts';

export async function registerSubscriptionRoutes(app: App, deps: Deps): Promise<void> {
  const auth = apiKeyAuth(deps);
  const tags = ['Subscriptions'];
  const params = IdParams('Subscription id (subscription_…)');

  app.get('/v1/subscriptions/:id', {
    preHandler: auth,
    schema: { tags, summary: 'Get a subscription', params, response: { 200: SubscriptionEnvelope, ...errorResponses } },
  }, async (request) => retrieveSubscription(request.ctx, request.params.id));

  app.get('/v1/subscriptions', {
    preHandler: auth,
    schema: {
      tags,
      summary: 'List subscriptions, newest first',
      querystring: ListSubscriptionsQuery,
      response: { 200: Type.Object({ subscriptions: Type.Array(SubscriptionObject), has_more: Type.Boolean() }), ...errorResponses },
    },
  }, async (request) => listSubscriptionsFor(request.ctx, request.query));

  const actions = [
    { method: 'post', action: 'pause', run: pauseSubscription, summary: 'Pause a subscription: no charges (pending retries dropped) until resumed' },
    { method: 'post', action: 'resume', run: resumeSubscription, summary: 'Resume a paused subscription: the next charge is one period from today, at the charge time' },
    { method: 'put', action: 'cancel', run: cancelSubscription, summary: 'Cancel a subscription: no further charges; the consent is revoked at the bank' },
  ] as const;
  for (const { method, action, run, summary } of actions) {
    app[method](`/v1/subscriptions/:id/${action}`, {
      preHandler: auth,
      schema: { tags, summary, params, headers: IdempotencyHeaders, response: { 200: SubscriptionEnvelope, ...errorResponses } },
    }, async (request, reply) => {
      const result = await run(request.ctx, request.params.id, request.headers['idempotency-key']);
      if (result.replayed) reply.header('idempotent-replayed', 'true');
      return reply.status(result.status).send(result.body);
    });
  }
}
