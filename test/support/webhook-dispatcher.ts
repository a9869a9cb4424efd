import type { TestContext } from 'node:test';
import pino from 'pino';
import type { TestApp } from '../helpers.ts';
import { DELIVERY_POLICY } from '../../src/modules/webhooks/retry-policy.ts';
import { WebhookDispatcher } from '../../src/modules/webhooks/webhooks.dispatcher.ts';

/**
 * A running dispatcher for the app that makes one attempt a delivery (a failure is final at once),
 * polling every 20 ms, to any address; stopped when the test ends.
 */
export function startOneAttemptDispatcher(t: TestContext, app: TestApp): WebhookDispatcher {
  const dispatcher = new WebhookDispatcher({
    db: app.deps.db,
    log: pino({ level: 'silent' }),
    pollMs: 20,
    reach: { live: 'any', test: 'any' },
    secrets: app.deps.secrets,
    policy: { ...DELIVERY_POLICY, maxAttempts: 1 },
  });
  dispatcher.start();
  t.after(() => dispatcher.stop());
  return dispatcher;
}
