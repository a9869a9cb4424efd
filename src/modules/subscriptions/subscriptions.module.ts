import type { ModuleManifest } from '../manifest.ts';
import { chargeSubscriptionJob, followChargesLeftInFlight } from './subscriptions.charges.ts';
import { subscriptionCheckout } from './subscriptions.checkout.ts';
import { registerSubscriptionRoutes } from './subscriptions.routes.ts';
import {
  countTestSubscriptions,
  deleteTestSubscriptions,
  holdTestSubscriptions,
  sealSubscriptionAccessTokens,
} from './subscriptions.repo.ts';
import { CHARGE_SUBSCRIPTION_JOB } from './subscriptions.schedule-jobs.ts';
import { paySubscriptionRequest } from './subscriptions.test-helpers.ts';

/** Subscriptions: charged by Tono on a schedule, with retries; paused, resumed, cancelled. */
export const subscriptionsModule: ModuleManifest = {
  name: 'subscriptions',
  routes: (app, deps) => registerSubscriptionRoutes(app, deps),
  jobs: [{ name: CHARGE_SUBSCRIPTION_JOB, handler: chargeSubscriptionJob }],
  start: followChargesLeftInFlight,
  checkout: { subscription: (deps) => subscriptionCheckout(deps) },
  payHelpers: { subscription: paySubscriptionRequest },
  sealSecrets: (trx, secrets) => sealSubscriptionAccessTokens(trx, (secret) => secrets.seal(secret)),
  testData: {
    kinds: { subscriptions: 'Subscriptions, with their charges' },
    count: async (db, userId) => ({ subscriptions: await countTestSubscriptions(db, userId) }),
    hold: holdTestSubscriptions,
    delete: async (trx, userId) => ({ subscriptions: await deleteTestSubscriptions(trx, userId) }),
  },
};
