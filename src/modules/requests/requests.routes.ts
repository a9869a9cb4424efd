import { Type } from 'typebox';
import { apiKeyAuth, keyScope } from '../merchants/merchants.auth.ts';
import { errorResponses, IdempotencyHeaders, IdParams } from '../../http/schemas.ts';
import { CreateRequestBody, ListRequestsQuery, RequestEnvelope, RequestObject } from './requests.schemas.ts';
import { createRequest, deleteRequest, listRequestsFor, retrieveRequest } from './requests.service.ts';
import type { Deps } from '../context.ts';
import type { App } from '../../http/app-type.ts';

export async function registerRequestRoutes(app: App, deps: Deps): Promise<void> {
  const auth = apiKeyAuth(deps);
  const tags = ['Requests'];
  const params = IdParams('Request id (request_…)');

  app.post(
    '/v1/requests',
    {
      onRequest: auth,
      config: { keyScope: keyScope('requests') },
      schema: {
        tags,
        summary: 'Create a payment request',
        description:
          'One-off (single or multi, fixed or payer-chosen amount), recurring (recurring_options) or subscription (subscription_options).',
        headers: IdempotencyHeaders,
        body: CreateRequestBody,
        response: { 201: RequestEnvelope, 200: RequestEnvelope, ...errorResponses },
      },
    },
    async (request, reply) => {
      const result = await createRequest(request.ctx, request.body, request.headers['idempotency-key']);
      if (result.replayed) reply.header('idempotent-replayed', 'true');
      return reply.status(result.status).send(result.body);
    },
  );

  const getOne = {
    onRequest: auth,
    config: { keyScope: keyScope('requests') },
    schema: { tags, summary: 'Get a payment request', params, response: { 200: RequestEnvelope, ...errorResponses } },
  };
  // Not async: a request read at once is sent at once (requests.service.ts, retrieveRequest).
  app.get('/v1/requests/:id', getOne, (request) => retrieveRequest(request.ctx, request.params.id));
  app.get('/requests/:id', { ...getOne, schema: { ...getOne.schema, hide: true } }, (request) =>
    retrieveRequest(request.ctx, request.params.id),
  );

  app.get(
    '/v1/requests',
    {
      onRequest: auth,
      config: { keyScope: keyScope('requests') },
      schema: {
        tags,
        summary: 'List payment requests, newest first',
        querystring: ListRequestsQuery,
        response: {
          200: Type.Object({ requests: Type.Array(RequestObject), has_more: Type.Boolean() }),
          ...errorResponses,
        },
      },
    },
    async (request) => listRequestsFor(request.ctx, request.query),
  );

  app.delete(
    '/v1/requests/:id',
    {
      onRequest: auth,
      config: { keyScope: keyScope('requests') },
      schema: {
        tags,
        summary: 'Delete a payment request (no new payments)',
        params,
        response: { 200: RequestEnvelope, ...errorResponses },
      },
    },
    async (request) => deleteRequest(request.ctx, request.params.id),
  );
}
