import type { ModuleManifest } from '../manifest.ts';
import { WebhookDispatcher } from './webhooks.dispatcher.ts';
import { scheduleWebhookHealth, WEBHOOK_HEALTH_JOB, webhookHealthJob } from './webhooks.health.ts';
import { registerWebhookRoutes } from './webhooks.routes.ts';
import { sealEndpointSecrets } from './webhooks.service.ts';

/** Webhooks: endpoints, signed deliveries with retries, and the hourly health check. */
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
  sealSecrets: (trx, secrets) => sealEndpointSecrets(trx, (secret) => secrets.seal(secret)),
  start: scheduleWebhookHealth,
};
