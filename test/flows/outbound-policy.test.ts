import { test } from 'node:test';
import assert from 'node:assert/strict';
import { loadConfig } from '../../src/config.ts';
import { startReceiver } from '../../src/modules/webhooks/receiver.test-support.ts';
import { apiClient, buildTestApp, createTestMerchant } from '../helpers.ts';

// Outbound connections end to end (docs/security.md): the service's own webhook dispatcher, built
// from its configuration, refuses to deliver to this machine when ALLOW_PRIVATE_TARGETS=false,
// even though it listens on loopback alone, and delivers there when the setting is left unset.

async function firstAttempt(api: ReturnType<typeof apiClient>, eventId: string): Promise<any> {
  const deadline = Date.now() + 20_000;
  for (;;) {
    const delivery = (await api.get(`/v1/events/${eventId}`)).body.deliveries[0];
    if (delivery?.attempts?.length > 0) return delivery.attempts[0];
    if (Date.now() > deadline) throw new Error('no delivery attempt in time');
    await new Promise((resolve) => setTimeout(resolve, 25));
  }
}

for (const [setting, reaches] of [['false', false], ['', true]] as const) {
  test(`a webhook to 127.0.0.1 from a service on loopback with ALLOW_PRIVATE_TARGETS=${JSON.stringify(setting)} is ${reaches ? 'delivered' : 'refused'}`, async (t) => {
    const { allowPrivateTargets } = loadConfig({ HOST: '127.0.0.1', ALLOW_PRIVATE_TARGETS: setting });
    assert.equal(allowPrivateTargets, reaches);
    const app = await buildTestApp(t, { workers: true, allowPrivateTargets });
    const merchant = await createTestMerchant(app);
    const receiver = await startReceiver();
    t.after(() => receiver.close());
    // The endpoint was made while the setting allowed it (the operator changed it since): the
    // check at connect time is what stops it.
    app.deps.config.allowPrivateTargets = true;
    const api = apiClient(app, merchant.testKey);
    assert.equal((await api.post('/v1/webhooks', { url: receiver.url, events: ['request.created'] })).status, 201);
    app.deps.config.allowPrivateTargets = allowPrivateTargets;

    assert.equal((await api.post('/v1/requests', { bank_account_id: merchant.bankAccountId, amount: '5.00 NZD', message: 'Thing' })).status, 201);
    const event = (await api.get('/v1/events', { query: { type: 'request.created' } })).body.events[0];
    const attempt = await firstAttempt(api, event.id);
    if (reaches) {
      assert.equal(attempt.status_code, 204);
      assert.equal(receiver.received.length, 1);
    } else {
      assert.deepEqual([attempt.status_code, attempt.error], [null, 'ENONGLOBAL: 127.0.0.1 is not a globally routable address']);
      assert.equal(receiver.received.length, 0, 'nothing reached the receiver');
    }
  });
}
