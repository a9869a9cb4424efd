import { AppError } from '../../../shared/errors.ts';
import {
  cancelSubscription,
  listSubscriptionsFor,
  pauseSubscription,
  resumeSubscription,
  retrieveSubscription,
  subscriptionChargesFor,
} from '../../subscriptions/subscriptions.service.ts';
import { listSubscriptionPayments } from '../../subscriptions/subscriptions.payments.ts';
import { SubscriptionStatus } from '../../subscriptions/subscriptions.rules.ts';
import { listConsentsFor, retrieveConsent, revokeConsentByMerchant } from '../../consents/consents.service.ts';
import { ConsentStatus } from '../../consents/consents.rules.ts';
import { paymentsUnder } from '../../payments/payments.service.ts';
import { presentPayment } from '../../payments/payments.present.ts';
import { text, oneOf, cursorOf } from '../dashboard.format.ts';
import type { Kit, Scope, Signed } from '../dashboard.kit.ts';
import type { FastifyReply } from 'fastify';
import { auditTrailOf } from './audit.ts';
import { payerEmailsOf } from './payer-emails.ts';

// Subscriptions (pause, resume, cancel) and recurring consents (revoke), each action after a
// confirmation step and through the same service call as the API.

const hidden = { schema: { hide: true } };

type Action = {
  verb: string;
  label: string;
  allowedFrom: string[];
  consequence: string;
  done: string;
  run: (signed: Signed, id: string) => Promise<unknown>;
};

const subscriptionActions: Action[] = [
  {
    verb: 'pause',
    label: 'Pause',
    allowedFrom: ['active'],
    done: 'The subscription is paused: nothing is charged until you resume it.',
    consequence:
      'No charges are made while it is paused, and pending retries are dropped. subscription.paused is sent.',
    run: (signed, id) => pauseSubscription(signed.ctx, id),
  },
  {
    verb: 'resume',
    label: 'Resume',
    allowedFrom: ['paused'],
    done: 'The subscription is resumed.',
    consequence: 'The next charge is one period from today, at the usual charge time. subscription.resumed is sent.',
    run: (signed, id) => resumeSubscription(signed.ctx, id),
  },
  {
    verb: 'cancel',
    label: 'Cancel',
    allowedFrom: ['active', 'paused'],
    done: 'The subscription is cancelled: nothing more is charged.',
    consequence:
      'No further charges are made, the payer’s consent is revoked at their bank, and subscription.cancelled is sent. This cannot be undone.',
    run: (signed, id) => cancelSubscription(signed.ctx, id),
  },
];

/** An action the object's state no longer allows: 409, and nothing changed. */
function conflict(kit: Kit, reply: FastifyReply, signed: Signed, section: string, error: unknown) {
  if (error instanceof AppError && error.code === 'conflict.invalid_state') {
    return kit.message(
      reply,
      409,
      'That cannot be done now',
      `${error.message}. Nothing was changed.`,
      signed,
      section,
    );
  }
  throw error;
}

export function registerRecurringPages(scope: Scope, kit: Kit): void {
  registerSubscriptionPages(scope, kit);
  registerConsentPages(scope, kit);
}

/** Subscriptions: the list, one subscription with its charges and payments, and its actions with a confirmation step. */
function registerSubscriptionPages(scope: Scope, kit: Kit): void {
  scope.get(
    '/dashboard/:mode/subscriptions',
    hidden,
    kit.guard(
      async (request, reply, signed) => {
        const status = oneOf(request.query.status, SubscriptionStatus);
        const after = cursorOf('subscription', request.query.after);
        const page = await listSubscriptionsFor(signed.ctx, {
          status: status || undefined,
          starting_after: after || undefined,
          limit: 25,
        });
        const next = page.has_more ? page.subscriptions[page.subscriptions.length - 1].id : null;
        return kit.render(reply, 200, 'subscriptions', {
          title: 'Subscriptions',
          ...kit.layoutOf(signed, 'subscriptions'),
          subscriptions: page.subscriptions,
          filters: { status, after },
          statuses: SubscriptionStatus,
          next,
        });
      },
      { permission: 'read' },
    ),
  );

  scope.get(
    '/dashboard/:mode/subscriptions/:id',
    hidden,
    kit.guard(
      async (request, reply, signed) => {
        const { subscription } = await retrieveSubscription(signed.ctx, request.params.id);
        const [charges, payments] = await Promise.all([
          subscriptionChargesFor(signed.ctx, subscription.id),
          listSubscriptionPayments(signed.ctx, subscription.id, { limit: 50 }),
        ]);
        const done = subscriptionActions.find((a) => a.verb === text(request.query.done));
        const actions = subscriptionActions.filter((a) => a.allowedFrom.includes(subscription.status));
        return kit.render(reply, 200, 'subscription', {
          title: `${subscription.description} (subscription of ${subscription.email})`,
          ...kit.layoutOf(signed, 'subscriptions'),
          item: subscription,
          audit: await auditTrailOf(signed, subscription.id),
          emails: await payerEmailsOf(signed, request.query, { type: 'subscription', id: subscription.id }),
          charges,
          payments: payments.payments,
          actions,
          flash: done?.done ?? null,
        });
      },
      { permission: 'read' },
    ),
  );

  for (const action of subscriptionActions) {
    scope.get(
      `/dashboard/:mode/subscriptions/:id/${action.verb}`,
      hidden,
      kit.guard(
        async (request, reply, signed) => {
          const { subscription } = await retrieveSubscription(signed.ctx, request.params.id);
          return kit.render(reply, 200, 'confirm', {
            title: `${action.label} this subscription`,
            ...kit.layoutOf(signed, 'subscriptions'),
            heading: `${action.label} “${subscription.description}”, the subscription of ${subscription.email}?`,
            consequence: action.consequence,
            action: `${signed.base}/subscriptions/${subscription.id}/${action.verb}`,
            confirm: `Yes, ${action.verb} it`,
            back: `${signed.base}/subscriptions/${subscription.id}`,
          });
        },
        { permission: 'recurring.manage' },
      ),
    );
    scope.post(
      `/dashboard/:mode/subscriptions/:id/${action.verb}`,
      hidden,
      kit.guard(
        async (request, reply, signed) => {
          const { subscription } = await retrieveSubscription(signed.ctx, request.params.id);
          try {
            await action.run(signed, subscription.id);
          } catch (error) {
            return conflict(kit, reply, signed, 'subscriptions', error);
          }
          return reply.redirect(`${signed.base}/subscriptions/${subscription.id}?done=${action.verb}`, 303);
        },
        { permission: 'recurring.manage', post: true },
      ),
    );
  }
}

/** Recurring consents: the list, one consent with its usage and payments, and revoking it. */
function registerConsentPages(scope: Scope, kit: Kit): void {
  scope.get(
    '/dashboard/:mode/recurring-consents',
    hidden,
    kit.guard(
      async (request, reply, signed) => {
        const status = oneOf(request.query.status, ConsentStatus);
        const after = cursorOf('recurring', request.query.after);
        const page = await listConsentsFor(signed.ctx, {
          status: status || undefined,
          starting_after: after || undefined,
          limit: 25,
        });
        const next = page.has_more ? page.recurring_consents[page.recurring_consents.length - 1].id : null;
        return kit.render(reply, 200, 'consents', {
          title: 'Recurring consents',
          ...kit.layoutOf(signed, 'recurring-consents'),
          consents: page.recurring_consents,
          filters: { status, after },
          statuses: ConsentStatus,
          next,
        });
      },
      { permission: 'read' },
    ),
  );

  scope.get(
    '/dashboard/:mode/recurring-consents/:id',
    hidden,
    kit.guard(
      async (request, reply, signed) => {
        const { recurring_consent: consent } = await retrieveConsent(signed.ctx, request.params.id);
        // The consent is the caller's (retrieveConsent is scoped), so its payments are too.
        const payments = {
          payments: (await paymentsUnder(signed.ctx.db, { recurringConsentId: consent.id })).map((row) =>
            presentPayment(row),
          ),
        };
        const flash =
          text(request.query.done) === 'revoked'
            ? 'The consent is revoked: no more payments can be taken with it.'
            : null;
        return kit.render(reply, 200, 'consent', {
          title: `${consent.description} (recurring consent of ${consent.email})`,
          ...kit.layoutOf(signed, 'recurring-consents'),
          item: consent,
          audit: await auditTrailOf(signed, consent.id),
          emails: await payerEmailsOf(signed, request.query, { type: 'recurring_consent', id: consent.id }),
          payments: payments.payments,
          flash,
        });
      },
      { permission: 'read' },
    ),
  );

  scope.get(
    '/dashboard/:mode/recurring-consents/:id/revoke',
    hidden,
    kit.guard(
      async (request, reply, signed) => {
        const { recurring_consent: consent } = await retrieveConsent(signed.ctx, request.params.id);
        return kit.render(reply, 200, 'confirm', {
          title: 'Revoke this consent',
          ...kit.layoutOf(signed, 'recurring-consents'),
          heading: `Revoke “${consent.description}”, the recurring consent of ${consent.email}?`,
          consequence:
            'No more payments can be taken with it, it is revoked at the payer’s bank too, and recurring_payment.revoked is sent. This cannot be undone.',
          action: `${signed.base}/recurring-consents/${consent.id}/revoke`,
          confirm: 'Yes, revoke it',
          back: `${signed.base}/recurring-consents/${consent.id}`,
        });
      },
      { permission: 'recurring.manage' },
    ),
  );

  scope.post(
    '/dashboard/:mode/recurring-consents/:id/revoke',
    hidden,
    kit.guard(
      async (request, reply, signed) => {
        try {
          await revokeConsentByMerchant(signed.ctx, request.params.id);
        } catch (error) {
          if (error instanceof AppError && error.status === 404) throw error;
          return conflict(kit, reply, signed, 'recurring-consents', error);
        }
        return reply.redirect(`${signed.base}/recurring-consents/${request.params.id}?done=revoked`, 303);
      },
      { permission: 'recurring.manage', post: true },
    ),
  );
}
