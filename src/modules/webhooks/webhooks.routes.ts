import { Type } from 'typebox';
import { apiKeyAuth, keyScope } from '../merchants/merchants.auth.ts';
import { errorResponses, IdempotencyHeaders, IdParams } from '../../http/schemas.ts';
import {
  CreateWebhookBody,
  DeliveryList,
  EventDetail,
  ListWebhooksQuery,
  RecoverBody,
  UpdateWebhookBody,
  WebhookEnvelope,
  WebhookObject,
} from './webhooks.schemas.ts';
import {
  createWebhook,
  deleteWebhook,
  listWebhooksFor,
  recoverWebhook,
  resendEventFor,
  retrieveEvent,
  retrieveWebhook,
  rotateWebhookSecret,
  updateWebhook,
} from './webhooks.service.ts';
import { ResendBody } from '../events/events.schemas.ts';
import type { Deps } from '../context.ts';
import type { App } from '../../http/app-type.ts';

export async function registerWebhookRoutes(app: App, deps: Deps): Promise<void> {
  registerEndpointRoutes(app, deps);
  registerEndpointActions(app, deps);
  registerEventDeliveryRoutes(app, deps);
}

/** Webhook endpoints: created, listed, read and updated. */
function registerEndpointRoutes(app: App, deps: Deps): void {
  const auth = apiKeyAuth(deps);
  const tags = ['Webhooks'];
  const params = IdParams('Webhook endpoint id (webhook_…)');

  app.post(
    '/v1/webhooks',
    {
      onRequest: auth,
      config: { keyScope: keyScope('webhooks') },
      schema: {
        tags,
        summary: 'Create a webhook endpoint',
        description:
          'The response carries `secret` (base64 of 32 random bytes) once: keep it to verify X-Service-Signature. A test key creates an endpoint that receives test-mode events only.',
        headers: IdempotencyHeaders,
        body: CreateWebhookBody,
        response: { 201: WebhookEnvelope, 200: WebhookEnvelope, ...errorResponses },
      },
    },
    async (request, reply) => {
      const result = await createWebhook(request.ctx, request.body, request.headers['idempotency-key']);
      if (result.replayed) reply.header('idempotent-replayed', 'true');
      return reply.status(result.status).send(result.body);
    },
  );

  app.get(
    '/v1/webhooks',
    {
      onRequest: auth,
      config: { keyScope: keyScope('webhooks') },
      schema: {
        tags,
        summary: 'List webhook endpoints, newest first',
        querystring: ListWebhooksQuery,
        response: {
          200: Type.Object({ webhooks: Type.Array(WebhookObject), has_more: Type.Boolean() }),
          ...errorResponses,
        },
      },
    },
    async (request) => listWebhooksFor(request.ctx, request.query),
  );

  app.get(
    '/v1/webhooks/:id',
    {
      onRequest: auth,
      config: { keyScope: keyScope('webhooks') },
      schema: {
        tags,
        summary: 'Get a webhook endpoint',
        params,
        response: { 200: WebhookEnvelope, ...errorResponses },
      },
    },
    async (request) => retrieveWebhook(request.ctx, request.params.id),
  );

  app.patch(
    '/v1/webhooks/:id',
    {
      onRequest: auth,
      config: { keyScope: keyScope('webhooks') },
      schema: {
        tags,
        summary: 'Update a webhook endpoint',
        description:
          'Changes the url, the event filter (null: every type) or `disabled`. A disabled endpoint gets no new deliveries, and the deliveries still waiting to be sent to it are cancelled; resend them after enabling it again.',
        params,
        body: UpdateWebhookBody,
        response: { 200: WebhookEnvelope, ...errorResponses },
      },
    },
    async (request) => updateWebhook(request.ctx, request.params.id, request.body),
  );
}

/** Rotating an endpoint's secret, deleting it, recovering it after it was disabled. */
function registerEndpointActions(app: App, deps: Deps): void {
  const auth = apiKeyAuth(deps);
  const tags = ['Webhooks'];
  const params = IdParams('Webhook endpoint id (webhook_…)');

  app.post(
    '/v1/webhooks/:id/rotate-secret',
    {
      onRequest: auth,
      config: { keyScope: keyScope('webhooks') },
      schema: {
        tags,
        summary: 'Rotate the signing secret of a webhook endpoint',
        description:
          'Returns the new `secret`, shown this once. For 24 hours (until `previous_secret_expires_at`) the old secret keeps signing too: each delivery carries both signatures, and either verifies.',
        headers: IdempotencyHeaders,
        params,
        response: { 200: WebhookEnvelope, ...errorResponses },
      },
    },
    async (request, reply) => {
      const result = await rotateWebhookSecret(request.ctx, request.params.id, request.headers['idempotency-key']);
      if (result.replayed) reply.header('idempotent-replayed', 'true');
      return reply.status(200).send(result.body);
    },
  );

  app.delete(
    '/v1/webhooks/:id',
    {
      onRequest: auth,
      config: { keyScope: keyScope('webhooks') },
      schema: {
        tags,
        summary: 'Delete a webhook endpoint (nothing more is sent to it)',
        params,
        response: { 200: Type.Object({ webhook: WebhookObject, deleted: Type.Boolean() }), ...errorResponses },
      },
    },
    async (request) => deleteWebhook(request.ctx, request.params.id),
  );

  app.post(
    '/v1/webhooks/:id/recover',
    {
      onRequest: auth,
      config: { keyScope: keyScope('webhooks') },
      schema: {
        tags,
        summary: 'Re-send every delivery to this endpoint that failed since a time',
        description:
          'Each failed delivery not yet recovered is queued again as a new delivery with fresh attempts. For outages longer than the 10-minute retry window.',
        params,
        body: RecoverBody,
        response: { 200: DeliveryList, ...errorResponses },
      },
    },
    async (request) => recoverWebhook(request.ctx, request.params.id, request.body.since),
  );
}

/** An event's deliveries and their resending are this module's: the events module knows nothing of webhooks. */
function registerEventDeliveryRoutes(app: App, deps: Deps): void {
  const auth = apiKeyAuth(deps);
  const eventParams = IdParams('Event id (event_…)');
  app.get(
    '/v1/events/:id',
    {
      onRequest: auth,
      config: { keyScope: keyScope('events') },
      schema: {
        tags: ['Events'],
        summary: 'Get an event with its webhook deliveries and every attempt',
        params: eventParams,
        response: { 200: EventDetail, ...errorResponses },
      },
    },
    async (request) => retrieveEvent(request.ctx, request.params.id),
  );

  app.post(
    '/v1/events/:id/resend',
    {
      onRequest: auth,
      // No body is the same as {}: every endpoint that takes the event.
      config: { bodyOptional: true, keyScope: keyScope('events') },
      preValidation: async (request) => {
        if (request.body === undefined) request.body = {};
      },
      schema: {
        tags: ['Events'],
        summary: 'Send an event again',
        description:
          'To one endpoint (webhook_id) or to every endpoint whose filter takes the event; each as a new delivery with fresh attempts.',
        params: eventParams,
        body: ResendBody,
        response: { 200: DeliveryList, ...errorResponses },
      },
    },
    async (request) => resendEventFor(request.ctx, request.params.id, request.body ?? {}),
  );
}
