import type { FastifyReply } from 'fastify';
import { inZone, localAt } from '../../../shared/zone.ts';
import { AppError, invalidParam } from '../../../shared/errors.ts';
import { EVENT_TYPES } from '../../events/events.builders.ts';
import { listEventsFor } from '../../events/events.service.ts';
import { CreateWebhookBody } from '../../webhooks/webhooks.schemas.ts';
import {
  ACTIVITY_DAYS,
  createWebhook,
  deleteWebhook,
  deliveryStatesOf,
  endpointActivityFor,
  listWebhooksFor,
  recentDeliveriesFor,
  recoverWebhook,
  resendEventFor,
  retrieveEvent,
  retrieveWebhook,
  rotateWebhookSecret,
  updateWebhook,
} from '../../webhooks/webhooks.service.ts';
import { text, texts, oneOf, cursorOf, queryOf } from '../dashboard.format.ts';
import { holdForOneView, takeOneView } from '../dashboard.sessions.ts';
import {
  apiBodyProblem,
  formKeyOf,
  isSentBeforeWithOtherValues,
  newConfirmationKey,
  SENT_BEFORE,
} from '../dashboard.forms.ts';
import { deliveryStateLabel, failureRateText, lastDeliveryLabel, objectPathOf } from '../dashboard.present.ts';
import { formOf, problemOf, type Kit, type Scope, type Signed } from '../dashboard.kit.ts';
import { auditTrailOf } from './audit.ts';

// Webhooks and events: endpoints (created with a URL, an optional description and the events to
// send; the secret shown once, and a new one once after each rotation), listed with their status,
// last delivery and recent failures; each endpoint's recent deliveries with every attempt, resend
// and recover; events with where their delivery stands (a failed one resent from the list), their
// JSON body (the recurring token is stored masked) and deliveries.

const hidden = { schema: { hide: true } };

export function registerWebhookPages(scope: Scope, kit: Kit): void {
  registerEndpointList(scope, kit);
  registerEndpointCreated(scope, kit);
  registerEndpointPages(scope, kit);
  registerSecretRotation(scope, kit);
  registerEventPages(scope, kit);
}

type EndpointValues = { url?: string; description?: string; events?: string[] };
type FormProblem = { message: string; input: string };
/** An endpoint as held for its secret's one view: a rotation's also says until when the old secret signs. */
type HeldSecret = { id: string; url: string; secret: string; previous_secret_expires_at?: string };

/** How a confirmation names an endpoint: its description and URL, or its URL. */
const endpointName = (webhook: { url: string; description: string | null }) =>
  webhook.description ? `“${webhook.description}” (${webhook.url})` : webhook.url;

/** The endpoints with how each has been doing, for the list and the endpoint page. */
async function withActivity<T extends { id: string }>(signed: Signed, webhooks: T[]) {
  const activity = await endpointActivityFor(
    signed.ctx,
    webhooks.map((w) => w.id),
  );
  return webhooks.map((webhook) => {
    const seen = activity.get(webhook.id)!;
    return {
      ...webhook,
      lastDelivery: seen.lastDelivery && { ...seen.lastDelivery, label: lastDeliveryLabel(seen.lastDelivery.status) },
      failures: failureRateText(seen.failedAttempts, seen.attempts),
    };
  });
}

/**
 * A refusal of the create form in the form's own words, with the input to mark: the service's
 * message names the API's field, which the form calls by its label.
 */
function endpointFormProblem(problem: { message: string; field: string | null }): FormProblem {
  if (problem.field === 'description')
    return {
      input: 'description',
      message: 'The description can be at most 200 characters: shorten it, or leave it empty.',
    };
  if (problem.field === 'events')
    return { input: 'event-request-created', message: `${problem.message.replace(/^events/, 'The events to send')}.` };
  if (/url is required|must be an https URL/.test(problem.message))
    return {
      input: 'url',
      message:
        'Enter the URL to send events to: https://…, or http:// to localhost in test mode (at most 2048 characters).',
    };
  return { input: 'url', message: `${problem.message.replace(/^url\b/, 'The URL')}.` };
}

/** The endpoints, and a new one (its secret shown once). */
function registerEndpointList(scope: Scope, kit: Kit): void {
  const listPage = async (
    signed: Signed,
    values: EndpointValues,
    error: FormProblem | null,
    formKey: string = newConfirmationKey(),
  ) => ({
    title: 'Webhooks',
    ...kit.layoutOf(signed, 'webhooks'),
    webhooks: await withActivity(signed, (await listWebhooksFor(signed.ctx, { limit: 100 })).webhooks),
    activityDays: ACTIVITY_DAYS,
    eventTypes: EVENT_TYPES,
    values,
    error,
    // The create form's one-time key: a second post of it answers with the endpoint the first made.
    formKey,
  });

  scope.get(
    '/dashboard/:mode/webhooks',
    hidden,
    kit.guard(
      async (request, reply, signed) => {
        const flash = request.query.done === 'deleted' ? 'The endpoint is deleted: nothing more is sent to it.' : null;
        return kit.render(reply, 200, 'webhooks', { ...(await listPage(signed, {}, null)), flash });
      },
      { permission: 'read' },
    ),
  );

  scope.post(
    '/dashboard/:mode/webhooks',
    hidden,
    kit.guard(
      async (request, reply, signed) => {
        const form = formOf(request);
        const url = text(form.url, 2100);
        // Not cut short: a description over the limit is refused, not shortened without a word.
        const description = text(form.description, 2000);
        const chosen = texts(form.events).filter((type) => type !== '');
        const body = { url, ...(description ? { description } : {}), ...(chosen.length ? { events: chosen } : {}) };
        const key = formKeyOf(form);
        const again = async (problem: FormProblem, formKey = key ?? newConfirmationKey()) =>
          kit.render(
            reply,
            400,
            'webhooks',
            await listPage(signed, { url, description, events: chosen }, problem, formKey),
          );
        const invalid = apiBodyProblem(CreateWebhookBody, body);
        if (invalid) return again(endpointFormProblem(problemOf(invalid)!));
        try {
          const created = await createWebhook(signed.ctx, body, key ?? undefined);
          const webhook = created.body.webhook;
          // Post/redirect/get: the secret waits, sealed, for the one view of the page the redirect
          // opens. A repeat of the form (a double click) leads to the first's page, holding nothing
          // again: the secret shows there if it has not been shown yet, and never twice.
          if (!created.replayed)
            await holdForOneView(kit.deps, signed.session, { kind: 'webhook', id: webhook.id, value: webhook });
          return reply.redirect(`${signed.base}/webhooks/${webhook.id}/created`, 303);
        } catch (error) {
          if (isSentBeforeWithOtherValues(error))
            return again({ input: 'url', message: SENT_BEFORE }, newConfirmationKey());
          const problem = problemOf(error);
          if (problem) return again(endpointFormProblem(problem));
          throw error;
        }
      },
      { permission: 'webhooks.manage', post: true },
    ),
  );
}

/** The page after an endpoint's creation: its secret, once. */
function registerEndpointCreated(scope: Scope, kit: Kit): void {
  scope.get(
    '/dashboard/:mode/webhooks/:id/created',
    hidden,
    kit.guard(
      async (request, reply, signed) =>
        showSecretOnce(
          kit,
          reply,
          signed,
          request.params.id,
          "An endpoint's secret is shown once, on the page right after it is created, and is not shown again. To get a new one, use “Rotate the secret” on the endpoint's page.",
        ),
      { permission: 'webhooks.manage' },
    ),
  );
}

/**
 * The secret held for this one page view (a new endpoint's, or a rotated one's), cleared as it is
 * shown: it is sealed at rest and never shown again; afterwards `alreadyShown` says so. What the
 * secret came with says which it is, so each reads right whichever page takes it.
 */
async function showSecretOnce(kit: Kit, reply: FastifyReply, signed: Signed, id: string, alreadyShown: string) {
  const { webhook } = await retrieveWebhook(signed.ctx, id);
  const shown = (await takeOneView(kit.deps, signed.session, 'webhook', webhook.id)) as HeldSecret | null;
  if (!shown) return kit.message(reply, 200, 'The secret was already shown', alreadyShown, signed, 'webhooks');
  const oldSecretUntil = shown.previous_secret_expires_at ?? null;
  return kit.render(reply, 200, 'webhook-created', {
    title: oldSecretUntil ? 'New signing secret' : 'Webhook endpoint created',
    ...kit.layoutOf(signed, 'webhooks'),
    webhook: shown,
    oldSecretUntil,
  });
}

/** What the endpoint page shows: the endpoint with its status and recent activity, and its newest deliveries. */
async function endpointPage(kit: Kit, signed: Signed, id: string) {
  const { webhook } = await retrieveWebhook(signed.ctx, id);
  const [[shown], deliveries] = await Promise.all([
    withActivity(signed, [webhook]),
    recentDeliveriesFor(signed.ctx, webhook.id),
  ]);
  return {
    title: `Webhook ${webhook.description ?? webhook.url}`,
    ...kit.layoutOf(signed, 'webhooks'),
    webhook: shown,
    activityDays: ACTIVITY_DAYS,
    deliveries,
    audit: await auditTrailOf(signed, webhook.id),
  };
}

/** One endpoint: its recent deliveries, recovering it, deleting it. */
function registerEndpointPages(scope: Scope, kit: Kit): void {
  scope.get(
    '/dashboard/:mode/webhooks/:id',
    hidden,
    kit.guard(
      async (request, reply, signed) => {
        const done = text(request.query.done);
        const flash =
          done === 'recovered'
            ? `${text(request.query.count)} failed deliveries are queued to be sent again.`
            : done === 'resent'
              ? 'The event is queued to be sent again.'
              : done === 'enabled'
                ? 'The endpoint is enabled: new events are sent to it again. Recover what failed while it was off below.'
                : done === 'disabled'
                  ? 'The endpoint is disabled: deliveries not yet made are cancelled, and no new ones are sent.'
                  : null;
        // Deliveries run on real time, in test mode too, and recovering compares against it: a day
        // back on the test clock could be hours, or ahead of every failure.
        const dayAgo = inZone(kit.deps.clock.now() - 86_400_000, kit.zone()).toFormat("yyyy-LL-dd'T'HH:mm");
        return kit.render(reply, 200, 'webhook', {
          ...(await endpointPage(kit, signed, request.params.id)),
          flash,
          since: text(request.query.since) || dayAgo,
          error: null,
        });
      },
      { permission: 'read' },
    ),
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
          return kit.render(reply, 400, 'webhook', {
            ...(await endpointPage(kit, signed, request.params.id)),
            since: raw,
            error: problem.message,
          });
        }
      },
      { permission: 'webhooks.manage', post: true },
    ),
  );

  registerEndpointSwitch(scope, kit);

  scope.get(
    '/dashboard/:mode/webhooks/:id/delete',
    hidden,
    kit.guard(
      async (request, reply, signed) => {
        const { webhook } = await retrieveWebhook(signed.ctx, request.params.id);
        return kit.render(reply, 200, 'confirm', {
          title: 'Delete this endpoint',
          ...kit.layoutOf(signed, 'webhooks'),
          heading: `Delete the endpoint ${endpointName(webhook)}?`,
          consequence:
            'Nothing more is sent to it, deliveries not yet made are cancelled, and its secret is forgotten. This cannot be undone.',
          action: `${signed.base}/webhooks/${webhook.id}/delete`,
          confirm: 'Yes, delete it',
          back: `${signed.base}/webhooks/${webhook.id}`,
        });
      },
      { permission: 'webhooks.manage' },
    ),
  );

  scope.post(
    '/dashboard/:mode/webhooks/:id/delete',
    hidden,
    kit.guard(
      async (request, reply, signed) => {
        await deleteWebhook(signed.ctx, request.params.id);
        return reply.redirect(`${signed.base}/webhooks?done=deleted`, 303);
      },
      { permission: 'webhooks.manage', post: true },
    ),
  );
}

/** Turning an endpoint off (after confirming) and on again: the API's PATCH { disabled }. */
function registerEndpointSwitch(scope: Scope, kit: Kit): void {
  scope.get(
    '/dashboard/:mode/webhooks/:id/disable',
    hidden,
    kit.guard(
      async (request, reply, signed) => {
        const { webhook } = await retrieveWebhook(signed.ctx, request.params.id);
        return kit.render(reply, 200, 'confirm', {
          title: 'Disable this endpoint',
          ...kit.layoutOf(signed, 'webhooks'),
          heading: `Disable the endpoint ${endpointName(webhook)}?`,
          consequence:
            'Deliveries not yet made are cancelled and no new ones are queued until you enable it again; its secret is kept. Events keep being recorded, and can be recovered once it is enabled.',
          action: `${signed.base}/webhooks/${webhook.id}/disable`,
          confirm: 'Yes, disable it',
          back: `${signed.base}/webhooks/${webhook.id}`,
        });
      },
      { permission: 'webhooks.manage' },
    ),
  );

  for (const [verb, disabled] of [
    ['disable', true],
    ['enable', false],
  ] as const) {
    scope.post(
      `/dashboard/:mode/webhooks/:id/${verb}`,
      hidden,
      kit.guard(
        async (request, reply, signed) => {
          await updateWebhook(signed.ctx, request.params.id, { disabled });
          return reply.redirect(`${signed.base}/webhooks/${request.params.id}?done=${verb}d`, 303);
        },
        { permission: 'webhooks.manage', post: true },
      ),
    );
  }
}

/**
 * Rotating an endpoint's signing secret, as POST /v1/webhooks/{id}/rotate-secret does: asked first,
 * on a page of its own, then the new secret shown once as a new endpoint's is. The confirmation
 * carries a one-time key, so a double click rotates once: a second rotation within the day would
 * stop at once the secret the merchant's receivers still use.
 */
function registerSecretRotation(scope: Scope, kit: Kit): void {
  scope.get(
    '/dashboard/:mode/webhooks/:id/rotate-secret',
    hidden,
    kit.guard(
      async (request, reply, signed) => {
        const { webhook } = await retrieveWebhook(signed.ctx, request.params.id);
        return kit.render(reply, 200, 'confirm', {
          title: 'Rotate the signing secret',
          ...kit.layoutOf(signed, 'webhooks'),
          heading: `Rotate the signing secret of the endpoint ${endpointName(webhook)}?`,
          consequence:
            'Tono makes a new secret and shows it to you once. For 24 hours the old secret keeps signing beside the new one, so deliveries verify with either: put the new one in your receivers within the day. If you rotated it in the last 24 hours, the secret before the current one stops signing at once.',
          action: `${signed.base}/webhooks/${webhook.id}/rotate-secret`,
          fields: { idempotency_key: newConfirmationKey() },
          confirm: 'Yes, rotate the secret',
          confirmClass: 'primary',
          back: `${signed.base}/webhooks/${webhook.id}`,
        });
      },
      { permission: 'webhooks.manage' },
    ),
  );

  scope.post(
    '/dashboard/:mode/webhooks/:id/rotate-secret',
    hidden,
    kit.guard(
      async (request, reply, signed) => {
        try {
          const rotated = await rotateWebhookSecret(
            signed.ctx,
            request.params.id,
            formKeyOf(formOf(request)) ?? undefined,
          );
          const webhook = rotated.body.webhook;
          // As after creating: the secret waits, sealed, for the one view of the page the redirect
          // opens. A repeat of the confirmation rotated nothing more and holds nothing again.
          if (!rotated.replayed)
            await holdForOneView(kit.deps, signed.session, { kind: 'webhook', id: webhook.id, value: webhook });
          return reply.redirect(`${signed.base}/webhooks/${webhook.id}/new-secret`, 303);
        } catch (error) {
          if (!isSentBeforeWithOtherValues(error)) throw error;
          return kit.message(
            reply,
            409,
            'The secret was not rotated',
            'This confirmation was used before, for another endpoint, so nothing was rotated. Choose “Rotate the secret” on the endpoint’s page again.',
            signed,
            'webhooks',
          );
        }
      },
      { permission: 'webhooks.manage', post: true },
    ),
  );

  scope.get(
    '/dashboard/:mode/webhooks/:id/new-secret',
    hidden,
    kit.guard(
      async (request, reply, signed) =>
        showSecretOnce(
          kit,
          reply,
          signed,
          request.params.id,
          "A new secret is shown once, on the page right after the rotation, and is not shown again. To get another, rotate the secret again on the endpoint's page.",
        ),
      { permission: 'webhooks.manage' },
    ),
  );
}

/** The events list's filters, from a query or from a form that came from the list (so a resend goes back to the same page). */
function eventFiltersOf(values: Record<string, unknown>) {
  return {
    type: oneOf(values.type, EVENT_TYPES),
    object_id: text(values.object_id, 64),
    after: cursorOf('event', values.after),
  };
}

/** The events, one event with its deliveries, and sending it again. */
function registerEventPages(scope: Scope, kit: Kit): void {
  scope.get(
    '/dashboard/:mode/events',
    hidden,
    kit.guard(
      async (request, reply, signed) => {
        const filters = eventFiltersOf(request.query);
        const page = await listEventsFor(signed.ctx, {
          type: filters.type || undefined,
          object_id: filters.object_id || undefined,
          starting_after: filters.after || undefined,
          limit: 25,
        });
        const states = await deliveryStatesOf(
          signed.ctx,
          page.events.map((e) => e.id),
        );
        const resent = request.query.done === 'resent' ? cursorOf('event', request.query.event) : '';
        return kit.render(reply, 200, 'events', {
          title: 'Events',
          ...kit.layoutOf(signed, 'events'),
          events: page.events.map((event) => {
            const delivery = states.get(event.id)!;
            return { ...event, path: objectPathOf(event.data.id), delivery, label: deliveryStateLabel(delivery.state) };
          }),
          eventTypes: EVENT_TYPES,
          filters,
          next: page.has_more ? page.events[page.events.length - 1].id : null,
          flash: resent
            ? `Event ${resent} is queued to be sent again (${text(request.query.count, 4)} deliveries).`
            : null,
        });
      },
      { permission: 'read' },
    ),
  );

  scope.get(
    '/dashboard/:mode/events/:id',
    hidden,
    kit.guard(
      async (request, reply, signed) => {
        const { event, deliveries, pruned_deliveries: pruned } = await retrieveEvent(signed.ctx, request.params.id);
        const webhooks = (await listWebhooksFor(signed.ctx, { limit: 100 })).webhooks;
        const flash =
          request.query.done === 'resent' ? `Queued to be sent again (${text(request.query.count)} deliveries).` : null;
        return kit.render(reply, 200, 'event', {
          title: `Event ${event.id}`,
          ...kit.layoutOf(signed, 'events'),
          event,
          deliveries,
          pruned,
          webhooks,
          flash,
        });
      },
      { permission: 'read' },
    ),
  );

  registerEventResend(scope, kit);
}

/**
 * Sending an event again: to the endpoints the form names (the event page names one or none, the
 * events list each whose delivery failed), or with none to every endpoint that takes it. From the
 * list, back to the list with its filters.
 */
function registerEventResend(scope: Scope, kit: Kit): void {
  scope.post(
    '/dashboard/:mode/events/:id/resend',
    hidden,
    kit.guard(
      async (request, reply, signed) => {
        const form = formOf(request);
        const id = request.params.id;
        const webhookIds = [...new Set(texts(form.webhook_id).map((value) => text(value, 64)))].filter(Boolean);
        let queued = 0;
        try {
          for (const webhookId of webhookIds.length ? webhookIds.slice(0, 20) : [undefined])
            queued += (await resendEventFor(signed.ctx, id, webhookId ? { webhook_id: webhookId } : {})).deliveries
              .length;
        } catch (error) {
          if (error instanceof AppError && error.status === 404) throw error;
          const problem = problemOf(error);
          if (!problem) throw error;
          const already = queued ? ` It was queued again to the endpoints before that one (${queued} deliveries).` : '';
          return kit.message(reply, 400, 'The event was not sent again', problem.message + already, signed, 'events');
        }
        const done = { done: 'resent', count: String(queued) };
        if (text(form.back) === 'events')
          return reply.redirect(
            `${signed.base}/events${queryOf({ ...eventFiltersOf(form), ...done, event: id })}`,
            303,
          );
        return reply.redirect(`${signed.base}/events/${id}${queryOf(done)}`, 303);
      },
      { permission: 'events.resend', post: true },
    ),
  );
}
