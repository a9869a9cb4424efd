import { test } from 'node:test';
import assert from 'node:assert/strict';
import pino from 'pino';
import { apiClient, buildTestApp, createTestMerchant } from '../../../test/helpers.ts';
import { DELIVERY_POLICY } from './retry-policy.ts';
import { startReceiver } from './receiver.test-support.ts';
import { WebhookDispatcher } from './webhooks.dispatcher.ts';
import { failingEndpoints, noticeFailingEndpoints } from './webhooks.health.ts';

const HOUR = 60 * 60_000;

test('an endpoint whose deliveries have all failed for 24 hours is mailed to its merchant, once per failing streak', async (t) => {
  const app = await buildTestApp(t);
  const merchant = await createTestMerchant(app);
  const api = apiClient(app, merchant.testKey);
  let healthy = false;
  const receiver = await startReceiver(() => ({ status: healthy ? 204 : 500 }));
  t.after(() => receiver.close());
  const dispatcher = new WebhookDispatcher({ db: app.deps.db, log: pino({ level: 'silent' }), pollMs: 20, allowPrivate: true, secrets: app.deps.secrets, policy: { ...DELIVERY_POLICY, maxAttempts: 1 } });
  dispatcher.start();
  t.after(() => dispatcher.stop());
  const hook = (await api.post('/v1/webhooks', { url: receiver.url })).body.webhook;
  await api.post('/v1/requests', { bank_account_id: merchant.bankAccountId, amount: '5.00 NZD', message: 'One' });
  await receiver.waitFor(1);
  await new Promise((resolve) => setTimeout(resolve, 200));

  const now = Date.now();
  assert.deepEqual(await failingEndpoints(app.deps, now + 23 * HOUR), [], 'not yet a day');
  const failing = await failingEndpoints(app.deps, now + 25 * HOUR);
  assert.deepEqual(failing.map((f) => f.id), [hook.id]);
  assert.equal(await noticeFailingEndpoints(app.deps, now + 25 * HOUR), 1);
  assert.equal(await noticeFailingEndpoints(app.deps, now + 26 * HOUR), 0, 'once per streak');
  const mail = await app.deps.db.selectFrom('mail_messages').selectAll().where('template', '=', 'webhook_failing').execute();
  assert.equal(mail.length, 1);
  assert.equal(mail[0].to_address, (await app.deps.db.selectFrom('users').select('email').where('id', '=', merchant.userId).executeTakeFirstOrThrow()).email);
  assert.equal(mail[0].related_id, hook.id);

  // a success ends the streak
  healthy = true;
  await api.post('/v1/requests', { bank_account_id: merchant.bankAccountId, amount: '5.00 NZD', message: 'Two' });
  await receiver.waitFor(2);
  await new Promise((resolve) => setTimeout(resolve, 200));
  assert.deepEqual(await failingEndpoints(app.deps, Date.now() + 25 * HOUR), []);
});
