import { apiKeyAuth, keyScope } from '../merchants/merchants.auth.ts';
import { errorResponses } from '../../http/schemas.ts';
import { EventFeed, EventFeedQuery, EventList, ListEventsQuery } from './events.schemas.ts';
import { eventFeedFor, listEventsFor } from './events.service.ts';
import type { Deps } from '../context.ts';
import type { App } from '../../http/app-type.ts';

export async function registerEventRoutes(app: App, deps: Deps): Promise<void> {
  const auth = apiKeyAuth(deps);
  const tags = ['Events'];

  app.get(
    '/v1/events',
    {
      onRequest: auth,
      config: { keyScope: keyScope('events') },
      schema: {
        tags,
        summary: 'List events, newest first',
        querystring: ListEventsQuery,
        response: { 200: EventList, ...errorResponses },
      },
    },
    async (request) => listEventsFor(request.ctx, request.query),
  );

  // Long-polling calls in progress, answered at once when the service starts closing (before the
  // server waits for calls in progress to end).
  const waiting = new Set<AbortController>();
  app.addHook('preClose', async () => {
    for (const controller of waiting) controller.abort();
  });
  app.get(
    '/v1/events/feed',
    {
      onRequest: auth,
      config: { keyScope: keyScope('events') },
      schema: {
        tags,
        summary: 'Follow new events (long polling)',
        description:
          'Events newer than `after`, oldest first. While there is none the call waits up to `wait` seconds for one, then answers with no events and the same cursor: call again with `after` set to the returned `cursor`. This is what `npm run cli -- listen` uses to forward test events to a local URL.',
        querystring: EventFeedQuery,
        response: { 200: EventFeed, ...errorResponses },
      },
    },
    async (request, reply) => {
      const controller = new AbortController();
      waiting.add(controller);
      const gone = () => controller.abort();
      // the response closes before it is sent when the caller hangs up
      reply.raw.once('close', gone);
      try {
        return await eventFeedFor(request.ctx, request.query, controller.signal);
      } finally {
        reply.raw.off('close', gone);
        waiting.delete(controller);
      }
    },
  );
}
