import { inZone, localAt } from '../../../shared/zone.ts';
import { AppError, invalidParam } from '../../../shared/errors.ts';
import { EVENT_TYPES } from '../../events/events.builders.ts';
import { listEventsFor } from '../../events/events.service.ts';
import { CreateWebhookBody } from '../../webhooks/webhooks.schemas.ts';
import {
  createWebhook,
  deleteWebhook,
  listWebhooksFor,
  recentDeliveriesFor,
  recoverWebhook,
  resendEventFor,
  retrieveEvent,
  retrieveWebhook,
} from '../../webhooks/webhooks.service.ts';
import { text, texts, oneOf, cursorOf } from '../dashboard.format.ts';
import { holdForOneView, takeOneView } from '../dashboard.sessions.ts';
import { apiBodyProblem } from '../dashboard.forms.ts';
import { formOf, problemOf, type Kit, type Scope, type Signed } from '../dashboard.kit.ts';

// Webhooks and events: endpoints (created with a URL and the events to send; the secret shown
// once), each endpoint's recent deliveries with every attempt, resend and recover; events with
// their JSON body (the recurring token is stored masked) and deliveries.

const hidden = { schema: { hide: true } };

export function registerWebhookPages(scope: Scope, kit: Kit): void {
  registerEndpointList(scope, kit);
  registerEndpointCreated(scope, kit);
  registerEndpointPages(scope, kit);
  registerEventPages(scope, kit);
}

/** The endpoints, and a new one (its secret shown once). */
function registerEndpointList(scope: Scope, kit: Kit): void {
  const listPage = async (signed: Signed, values: { url?: string; events?: string[] }, error: string | null) => ({
    title: 'Webhooks',
    ...kit.layoutOf(signed, 'webhooks'),
    webhooks: (await listWebhooksFor(signed.ctx, { limit: 100 })).webhooks,
    eventTypes: EVENT_TYPES,
    values,
    error,
  });

  scope.get(
    '/dashboard/:mode/webhooks',
    hidden,
    kit.guard(async (request, reply, signed) => {
      const flash = request.query.done === 'deleted' ? 'The endpoint is deleted: nothing more is sent to it.' : null;
      return kit.render(reply, 200, 'webhooks', { ...(await listPage(signed, {}, null)), flash });
    }),
  );

  scope.post(
    '/dashboard/:mode/webhooks',
    hidden,
    kit.guard(
      async (request, reply, signed) => {
        const form = formOf(request);
        const url = text(form.url, 2100);
        const chosen = texts(form.events).filter((type) => type !== '');
        const body = { url, ...(chosen.length ? { events: chosen } : {}) };
        const again = async (message: string) =>
          kit.render(reply, 400, 'webhooks', await listPage(signed, { url, events: chosen }, message));
        const invalid = apiBodyProblem(CreateWebhookBody, body);
        if (invalid) return again(invalid.message);
        try {
          const created = await createWebhook(signed.ctx, body);
          // Post/redirect/get: the secret waits, sealed, for the one view of the page the redirect opens.
          const webhook = created.body.webhook;
          await holdForOneView(kit.deps, signed.session, { kind: 'webhook', id: webhook.id, value: webhook });
          return reply.redirect(`${signed.base}/webhooks/${webhook.id}/created`, 303);
        } catch (error) {
          const problem = problemOf(error);
          if (problem) return again(problem.message);
          throw error;
        }
      },
      { post: true },
    ),
  );
}

/** The page after an endpoint's creation: its secret, once. */
function registerEndpointCreated(scope: Scope, kit: Kit): void {
  scope.get(
    '/dashboard/:mode/webhooks/:id/created',
    hidden,
    kit.guard(async (request, reply, signed) => {
      const { webhook } = await retrieveWebhook(signed.ctx, request.params.id);
      const shown = await takeOneView(kit.deps, signed.session, 'webhook', webhook.id);
      if (!shown)
        return kit.message(
          reply,
          200,
          'The secret was already shown',
          "An endpoint's secret is shown once, on the page right after it is created, and is not shown again. To get a new one, rotate the secret on the endpoint's page.",
          signed,
          'webhooks',
        );
      // The secret is on this one page view only: it is sealed at rest and never shown again.
      return kit.render(reply, 200, 'webhook-created', {
        title: 'Webhook endpoint created',
        ...kit.layoutOf(signed, 'webhooks'),
        webhook: shown,
      });
    }),
  );
}

/** One endpoint: its recent deliveries, recovering it, deleting it. */
function registerEndpointPages(scope: Scope, kit: Kit): void {
  scope.get(
    '/dashboard/:mode/webhooks/:id',
    hidden,
    kit.guard(async (request, reply, signed) => {
      const { webhook } = await retrieveWebhook(signed.ctx, request.params.id);
      const deliveries = await recentDeliveriesFor(signed.ctx, webhook.id);
      const done = text(request.query.done);
      const flash =
        done === 'recovered'
          ? `${text(request.query.count)} failed deliveries are queued to be sent again.`
          : done === 'resent'
            ? 'The event is queued to be sent again.'
            : null;
      const dayAgo = inZone(signed.ctx.clock.now() - 86_400_000, kit.zone()).toFormat("yyyy-LL-dd'T'HH:mm");
      return kit.render(reply, 200, 'webhook', {
        title: `Webhook ${webhook.url}`,
        ...kit.layoutOf(signed, 'webhooks'),
        webhook,
        deliveries,
        flash,
        since: text(request.query.since) || dayAgo,
        error: null,
      });
    }),
  );

  scope.post(
    '/dashboard/:mode/webhooks/:id/recover',
    hidden,
    kit.guard(
      async (request, reply, signed) => {
        const raw = text(formOf(request).since, 40);
        const since = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}$/.test(raw) ? localAt(raw, kit.zone()) : null;
        try {
          if (!since?.isValid) throw invalidParam('since', 'Enter the time to recover from, as a date and time');
          const recovered = await recoverWebhook(signed.ctx, request.params.id, since.toUTC().toISO()!);
          return reply.redirect(
            `${signed.base}/webhooks/${request.params.id}?done=recovered&count=${recovered.deliveries.length}`,
            303,
          );
        } catch (error) {
          const problem = problemOf(error);
          if (!problem) throw error;
          const { webhook } = await retrieveWebhook(signed.ctx, request.params.id);
          return kit.render(reply, 400, 'webhook', {
            title: `Webhook ${webhook.url}`,
            ...kit.layoutOf(signed, 'webhooks'),
            webhook,
            deliveries: await recentDeliveriesFor(signed.ctx, webhook.id),
            since: raw,
            error: problem.message,
          });
        }
      },
      { post: true },
    ),
  );

  scope.get(
    '/dashboard/:mode/webhooks/:id/delete',
    hidden,
    kit.guard(async (request, reply, signed) => {
      const { webhook } = await retrieveWebhook(signed.ctx, request.params.id);
      return kit.render(reply, 200, 'confirm', {
        title: 'Delete this endpoint',
        ...kit.layoutOf(signed, 'webhooks'),
        heading: `Delete the endpoint ${webhook.url}?`,
        consequence:
          'Nothing more is sent to it, deliveries not yet made are cancelled, and its secret is forgotten. This cannot be undone.',
        action: `${signed.base}/webhooks/${webhook.id}/delete`,
        confirm: 'Yes, delete it',
        back: `${signed.base}/webhooks/${webhook.id}`,
      });
    }),
  );

  scope.post(
    '/dashboard/:mode/webhooks/:id/delete',
    hidden,
    kit.guard(
      async (request, reply, signed) => {
        await deleteWebhook(signed.ctx, request.params.id);
        return reply.redirect(`${signed.base}/webhooks?done=deleted`, 303);
      },
      { post: true },
    ),
  );
}

/** The events, one event with its deliveries, and sending it again. */
function registerEventPages(scope: Scope, kit: Kit): void {
  scope.get(
    '/dashboard/:mode/events',
    hidden,
    kit.guard(async (request, reply, signed) => {
      const type = oneOf(request.query.type, EVENT_TYPES);
      const objectId = text(request.query.object_id, 64);
      const after = cursorOf('event', request.query.after);
      const page = await listEventsFor(signed.ctx, {
        type: type || undefined,
        object_id: objectId || undefined,
        starting_after: after || undefined,
        limit: 25,
      });
      const filters = { type, object_id: objectId, after };
      const next = page.has_more ? page.events[page.events.length - 1].id : null;
      return kit.render(reply, 200, 'events', {
        title: 'Events',
        ...kit.layoutOf(signed, 'events'),
        events: page.events,
        eventTypes: EVENT_TYPES,
        filters,
        next,
      });
    }),
  );

  scope.get(
    '/dashboard/:mode/events/:id',
    hidden,
    kit.guard(async (request, reply, signed) => {
      const { event, deliveries } = await retrieveEvent(signed.ctx, request.params.id);
      const webhooks = (await listWebhooksFor(signed.ctx, { limit: 100 })).webhooks;
      const flash =
        request.query.done === 'resent' ? `Queued to be sent again (${text(request.query.count)} deliveries).` : null;
      return kit.render(reply, 200, 'event', {
        title: `Event ${event.id}`,
        ...kit.layoutOf(signed, 'events'),
        event,
        deliveries,
        webhooks,
        flash,
      });
    }),
  );

  scope.post(
    '/dashboard/:mode/events/:id/resend',
    hidden,
    kit.guard(
      async (request, reply, signed) => {
        const webhookId = text(formOf(request).webhook_id, 64);
        try {
          const sent = await resendEventFor(signed.ctx, request.params.id, webhookId ? { webhook_id: webhookId } : {});
          return reply.redirect(
            `${signed.base}/events/${request.params.id}?done=resent&count=${sent.deliveries.length}`,
            303,
          );
        } catch (error) {
          if (error instanceof AppError && error.status === 404) throw error;
          const problem = problemOf(error);
          if (!problem) throw error;
          return kit.message(reply, 400, 'The event was not sent again', problem.message, signed, 'events');
        }
      },
      { post: true },
    ),
  );
}
