import { apiKeyAuth } from '../merchants/merchants.auth.ts';
import { errorResponses, IdParams } from '../../http/schemas.ts';
import { DeliveryList } from '../webhooks/webhooks.schemas.ts';
import { EventDetail, EventList, ListEventsQuery, ResendBody } from './events.schemas.ts';
import { listEventsFor, resendEventFor, retrieveEvent } from './events.service.ts';
import type { Deps } from '../context.ts';
import type { App } from '../../http/app-type.ts';

export async function registerEventRoutes(app: App, deps: Deps): Promise<void> {
  const auth = apiKeyAuth(deps);
  const tags = ['Events'];
  const params = IdParams('Event id (event_…)');

  app.get('/v1/events', {
    onRequest: auth,
    schema: { tags, summary: 'List events, newest first', querystring: ListEventsQuery, response: { 200: EventList, ...errorResponses } },
  }, async (request) => listEventsFor(request.ctx, request.query));

  app.get('/v1/events/:id', {
    onRequest: auth,
    schema: { tags, summary: 'Get an event with its webhook deliveries and every attempt', params, response: { 200: EventDetail, ...errorResponses } },
  }, async (request) => retrieveEvent(request.ctx, request.params.id));

  app.post('/v1/events/:id/resend', {
    onRequest: auth,
    // No body is the same as {}: every endpoint that takes the event.
    config: { bodyOptional: true },
    preValidation: async (request) => {
      if (request.body === undefined) request.body = {};
    },
    schema: {
      tags,
      summary: 'Send an event again',
      description: 'To one endpoint (webhook_id) or to every endpoint whose filter takes the event; each as a new delivery with fresh attempts.',
      params,
      body: ResendBody,
      response: { 200: DeliveryList, ...errorResponses },
    },
  }, async (request) => resendEventFor(request.ctx, request.params.id, request.body ?? {}));
}
