import type { ModuleManifest } from '../manifest.ts';
import { eventIdsOf } from '../events/events.service.ts';
import { countTestDeliveries, deleteTestDeliveries, holdTestDeliveries } from './deliveries.repo.ts';
import { WebhookDispatcher } from './webhooks.dispatcher.ts';
import { scheduleWebhookHealth, WEBHOOK_HEALTH_JOB, webhookHealthJob } from './webhooks.health.ts';
import { registerWebhookRoutes } from './webhooks.routes.ts';
import { sealWebhookSecrets } from './webhooks.service.ts';
import { fanOutToWebhooks } from './webhooks.fanout.ts';

/** Webhooks: endpoints, signed deliveries with retries, the event detail and resend, and the hourly health check. */
export const webhooksModule: ModuleManifest = {
  name: 'webhooks',
  routes: (app, deps) => registerWebhookRoutes(app, deps),
  jobs: [{ name: WEBHOOK_HEALTH_JOB, handler: webhookHealthJob }],
  runners: (deps) => [
    new WebhookDispatcher({
      db: deps.db,
      log: deps.log.child({ component: 'webhooks' }),
      reach: deps.config.targetReach,
      secrets: deps.secrets,
    }),
  ],
  sealSecrets: sealWebhookSecrets,
  // Every event is fanned out to the endpoints that take it, in the event's own transaction.
  onEvent: (db, event) => fanOutToWebhooks(db, event),
  start: scheduleWebhookHealth,
  // The endpoints are settings, and stay; what was sent to them in test mode goes.
  testData: {
    kinds: { webhook_deliveries: 'Webhook deliveries, with their attempts' },
    count: async (db, userId) => ({
      webhook_deliveries: await countTestDeliveries(db, userId, eventIdsOf(db, { userId, mode: 'test' })),
    }),
    hold: (trx, userId) => holdTestDeliveries(trx, userId, eventIdsOf(trx, { userId, mode: 'test' })),
    delete: async (trx, userId) => ({
      webhook_deliveries: await deleteTestDeliveries(trx, userId, eventIdsOf(trx, { userId, mode: 'test' })),
    }),
  },
};
