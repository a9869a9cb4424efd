import { test, type TestContext } from 'node:test';
import assert from 'node:assert/strict';
import { createHmac } from 'node:crypto';
import net from 'node:net';
import pino from 'pino';
import { sql } from 'kysely';
import {
  apiClient,
  buildTestApp,
  createTestMerchant,
  engine,
  type ApiClient,
  type TestApp,
} from '../../../test/helpers.ts';
import type { Clock } from '../../shared/time.ts';
import { backoffCeilingMs } from './retry-policy.ts';
import { startReceiver, type Receiver } from '../../../test/support/webhook-receiver.ts';
import { until } from '../../../test/support/listening.ts';
import { verifyWebhookSignature } from './verify.js';
import { WebhookDispatcher, type DispatcherOptions } from './webhooks.dispatcher.ts';

const silent = pino({ level: 'silent' });

async function setup(t: TestContext, options: Partial<DispatcherOptions> = {}) {
  const app = await buildTestApp(t);
  const merchant = await createTestMerchant(app);
  const api = apiClient(app, merchant.testKey);
  const dispatcher = new WebhookDispatcher({
    db: app.deps.db,
    log: silent,
    pollMs: 20,
    reach: { live: 'any', test: 'any' },
    secrets: app.deps.secrets,
    ...options,
  });
  dispatcher.start();
  t.after(() => dispatcher.stop());
  return { app, merchant, api, dispatcher };
}

async function addEndpoint(t: TestContext, api: ApiClient, receiver: Receiver, events?: string[]) {
  t.after(() => receiver.close());
  const created = await api.post('/v1/webhooks', { url: receiver.url, ...(events && { events }) });
  assert.equal(created.status, 201, created.text);
  return created.body.webhook as { id: string; secret: string };
}

async function createRequest(_app: TestApp, api: ApiClient, bankAccountId: string) {
  const created = await api.post('/v1/requests', {
    bank_account_id: bankAccountId,
    amount: '10.00 NZD',
    message: 'Webhook test',
  });
  assert.equal(created.status, 201, created.text);
  return created.body.request.id as string;
}

async function waitForDelivery(api: ApiClient, eventId: string, status: string, timeoutMs = 20_000) {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const detail = await api.get(`/v1/events/${eventId}`);
    const delivery = detail.body.deliveries[0];
    if (delivery?.status === status) return delivery;
    if (Date.now() > deadline) throw new Error(`delivery of ${eventId} is ${JSON.stringify(delivery)}, not ${status}`);
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
}

test('a delivery is signed as documented, carries its headers, and a 204 acknowledges it', async (t) => {
  const { app, merchant, api } = await setup(t);
  const receiver = await startReceiver(() => ({ status: 204 }));
  const endpoint = await addEndpoint(t, api, receiver);
  assert.equal(Buffer.from(endpoint.secret, 'base64').length, 32);
  const requestId = await createRequest(app, api, merchant.bankAccountId);

  const [got] = await receiver.waitFor(1);
  assert.equal(got.headers['content-type'], 'application/json');
  // The recipe of the docs, computed here independently of the service's code.
  const expected = `sha256=${createHmac('sha256', Buffer.from(endpoint.secret, 'base64')).update(got.raw).digest('hex')}`;
  assert.equal(got.headers['x-service-signature'], expected);
  assert.equal(verifyWebhookSignature(got.raw, got.headers['x-service-signature'] as string, endpoint.secret), true);
  assert.equal(
    verifyWebhookSignature(got.raw.toString().replace('request.created', 'request.expired'), expected, endpoint.secret),
    false,
  );
  assert.equal(got.headers['x-service-event-id'], got.body.id);
  assert.equal(got.headers['x-service-delivery-attempt'], '1');
  assert.equal(got.body.type, 'request.created');
  assert.equal(got.body.version, 1);
  assert.equal(got.body.data.id, requestId);

  const delivery = await waitForDelivery(api, got.body.id, 'succeeded');
  assert.equal(delivery.webhook_id, endpoint.id);
  assert.equal(delivery.attempts.length, 1);
  assert.equal(delivery.attempts[0].status_code, 204);
  assert.equal(delivery.attempts[0].error, null);
  await new Promise((resolve) => setTimeout(resolve, 400));
  assert.equal(receiver.received.length, 1, 'nothing is sent again after a 204');
});

test("on PostgreSQL a successful attempt is recorded in place: the delivery's row writes no index entry again (migration 0045)", {
  skip: engine !== 'postgres' && "in-place (heap-only) updates are PostgreSQL's; SQLite has none",
}, async (t) => {
  const { app, merchant, api } = await setup(t);
  const receiver = await startReceiver(() => ({ status: 204 }));
  await addEndpoint(t, api, receiver);
  await createRequest(app, api, merchant.bankAccountId);
  const [got] = await receiver.waitFor(1);
  await waitForDelivery(api, got.body.id, 'succeeded');
  // A backend reports its counts once it has been idle for a while (PostgreSQL 15: up to 10 s).
  let counts: { updated: string; in_place: string } | undefined;
  await until(
    'the lane to report its update',
    async () => {
      counts = (
        await sql<{ updated: string; in_place: string }>`select n_tup_upd as updated, n_tup_hot_upd as in_place
          from pg_stat_user_tables where relid = 'webhook_deliveries'::regclass`.execute(app.deps.db)
      ).rows[0];
      return Number(counts?.updated ?? 0) > 0;
    },
    30_000,
  );
  assert.equal(Number(counts?.updated), 1, 'the attempt was recorded by one update');
  assert.equal(Number(counts?.in_place), 1, 'that update wrote no index entry');
});

test('5xx replies, timeouts and reset connections are retried with growing gaps until a 2xx', async (t) => {
  const { app, merchant, api } = await setup(t, { timeoutMs: 300, random: () => 0.999 });
  const answers = [
    { status: 500, body: 'x'.repeat(3000) },
    { status: 503, body: 'busy' },
    'hang',
    'reset',
    { status: 200, body: 'ok' },
  ] as const;
  const receiver = await startReceiver((_request, index) => answers[index] ?? { status: 200 });
  await addEndpoint(t, api, receiver);
  await createRequest(app, api, merchant.bankAccountId);
  const got = await receiver.waitFor(5);
  assert.deepEqual(
    got.map((r) => r.headers['x-service-delivery-attempt']),
    ['1', '2', '3', '4', '5'],
  );
  assert.ok(
    got.every((r) => r.body.id === got[0].body.id),
    'the same event every time',
  );

  const delivery = await waitForDelivery(api, got[0].body.id, 'succeeded');
  const attempts = delivery.attempts;
  assert.deepEqual(
    attempts.map((a: any) => a.status_code),
    [500, 503, null, null, 200],
  );
  assert.equal(attempts[0].response_body, 'x'.repeat(1024), 'the first 1 kB of the reply is kept');
  assert.equal(attempts[1].response_body, 'busy');
  assert.match(attempts[2].error, /^timeout/);
  assert.ok(attempts[3].error, 'a reset connection is recorded as a network error');
  assert.equal(attempts[4].response_body, 'ok');
  const starts = attempts.map((a: any) => Date.parse(a.started_at));
  const gaps = starts.slice(1).map((start: number, i: number) => start - starts[i] - attempts[i].latency_ms);
  for (const [i, gap] of gaps.entries())
    assert.ok(gap >= backoffCeilingMs(i + 1) * 0.99 - 5, `gap ${i + 1} is ${gap} ms`);
  assert.ok(gaps[3] > gaps[2] && gaps[2] > gaps[1] && gaps[1] > gaps[0], `gaps grow: ${gaps.join(', ')}`);
});

test('refused connections are retried until the receiver comes up', async (t) => {
  const { app, merchant, api } = await setup(t, { random: () => 0 });
  const port = await new Promise<number>((resolve) => {
    const probe = net.createServer().listen(0, '127.0.0.1', () => {
      const { port } = probe.address() as net.AddressInfo;
      probe.close(() => resolve(port));
    });
  });
  const created = await api.post('/v1/webhooks', { url: `http://127.0.0.1:${port}/hook` });
  assert.equal(created.status, 201);
  await createRequest(app, api, merchant.bankAccountId);
  const event = (await api.get('/v1/events')).body.events[0];
  const deadline = Date.now() + 10_000;
  let detail: any;
  do {
    await new Promise((resolve) => setTimeout(resolve, 50));
    detail = (await api.get(`/v1/events/${event.id}`)).body.deliveries[0];
  } while ((detail?.attempts?.length ?? 0) < 2 && Date.now() < deadline);
  assert.match(detail.attempts[0].error, /ECONNREFUSED/);
  const receiver = await startReceiver(() => ({ status: 202 }), port);
  t.after(() => receiver.close());
  const [got] = await receiver.waitFor(1);
  assert.equal(got.body.id, event.id);
  const delivered = await waitForDelivery(api, event.id, 'succeeded');
  assert.ok(delivered.attempts.length >= 3);
});

// Ahead of real time, so deliveries queued at real time are due on it.
// It ticks 100 ms at every reading, so retries fall due after a few polls instead of real waits.
function manualClock(start = Date.now() + 3_600_000): Clock & { t: number } {
  const clock = { t: start, now: () => (clock.t += 100) };
  return clock;
}

test('at most 20 attempts, then the delivery is failed', async (t) => {
  const clock = manualClock();
  const { app, merchant, api } = await setup(t, { clock, random: () => 0, leaseMs: 3_600_000 });
  // Each attempt moves the clock past the next retry, so nothing waits in real time.
  const receiver = await startReceiver(() => {
    clock.t += 300;
    return { status: 500 };
  });
  await addEndpoint(t, api, receiver);
  await createRequest(app, api, merchant.bankAccountId);
  const eventId = (await receiver.waitFor(1))[0].body.id;
  const delivery = await waitForDelivery(api, eventId, 'failed');
  assert.equal(receiver.received.length, 20);
  assert.deepEqual(
    receiver.received.map((r) => Number(r.headers['x-service-delivery-attempt'])),
    Array.from({ length: 20 }, (_, i) => i + 1),
  );
  assert.equal(delivery.attempt_count, 20);
  assert.equal(delivery.attempts.length, 20);
  assert.equal(delivery.next_attempt_at, null);
  assert.ok(delivery.failed_at);
  await new Promise((resolve) => setTimeout(resolve, 200));
  assert.equal(receiver.received.length, 20);
});

test('no attempt more than 10 minutes after the first, then the delivery is failed', async (t) => {
  const clock = manualClock();
  const { app, merchant, api } = await setup(t, { clock, random: () => 0, leaseMs: 3_600_000 });
  // Every attempt "takes" four minutes: attempts at 0, 4 and 8 minutes; a fourth would be past 10.
  const receiver = await startReceiver(() => {
    clock.t += 4 * 60_000;
    return { status: 502 };
  });
  await addEndpoint(t, api, receiver);
  await createRequest(app, api, merchant.bankAccountId);
  const eventId = (await receiver.waitFor(1))[0].body.id;
  const delivery = await waitForDelivery(api, eventId, 'failed');
  assert.equal(receiver.received.length, 3);
  const first = Date.parse(delivery.attempts[0].started_at);
  for (const attempt of delivery.attempts) assert.ok(Date.parse(attempt.started_at) - first <= 10 * 60_000);
});

test('a slow endpoint does not hold up another one', async (t) => {
  const { app, merchant, api } = await setup(t, { perEndpoint: 2, timeoutMs: 3000 });
  const slow = await startReceiver(() => 'hang');
  const fast = await startReceiver(() => ({ status: 204 }));
  await addEndpoint(t, api, slow);
  await addEndpoint(t, api, fast);
  for (let i = 0; i < 10; i += 1) await createRequest(app, api, merchant.bankAccountId);
  await fast.waitFor(10, 2500);
  assert.ok(
    slow.received.length <= 2,
    `the slow endpoint has at most 2 attempts in flight, got ${slow.received.length}`,
  );
});

test('test endpoints get test events only, and a filter narrows the types', async (t) => {
  const { app, merchant, api } = await setup(t);
  const all = await startReceiver();
  const onlyUpdates = await startReceiver();
  await addEndpoint(t, api, all);
  await addEndpoint(t, api, onlyUpdates, ['request.status_updated']);
  const live = apiClient(app, merchant.liveKey);
  const liveRequest = await live.post('/v1/requests', {
    bank_account_id: merchant.bankAccountId,
    amount: '10.00 NZD',
    message: 'Live',
  });
  assert.equal(liveRequest.status, 201);
  const requestId = await createRequest(app, api, merchant.bankAccountId);
  assert.equal((await api.delete(`/v1/requests/${requestId}`)).status, 200);
  await all.waitFor(2);
  await onlyUpdates.waitFor(1);
  await new Promise((resolve) => setTimeout(resolve, 300));
  assert.deepEqual(all.received.map((r) => r.body.type).sort(), ['request.created', 'request.status_updated']);
  assert.ok(all.received.every((r) => r.body.data.id === requestId));
  assert.deepEqual(
    onlyUpdates.received.map((r) => r.body.type),
    ['request.status_updated'],
  );
  assert.equal('version' in onlyUpdates.received[0].body, false);
  const liveEvent = (await live.get('/v1/events')).body.events[0];
  assert.deepEqual((await live.get(`/v1/events/${liveEvent.id}`)).body.deliveries, []);
});
