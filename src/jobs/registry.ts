import type { JobHandler } from './worker.ts';
import { EXPIRE_REQUEST_JOB, expireRequestJob } from '../modules/requests/requests.service.ts';
import { paymentJobHandlers } from '../modules/payments/payments.jobs.ts';
import { chargeSubscriptionJob } from '../modules/subscriptions/subscriptions.charges.ts';
import { CHARGE_SUBSCRIPTION_JOB } from '../modules/subscriptions/subscriptions.schedule-jobs.ts';
import { WEBHOOK_DELIVERY_JOB } from '../modules/webhooks/deliveries.repo.ts';
import { consentJobHandlers } from '../modules/consents/consents.service.ts';
import { createMailSender, SEND_MAIL_JOB, sendMailJob } from '../modules/mail/mail.service.ts';
import { WEBHOOK_HEALTH_JOB, webhookHealthJob } from '../modules/webhooks/webhooks.health.ts';
import type { Deps } from '../modules/context.ts';

/** Every job kind and the module handler that runs it; handlers that need services close over deps. */
export function jobHandlers(deps: Deps): Record<string, JobHandler> {
  return {
    [EXPIRE_REQUEST_JOB]: expireRequestJob,
    ...paymentJobHandlers(deps),
    ...consentJobHandlers(deps),
    [CHARGE_SUBSCRIPTION_JOB]: chargeSubscriptionJob(deps),
    [WEBHOOK_HEALTH_JOB]: webhookHealthJob(deps),
    [SEND_MAIL_JOB]: sendMailJob(deps, createMailSender(deps.config, deps.log.child({ component: 'mail' }))),
  };
}

/** Job kinds with a dispatcher of their own (webhooks.dispatcher.ts); the generic Worker skips them. */
export const DISPATCHED_JOB_KINDS = [WEBHOOK_DELIVERY_JOB];
