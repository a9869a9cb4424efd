import { test } from 'node:test';
import assert from 'node:assert/strict';
import { apiClient, buildTestApp, createTestMerchant } from '../../../test/helpers.ts';
import { startReceiver } from '../../../test/support/webhook-receiver.ts';
import { until } from '../../../test/support/listening.ts';
import { startOneAttemptDispatcher } from '../../../test/support/webhook-dispatcher.ts';

// POST /v1/webhooks/{id}/recover when it runs twice at once (docs/webhooks.md: "each once").

test('two recoveries of an endpoint at the same time re-send each failed delivery once between them', async (t) => {
  const app = await buildTestApp(t);
  const merchant = await createTestMerchant(app);
  const api = apiClient(app, merchant.testKey);
  let up = false;
  const receiver = await startReceiver(() => ({ status: up ? 204 : 503 }));
  t.after(() => receiver.close());
  startOneAttemptDispatcher(t, app);
  const hook = (await api.post('/v1/webhooks', { url: receiver.url })).body.webhook;
  const since = new Date(Date.now() - 1000).toISOString();
  const failures = 5;
  for (let i = 0; i < failures; i++)
    await api.post('/v1/requests', { bank_account_id: merchant.bankAccountId, amount: '5.00 NZD', message: `R${i}` });
  const deliveriesOfHook = () =>
    app.deps.db.selectFrom('webhook_deliveries').selectAll().where('endpoint_id', '=', hook.id).execute();
  await until('every delivery to fail', async () => {
    const deliveries = await deliveriesOfHook();
    return deliveries.length === failures && deliveries.every((delivery) => delivery.status === 'failed');
  });
  const failedIds = new Set((await deliveriesOfHook()).map((delivery) => delivery.id));

  up = true;
  const replies = await Promise.all([
    api.post(`/v1/webhooks/${hook.id}/recover`, { since }),
    api.post(`/v1/webhooks/${hook.id}/recover`, { since }),
  ]);
  for (const reply of replies) assert.equal(reply.status, 200, reply.text);
  const recovered = replies.flatMap((reply) => reply.body.deliveries.map((delivery: { id: string }) => delivery.id));
  assert.equal(recovered.length, failures, 'between them, one new delivery per failed one');
  const deliveries = await deliveriesOfHook();
  assert.deepEqual(
    deliveries
      .filter((delivery) => !failedIds.has(delivery.id))
      .map((delivery) => delivery.id)
      .sort(),
    [...recovered].sort(),
    'no other delivery was queued',
  );
  assert.deepEqual(
    deliveries
      .filter((delivery) => failedIds.has(delivery.id))
      .map((delivery) => delivery.superseded_by)
      .sort(),
    [...recovered].sort(),
    'each failed delivery points at the one new delivery that re-sent it',
  );
  await receiver.waitFor(2 * failures);
  await new Promise((resolve) => setTimeout(resolve, 200));
  assert.equal(receiver.received.length, 2 * failures, 'each event arrives once more, not twice');
});
