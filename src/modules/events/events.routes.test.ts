import { test, type TestContext } from 'node:test';
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import path from 'node:path';
import pino from 'pino';
import {
  apiClient,
  buildTestApp,
  createTestMerchant,
  engine,
  pgUrl,
  type ApiClient,
  type TestApp,
} from '../../../test/helpers.ts';
import { DELIVERY_POLICY, type DeliveryPolicy } from '../webhooks/retry-policy.ts';
import { startReceiver } from '../../../test/support/webhook-receiver.ts';
import { WebhookDispatcher } from '../webhooks/webhooks.dispatcher.ts';
import { transact } from '../../store/store.ts';
import { newConsentToken } from '../consents/consents.rules.ts';
import { maskSecret } from './events.builders.ts';
import { emitEvent } from './events.service.ts';

async function setup(t: TestContext, policy: DeliveryPolicy = DELIVERY_POLICY) {
  const app = await buildTestApp(t);
  const merchant = await createTestMerchant(app);
  const api = apiClient(app, merchant.testKey);
  const dispatcher = new WebhookDispatcher({
    db: app.deps.db,
    log: pino({ level: 'silent' }),
    pollMs: 20,
    policy,
    reach: { live: 'any', test: 'any' },
    secrets: app.deps.secrets,
  });
  dispatcher.start();
  t.after(() => dispatcher.stop());
  return { app, merchant, api };
}

async function newRequest(api: ApiClient, bankAccountId: string, merchantIdentifier?: string) {
  const created = await api.post('/v1/requests', {
    bank_account_id: bankAccountId,
    amount: '5.00 NZD',
    message: 'Log',
    ...(merchantIdentifier && { merchant_identifier: merchantIdentifier }),
  });
  assert.equal(created.status, 201, created.text);
  return created.body.request.id as string;
}

async function until<T>(probe: () => Promise<T | undefined>, timeoutMs = 15_000): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const value = await probe();
    if (value !== undefined) return value;
    if (Date.now() > deadline) throw new Error('condition not met in time');
    await new Promise((resolve) => setTimeout(resolve, 25));
  }
}

/** Runs the admin CLI against the test's own database. */
function cli(app: TestApp, args: string[]) {
  const env: Record<string, string> = { ...process.env, LOG_LEVEL: 'silent' } as Record<string, string>;
  if (engine === 'postgres') {
    env.DATABASE_URL = `${pgUrl}?options=-c%20search_path%3D${app.testDb.schema}`;
    app.testDb.recyclable = false;
  } else {
    delete env.DATABASE_URL;
    env.DATA_DIR = path.dirname(app.testDb.file!);
  }
  // Asynchronous, so the service in this process keeps committing while the CLI waits on the database.
  return new Promise<any>((resolve, reject) => {
    execFile(process.execPath, ['src/cli/main.ts', ...args], { env, encoding: 'utf8' }, (error, stdout, stderr) => {
      if (error) reject(new Error(`cli ${args.join(' ')} failed: ${stderr}`));
      else resolve(JSON.parse(stdout));
    });
  });
}

test('the event log lists newest first with filters and pages, and shows one event', async (t) => {
  const { merchant, api } = await setup(t);
  const first = await newRequest(api, merchant.bankAccountId);
  const second = await newRequest(api, merchant.bankAccountId);
  assert.equal((await api.delete(`/v1/requests/${first}`)).status, 200);
  const all = await api.get('/v1/events');
  assert.deepEqual(
    all.body.events.map((e: any) => [e.type, e.data.id]),
    [
      ['request.status_updated', first],
      ['request.created', second],
      ['request.created', first],
    ],
  );
  assert.equal(all.body.has_more, false);
  const byType = await api.get('/v1/events', { query: { type: 'request.created' } });
  assert.deepEqual(
    byType.body.events.map((e: any) => e.data.id),
    [second, first],
  );
  const byObject = await api.get('/v1/events', { query: { object_id: first } });
  assert.deepEqual(
    byObject.body.events.map((e: any) => e.type),
    ['request.status_updated', 'request.created'],
  );
  const page = await api.get('/v1/events', { query: { limit: '2' } });
  assert.equal(page.body.has_more, true);
  const rest = await api.get('/v1/events', { query: { limit: '2', starting_after: page.body.events[1].id } });
  assert.deepEqual(
    rest.body.events.map((e: any) => e.data.id),
    [first],
  );
  const bad = await api.get('/v1/events', { query: { type: 'nope' } });
  assert.equal(bad.status, 400);
  assert.equal(bad.body.code, 'bad_request.invalid_param.type');

  const one = await api.get(`/v1/events/${all.body.events[0].id}`);
  assert.equal(one.status, 200);
  assert.deepEqual(one.body, { event: all.body.events[0], deliveries: [], pruned_deliveries: null });
  assert.equal('version' in one.body.event, false);
  const missing = await api.get('/v1/events/event_01JD2Q8Z7M3V4K5N6P7R8S9T0V');
  assert.deepEqual(missing.body, {
    code: 'not_found.event',
    message: 'No such event: event_01JD2Q8Z7M3V4K5N6P7R8S9T0V',
    params: { id: 'event_01JD2Q8Z7M3V4K5N6P7R8S9T0V' },
  });
});

test('resend to every endpoint that takes the event, to one endpoint, and from the CLI', async (t) => {
  const { app, merchant, api } = await setup(t);
  const a = await startReceiver();
  const b = await startReceiver();
  t.after(() => Promise.all([a.close(), b.close()]));
  const hookA = (await api.post('/v1/webhooks', { url: a.url })).body.webhook;
  await api.post('/v1/webhooks', { url: b.url, events: ['request.expired'] });
  await newRequest(api, merchant.bankAccountId);
  await a.waitFor(1);
  const eventId = a.received[0].body.id;

  const again = await api.post(`/v1/events/${eventId}/resend`, {});
  assert.equal(again.status, 200, again.text);
  assert.deepEqual(
    again.body.deliveries.map((d: any) => [d.webhook_id, d.status]),
    [[hookA.id, 'pending']],
  );
  await a.waitFor(2);
  // no body at all means the same: every endpoint that takes the event
  const bare = await app.app.inject({
    method: 'POST',
    url: `/v1/events/${eventId}/resend`,
    headers: { authorization: `Bearer ${merchant.testKey}` },
  });
  assert.equal(bare.statusCode, 200, bare.body);
  assert.deepEqual(
    bare.json().deliveries.map((d: any) => [d.webhook_id, d.status]),
    [[hookA.id, 'pending']],
  );
  await a.waitFor(3);
  const toB = await api.post(`/v1/events/${eventId}/resend`, {
    webhook_id: (await api.get('/v1/webhooks')).body.webhooks[0].id,
  });
  assert.equal(toB.body.deliveries.length, 1);
  await b.waitFor(1);
  assert.equal(b.received[0].body.id, eventId, 'a named endpoint gets the event whatever its filter');
  assert.equal(b.received[0].headers['x-service-delivery-attempt'], '1');

  const unknown = await api.post(`/v1/events/${eventId}/resend`, { webhook_id: 'webhook_01JD2Q8Z7M3V4K5N6P7R8S9T0V' });
  assert.deepEqual(unknown.body, {
    code: 'not_found.webhook',
    message: 'No such webhook: webhook_01JD2Q8Z7M3V4K5N6P7R8S9T0V',
    params: { id: 'webhook_01JD2Q8Z7M3V4K5N6P7R8S9T0V' },
  });
  const liveView = await apiClient(app, merchant.liveKey).post(`/v1/events/${eventId}/resend`, {});
  assert.equal(liveView.status, 404);

  const fromCli = await cli(app, ['events', 'resend', eventId, '--json']);
  assert.deepEqual(
    fromCli.deliveries.map((d: any) => d.webhook_id),
    [hookA.id],
  );
  await a.waitFor(4);
  const detail = await until(async () => {
    const body = (await api.get(`/v1/events/${eventId}`)).body;
    return body.deliveries.every((d: any) => d.status === 'succeeded') ? body : undefined;
  });
  assert.equal(detail.deliveries.length, 5);
  assert.ok(a.received.every((r) => r.body.id === eventId));
});

test('recover re-sends what failed since a time, once', async (t) => {
  const { merchant, api, app } = await setup(t, { ...DELIVERY_POLICY, maxAttempts: 1 });
  let up = false;
  const receiver = await startReceiver(() => (up ? { status: 200 } : { status: 503 }));
  t.after(() => receiver.close());
  const hook = (await api.post('/v1/webhooks', { url: receiver.url })).body.webhook;
  const since = new Date(Date.now() - 1000).toISOString();
  await newRequest(api, merchant.bankAccountId);
  await newRequest(api, merchant.bankAccountId);
  await until(async () => {
    const events = (await api.get('/v1/events')).body.events;
    const details = await Promise.all(events.map((e: any) => api.get(`/v1/events/${e.id}`)));
    return details.every((d) => d.body.deliveries[0]?.status === 'failed') ? true : undefined;
  });
  up = true;
  const bad = await api.post(`/v1/webhooks/${hook.id}/recover`, { since: 'yesterday' });
  assert.deepEqual(bad.body, {
    code: 'bad_request.invalid_param.since',
    message: 'since must be an ISO 8601 date-time such as 2026-11-21T10:00:00.000Z',
    params: { field: 'since' },
  });
  const future = await api.post(`/v1/webhooks/${hook.id}/recover`, {
    since: new Date(Date.now() + 60_000).toISOString(),
  });
  assert.deepEqual(future.body, { deliveries: [] });
  const recovered = await api.post(`/v1/webhooks/${hook.id}/recover`, { since });
  assert.equal(recovered.status, 200, recovered.text);
  assert.equal(recovered.body.deliveries.length, 2);
  await receiver.waitFor(4);
  assert.deepEqual(
    receiver.received.slice(2).map((r) => r.headers['x-service-delivery-attempt']),
    ['1', '1'],
  );
  assert.deepEqual(
    (await api.post(`/v1/webhooks/${hook.id}/recover`, { since })).body,
    { deliveries: [] },
    'recovered deliveries are not re-sent twice',
  );
  assert.deepEqual(await cli(app, ['webhooks', 'recover', hook.id, '--since', since, '--json']), { deliveries: [] });
  // The API's date-time rule: without Z or an offset the machine's time zone would move it.
  await assert.rejects(
    cli(app, ['webhooks', 'recover', hook.id, '--since', since.replace('Z', '')]),
    /--since must be an ISO 8601 date-time with Z or an offset/,
  );
  const detail = (await api.get(`/v1/events/${receiver.received[0].body.id}`)).body;
  const [failed, resent] = detail.deliveries;
  assert.equal(failed.status, 'failed');
  assert.equal(failed.resent_by, resent.id);
});

test('the recurring token: in clear in a recovered delivery to an endpoint that existed at authorisation; masked in the API and to a later endpoint', async (t) => {
  const { merchant, api, app } = await setup(t, { ...DELIVERY_POLICY, maxAttempts: 1 });
  let up = false;
  const old = await startReceiver(() => (up ? { status: 200 } : { status: 503 }));
  const later = await startReceiver();
  t.after(() => Promise.all([old.close(), later.close()]));
  const oldHook = (await api.post('/v1/webhooks', { url: old.url })).body.webhook;
  const since = new Date(Date.now() - 1000).toISOString();
  const token = newConsentToken();
  const masked = maskSecret(token);
  assert.equal(masked, `rct_…${token.slice(-4)}`);
  const event = await transact(app.deps.db, (trx) =>
    emitEvent(
      trx,
      { userId: merchant.userId, mode: 'test' },
      'recurring_payment.authorised',
      'recurring_x',
      {
        id: 'recurring_x',
        merchant_identifier: null,
        status: 'active',
        token,
      },
      Date.now(),
      { secrets: app.deps.secrets },
    ),
  );
  const [first] = await old.waitFor(1);
  assert.equal(first.body.data.token, token, 'the first try carries it');
  await until(async () =>
    (await api.get(`/v1/events/${event.id}`)).body.deliveries[0]?.status === 'failed' ? true : undefined,
  );

  const laterHook = (await api.post('/v1/webhooks', { url: later.url })).body.webhook;
  up = true;
  assert.equal((await api.post(`/v1/webhooks/${oldHook.id}/recover`, { since })).body.deliveries.length, 1);
  const [, recovered] = await old.waitFor(2);
  assert.equal(recovered.body.data.token, token, 'the recovery carries it');
  assert.equal((await api.post(`/v1/events/${event.id}/resend`, { webhook_id: laterHook.id })).status, 200);
  const [toLater] = await later.waitFor(1);
  assert.equal(toLater.body.data.token, masked);
  assert.ok(!toLater.raw.toString('utf8').includes(token));

  for (const shown of [(await api.get('/v1/events')).text, (await api.get(`/v1/events/${event.id}`)).text]) {
    assert.ok(shown.includes(masked));
    assert.ok(!shown.includes(token), 'the events API never shows it');
  }
});
