import { test } from 'node:test';
import assert from 'node:assert/strict';
import { loadConfig } from '../../src/config.ts';
import { startReceiver } from '../support/webhook-receiver.ts';
import { apiClient, buildTestApp, createTestMerchant } from '../helpers.ts';

// Outbound connections end to end (docs/security.md): the service's own webhook dispatcher, built
// from its configuration, refuses to deliver to this machine when ALLOW_PRIVATE_TARGETS=false,
// even though it listens on loopback alone, and delivers there in test mode when the setting is
// left unset; live deliveries to this machine need ALLOW_PRIVATE_TARGETS=true.

async function firstAttempt(api: ReturnType<typeof apiClient>, eventId: string): Promise<any> {
  const deadline = Date.now() + 20_000;
  for (;;) {
    const delivery = (await api.get(`/v1/events/${eventId}`)).body.deliveries[0];
    if (delivery?.attempts?.length > 0) return delivery.attempts[0];
    if (Date.now() > deadline) throw new Error('no delivery attempt in time');
    await new Promise((resolve) => setTimeout(resolve, 25));
  }
}

const cases = [
  ['test', 'false', false],
  ['test', '', true],
  ['live', '', false],
  ['live', 'true', true],
] as const;
for (const [mode, setting, reaches] of cases) {
  test(`a ${mode} webhook to 127.0.0.1 from a service on loopback with ALLOW_PRIVATE_TARGETS=${JSON.stringify(setting)} is ${reaches ? 'delivered' : 'refused'}`, async (t) => {
    const { targetReach } = loadConfig({ HOST: '127.0.0.1', ALLOW_PRIVATE_TARGETS: setting });
    const app = await buildTestApp(t, { workers: true, targetReach });
    const merchant = await createTestMerchant(app);
    const receiver = await startReceiver();
    t.after(() => receiver.close());
    // The endpoint was made while the setting allowed it (the operator changed it since): the
    // check at connect time is what stops it. A live endpoint is https; the receiver speaks http,
    // so the live endpoint's URL is written as http here, past the API's own check.
    app.deps.config.targetReach = { live: 'any', test: 'any' };
    const api = apiClient(app, mode === 'live' ? merchant.liveKey : merchant.testKey);
    const created = await api.post('/v1/webhooks', {
      url: receiver.url.replace(/^http:/, mode === 'live' ? 'https:' : 'http:'),
      events: ['request.created'],
    });
    assert.equal(created.status, 201, created.text);
    if (mode === 'live')
      await app.deps.db
        .updateTable('webhook_endpoints')
        .set({ url: receiver.url })
        .where('id', '=', created.body.webhook.id)
        .execute();
    app.deps.config.targetReach = targetReach;

    assert.equal(
      (
        await api.post('/v1/requests', {
          bank_account_id: merchant.bankAccountId,
          amount: '5.00 NZD',
          message: 'Thing',
        })
      ).status,
      201,
    );
    const event = (await api.get('/v1/events', { query: { type: 'request.created' } })).body.events[0];
    const attempt = await firstAttempt(api, event.id);
    if (reaches) {
      assert.equal(attempt.status_code, 204);
      assert.equal(receiver.received.length, 1);
    } else {
      assert.deepEqual(
        [attempt.status_code, attempt.error],
        [null, 'ENONGLOBAL: 127.0.0.1 is not a globally routable address'],
      );
      assert.equal(receiver.received.length, 0, 'nothing reached the receiver');
    }
  });
}
