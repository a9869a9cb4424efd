import { test, type TestContext } from 'node:test';
import assert from 'node:assert/strict';
import fc from 'fast-check';
import pino from 'pino';
import { apiClient, buildTestApp, createTestMerchant, type ApiClient, type TestApp } from '../../../test/helpers.ts';
import type { Clock } from '../../shared/time.ts';
import { transact } from '../../store/store.ts';
import { startReceiver, type Received } from '../../../test/support/webhook-receiver.ts';
import { until } from '../../../test/support/listening.ts';
import { newConsentToken } from '../consents/consents.rules.ts';
import { maskSecret } from '../events/events.builders.ts';
import { emitEvent } from '../events/events.service.ts';
import { DELIVERY_POLICY } from './retry-policy.ts';
import { decodeKeyring, encodeKeyring, PREVIOUS_SECRET_KEPT_MS, rotated, signingSecrets } from './signing.ts';
import { signStandardWebhook, signWebhookBody, verifyStandardWebhook, verifyWebhookSignature } from './verify.js';
import { WebhookDispatcher } from './webhooks.dispatcher.ts';

// PATCH /v1/webhooks/{id}, POST /v1/webhooks/{id}/rotate-secret, and what they do to deliveries.

const silent = pino({ level: 'silent' });
const secretArb = fc.uint8Array({ minLength: 32, maxLength: 32 }).map((bytes) => Buffer.from(bytes).toString('base64'));

test('a keyring survives storage, and the previous secret signs only until it lapses', () => {
  fc.assert(
    fc.property(
      secretArb,
      secretArb,
      secretArb,
      fc.integer({ min: 0, max: 2 ** 45 }),
      fc.integer({ min: -2 * PREVIOUS_SECRET_KEPT_MS, max: 2 * PREVIOUS_SECRET_KEPT_MS }),
      (first, second, third, at, later) => {
        assert.deepEqual(decodeKeyring(encodeKeyring({ current: first })), { current: first });
        assert.equal(
          encodeKeyring({ current: first }),
          first,
          'an unrotated keyring is the bare secret, as stored before rotation existed',
        );
        const once = rotated({ current: first }, second, at);
        assert.deepEqual(decodeKeyring(encodeKeyring(once)), once);
        assert.deepEqual(
          signingSecrets(once, at + later),
          later < PREVIOUS_SECRET_KEPT_MS ? [second, first] : [second],
        );
        // a second rotation keeps only the secret it replaces
        assert.deepEqual(signingSecrets(rotated(once, third, at), at), [third, second]);
      },
    ),
  );
});

test('the Standard Webhooks signature matches the published test vector, and verifyStandardWebhook checks it', () => {
  const secret = 'whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw';
  const body = '{"test": 2432232314}';
  const signature = signStandardWebhook(body, 'msg_p5jXN8AQM9LWM0D4loKWxJek', 1614265330, secret);
  assert.equal(signature, 'v1,g0hM9SsE+OTPJTGt/tmIKtSyZlE3uFJELVlNIOLJ1OE=');
  const headers = {
    'webhook-id': 'msg_p5jXN8AQM9LWM0D4loKWxJek',
    'webhook-timestamp': '1614265330',
    'webhook-signature': `v1,bm9wZQ== ${signature}`,
  };
  const now = 1614265330_000;
  assert.equal(verifyStandardWebhook(body, headers, secret, { now }), true);
  assert.equal(verifyStandardWebhook(body, new Headers(headers), secret, { now }), true);
  assert.equal(verifyStandardWebhook(`${body} `, headers, secret, { now }), false);
  assert.equal(verifyStandardWebhook(body, { ...headers, 'webhook-id': 'msg_other' }, secret, { now }), false);
  assert.equal(
    verifyStandardWebhook(body, headers, secret, { now: now + 301_000 }),
    false,
    'a replay five minutes later is refused',
  );
  assert.equal(verifyStandardWebhook(body, headers, secret, { now: now - 301_000 }), false);
  assert.equal(verifyStandardWebhook(body, { ...headers, 'webhook-timestamp': undefined }, secret, { now }), false);
});

test('X-Service-Signature may carry two signatures; either verifies, and nothing else does', () => {
  fc.assert(
    fc.property(fc.uint8Array({ maxLength: 256 }), secretArb, secretArb, (body, current, previous) => {
      const header = `${signWebhookBody(body, current)}, ${signWebhookBody(body, previous)}`;
      assert.equal(verifyWebhookSignature(body, header, current), true);
      assert.equal(verifyWebhookSignature(body, header, previous), true);
      assert.equal(verifyWebhookSignature(Buffer.concat([body, Buffer.from('x')]), header, current), false);
      const other = Buffer.alloc(32, 7).toString('base64');
      if (other !== current && other !== previous) assert.equal(verifyWebhookSignature(body, header, other), false);
    }),
  );
});

async function setup(t: TestContext, clock?: Clock) {
  const app = await buildTestApp(t);
  const merchant = await createTestMerchant(app);
  const api = apiClient(app, merchant.testKey);
  const receiver = await startReceiver();
  t.after(() => receiver.close());
  const dispatcher = new WebhookDispatcher({
    db: app.deps.db,
    log: silent,
    pollMs: 20,
    reach: { live: 'any', test: 'any' },
    secrets: app.deps.secrets,
    ...(clock && { clock }),
  });
  dispatcher.start();
  t.after(() => dispatcher.stop());
  const created = await api.post('/v1/webhooks', { url: receiver.url });
  assert.equal(created.status, 201, created.text);
  return { app, merchant, api, receiver, webhook: created.body.webhook as { id: string; secret: string } };
}

async function createRequest(api: ApiClient, bankAccountId: string): Promise<string> {
  const created = await api.post('/v1/requests', {
    bank_account_id: bankAccountId,
    amount: '10.00 NZD',
    message: 'Controls',
  });
  assert.equal(created.status, 201, created.text);
  return created.body.request.id;
}

test('PATCH changes the url, the events and disabled; a disabled endpoint gets no new deliveries', async (t) => {
  const { app, merchant, api, receiver, webhook } = await setup(t);
  const events = await api.patch(`/v1/webhooks/${webhook.id}`, { events: ['request.created'] });
  assert.equal(events.status, 200, events.text);
  assert.deepEqual(events.body.webhook.events, ['request.created']);
  assert.equal('secret' in events.body.webhook, false);

  const disabled = await api.patch(`/v1/webhooks/${webhook.id}`, { disabled: true });
  assert.equal(disabled.body.webhook.disabled, true);
  assert.equal((await api.get(`/v1/webhooks/${webhook.id}`)).body.webhook.disabled, true);
  await createRequest(api, merchant.bankAccountId);
  const quiet = (await api.get('/v1/events', { query: { type: 'request.created' } })).body.events[0];
  assert.deepEqual(
    (await api.get(`/v1/events/${quiet.id}`)).body.deliveries,
    [],
    'no delivery is queued for a disabled endpoint',
  );
  const resend = await api.post(`/v1/events/${quiet.id}/resend`, { webhook_id: webhook.id });
  assert.equal(resend.status, 409);
  assert.equal(resend.body.code, 'conflict.webhook_disabled');

  const enabled = await api.patch(`/v1/webhooks/${webhook.id}`, { disabled: false, events: null });
  assert.deepEqual([enabled.body.webhook.disabled, enabled.body.webhook.events], [false, null]);
  const requestId = await createRequest(api, merchant.bankAccountId);
  const [first] = await receiver.waitFor(1);
  assert.equal(first!.body.data.id, requestId);
  assert.equal(receiver.received.length, 1, 'the event of the disabled time was not sent');

  const moved = await api.patch(`/v1/webhooks/${webhook.id}`, { url: 'https://example.com/new-hooks' });
  assert.equal(moved.body.webhook.url, 'https://example.com/new-hooks');

  // another merchant's endpoint is a 404, and changes nothing
  const other = await createTestMerchant(app, 'Other');
  const foreign = await apiClient(app, other.testKey).patch(`/v1/webhooks/${webhook.id}`, { disabled: true });
  assert.equal(foreign.status, 404);
  assert.equal((await api.get(`/v1/webhooks/${webhook.id}`)).body.webhook.disabled, false);
});

test('PATCH refuses bad input with a clear error and changes nothing', async (t) => {
  const { api, webhook } = await setup(t);
  const before = (await api.get(`/v1/webhooks/${webhook.id}`)).body;
  const cases: Array<[unknown, string]> = [
    [{}, 'bad_request.empty_update'],
    [{ url: 'http://example.com/hook' }, 'bad_request.invalid_param.url'],
    [{ events: [] }, 'bad_request.invalid_param.events'],
    [{ events: ['payment.teleported'] }, 'bad_request.invalid_param.events'],
    [{ disabled: 'yes' }, 'bad_request.invalid_param.disabled'],
    [{ secret: 'mine' }, 'bad_request.unknown_param.secret'],
  ];
  for (const [body, code] of cases) {
    const reply = await api.patch(`/v1/webhooks/${webhook.id}`, body);
    assert.equal(reply.status, 400, JSON.stringify(body));
    assert.equal(reply.body.code, code, reply.text);
    assert.ok(reply.body.message.length > 0);
  }
  assert.deepEqual((await api.get(`/v1/webhooks/${webhook.id}`)).body, before);
  assert.equal((await api.patch('/v1/webhooks/webhook_01JD2Q8Z7M3V4K5N6P7R8S9T0V', { disabled: true })).status, 404);
});

test('rotating the secret: shown once, both secrets sign for 24 hours, then only the new one', async (t) => {
  let offset = 0;
  const clock: Clock = { now: () => Date.now() + offset };
  const { app, merchant, api, receiver, webhook } = await setup(t, clock);
  const rotatedReply = await api.post(`/v1/webhooks/${webhook.id}/rotate-secret`, undefined, {
    headers: { 'idempotency-key': 'rotate-1' },
  });
  assert.equal(rotatedReply.status, 200, rotatedReply.text);
  const fresh = rotatedReply.body.webhook.secret as string;
  assert.equal(Buffer.from(fresh, 'base64').length, 32);
  assert.notEqual(fresh, webhook.secret);
  const expires = Date.parse(rotatedReply.body.webhook.previous_secret_expires_at);
  assert.ok(Math.abs(expires - (Date.now() + PREVIOUS_SECRET_KEPT_MS)) < 60_000);
  // a retried rotation with the same key returns the same secret instead of rotating again
  const replayed = await api.post(`/v1/webhooks/${webhook.id}/rotate-secret`, undefined, {
    headers: { 'idempotency-key': 'rotate-1' },
  });
  assert.equal(replayed.body.webhook.secret, fresh);
  assert.equal(
    'secret' in (await api.get(`/v1/webhooks/${webhook.id}`)).body.webhook,
    false,
    'the new secret is not shown again',
  );
  const stored = await app.deps.db
    .selectFrom('webhook_endpoints')
    .select('secret')
    .where('id', '=', webhook.id)
    .executeTakeFirstOrThrow();
  assert.equal(stored.secret.includes(fresh) || stored.secret.includes(webhook.secret), false, 'sealed at rest');

  await createRequest(api, merchant.bankAccountId);
  const [during] = await receiver.waitFor(1);
  const signatures = String(during!.headers['x-service-signature']).split(', ');
  assert.equal(signatures.length, 2);
  assert.equal(String(during!.headers['webhook-signature']).split(' ').length, 2);
  for (const secret of [fresh, webhook.secret]) {
    assert.equal(verifyWebhookSignature(during!.raw, during!.headers['x-service-signature'] as string, secret), true);
    assert.equal(verifyStandardWebhook(during!.raw, during!.headers, secret), true);
  }
  assert.equal(during!.headers['webhook-id'], during!.body.id);

  offset = PREVIOUS_SECRET_KEPT_MS + 1000;
  await createRequest(api, merchant.bankAccountId);
  const [, after] = await receiver.waitFor(2);
  assert.equal(String(after!.headers['x-service-signature']).split(', ').length, 1);
  assert.equal(verifyWebhookSignature(after!.raw, after!.headers['x-service-signature'] as string, fresh), true);
  assert.equal(
    verifyWebhookSignature(after!.raw, after!.headers['x-service-signature'] as string, webhook.secret),
    false,
  );
  assert.equal(verifyStandardWebhook(after!.raw, after!.headers, fresh, { now: clock.now() }), true);
  assert.equal(verifyStandardWebhook(after!.raw, after!.headers, webhook.secret, { now: clock.now() }), false);

  const body = await api.post(`/v1/webhooks/${webhook.id}/rotate-secret`, { secret: 'mine' });
  assert.equal(body.status, 400);
  assert.equal(body.body.code, 'bad_request.unknown_param.secret');
  const other = await createTestMerchant(app, 'Other');
  assert.equal((await apiClient(app, other.testKey).post(`/v1/webhooks/${webhook.id}/rotate-secret`)).status, 404);
});

/** A consent authorised now: its event, with the token in clear for the endpoints that exist. */
async function authoriseConsent(app: TestApp, userId: string) {
  const token = newConsentToken();
  const event = await transact(app.deps.db, (trx) =>
    emitEvent(
      trx,
      { userId, mode: 'test' },
      'recurring_payment.authorised',
      'recurring_x',
      { id: 'recurring_x', merchant_identifier: null, status: 'active', token },
      Date.now(),
      { secrets: app.deps.secrets },
    ),
  );
  return { eventId: event.id, token };
}

test("after an endpoint's url changes, what it is sent of earlier events carries the recurring token masked: deliveries still waiting, resends and recoveries", async (t) => {
  const app = await buildTestApp(t);
  const merchant = await createTestMerchant(app);
  const api = apiClient(app, merchant.testKey);
  const original = await startReceiver(() => ({ status: 503 }));
  const moved = await startReceiver();
  const steady = await startReceiver();
  t.after(() => Promise.all([original.close(), moved.close(), steady.close()]));
  let dispatcher: WebhookDispatcher | undefined;
  t.after(() => dispatcher?.stop());
  const startDispatcher = () => {
    dispatcher = new WebhookDispatcher({
      db: app.deps.db,
      log: silent,
      pollMs: 20,
      reach: { live: 'any', test: 'any' },
      secrets: app.deps.secrets,
      policy: { ...DELIVERY_POLICY, maxAttempts: 1 },
    });
    dispatcher.start();
  };
  const hook = (await api.post('/v1/webhooks', { url: original.url })).body.webhook;
  const steadyHook = (await api.post('/v1/webhooks', { url: steady.url })).body.webhook;
  const since = new Date(Date.now() - 1000).toISOString();

  startDispatcher();
  const failed = await authoriseConsent(app, merchant.userId);
  const [firstTry] = await original.waitFor(1);
  assert.equal(firstTry.body.data.token, failed.token, 'the endpoint existed at authorisation');
  await steady.waitFor(1);
  await until('the delivery to fail', async () =>
    (await api.get(`/v1/events/${failed.eventId}`)).body.deliveries.some(
      (d: any) => d.webhook_id === hook.id && d.status === 'failed',
    ),
  );
  // The next consent's deliveries are still waiting when the url changes.
  await dispatcher!.stop();
  const waiting = await authoriseConsent(app, merchant.userId);

  assert.equal((await api.patch(`/v1/webhooks/${hook.id}`, { url: moved.url })).status, 200);
  assert.equal(
    (await api.patch(`/v1/webhooks/${steadyHook.id}`, { url: steady.url })).status,
    200,
    'the same url is no change',
  );
  startDispatcher();
  const recovered = await api.post(`/v1/webhooks/${hook.id}/recover`, { since });
  assert.equal(recovered.body.deliveries.length, 1, recovered.text);
  assert.equal((await api.post(`/v1/events/${failed.eventId}/resend`, { webhook_id: hook.id })).status, 200);
  assert.equal((await api.post(`/v1/events/${failed.eventId}/resend`, { webhook_id: steadyHook.id })).status, 200);

  const rawOf = (received: Received) => received.raw.toString('utf8');
  const toMoved = await moved.waitFor(3);
  assert.deepEqual(toMoved.map((r) => r.body.id).sort(), [failed.eventId, failed.eventId, waiting.eventId].sort());
  for (const received of toMoved) {
    const { token } = received.body.id === failed.eventId ? failed : waiting;
    assert.equal(received.body.data.token, maskSecret(token));
    assert.ok(!rawOf(received).includes(token), 'the new url never sees a token in clear');
  }
  // The endpoint whose url did not change still gets every token in clear.
  const toSteady = await steady.waitFor(3);
  assert.deepEqual(
    toSteady.map((r) => `${r.body.id} ${r.body.data.token}`).sort(),
    [failed, waiting, failed].map(({ eventId, token }) => `${eventId} ${token}`).sort(),
  );
});
