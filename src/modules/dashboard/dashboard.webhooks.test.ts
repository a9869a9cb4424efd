import { test } from 'node:test';
import assert from 'node:assert/strict';
import { Browser } from '../../../test/payer.ts';
import { dashWorld, logIn, textOf } from '../../../test/dashboard.ts';
import { startReceiver } from '../../../test/support/webhook-receiver.ts';
import { verifyWebhookSignature } from '../webhooks/verify.js';

// Webhooks, events and API keys in the dashboard over HTTP, on SQLite and PostgreSQL.
test('a webhook endpoint made in the dashboard: the secret is shown once and signs its deliveries; deliveries with attempts, resend, recover, delete', async (t) => {
  const world = await dashWorld(t);
  const [kowhai] = world.merchants;
  let failing = true;
  const receiver = await startReceiver(() =>
    failing ? { status: 500, body: 'down for <maintenance>' } : { status: 204 },
  );
  t.after(() => receiver.close());
  const browser = await logIn(world, kowhai);
  const list = await browser.request('/dashboard/test/webhooks');
  assert.match(list.text, /<label for="url">URL<\/label>/);
  const bad = await browser.request('/dashboard/test/webhooks', {
    form: { csrf: Browser.csrfOf(list.text), url: 'ftp://example.com' },
  });
  assert.equal(bad.status, 400);
  assert.match(textOf(bad.text), /url/i);
  assert.match(textOf(bad.text), /Nothing was created/);
  const posted = await browser.request('/dashboard/test/webhooks', {
    form: { csrf: Browser.csrfOf(list.text), url: receiver.url, events: 'request.created' },
  });
  // post/redirect/get: the secret is on the page the redirect opens, once
  assert.equal(posted.status, 303, posted.text);
  const createdAt = posted.headers.get('location')!;
  assert.match(createdAt, /^\/dashboard\/test\/webhooks\/webhook_[0-9A-Z]{26}\/created$/);
  const created = await browser.request(createdAt);
  assert.equal(created.status, 200, created.text);
  const secret = /id="secret" value="([^"]+)"/.exec(created.text)![1];
  assert.match(textOf(created.text), /shown this once, and never again/);
  const reloaded = await browser.request(createdAt);
  assert.ok(!reloaded.text.includes(secret), 'a reload shows it no more');
  assert.match(textOf(reloaded.text), /The secret was already shown/);
  assert.equal((await kowhai.test.get('/v1/webhooks')).body.webhooks.length, 1, 'a reload makes no second endpoint');
  const stored = await world.app.deps.db.selectFrom('dashboard_sessions').select('shown_once_sealed').execute();
  assert.ok(
    stored.every((row) => row.shown_once_sealed === null),
    'nothing held after its one view',
  );
  const endpoint = (await kowhai.test.get('/v1/webhooks')).body.webhooks[0];
  assert.deepEqual([endpoint.url, endpoint.events, endpoint.secret], [receiver.url, ['request.created'], undefined]);
  const detail = await browser.request(`/dashboard/test/webhooks/${endpoint.id}`);
  assert.ok(!detail.text.includes(secret), 'never shown again');
  assert.ok(!(await browser.request('/dashboard/test/webhooks')).text.includes(secret));

  // a delivery, signed with that secret; a failing endpoint's attempts are listed
  failing = false;
  const request = (
    await kowhai.test.post('/v1/requests', {
      bank_account_id: kowhai.bankAccountId,
      message: 'Tea',
      amount: '3.00 NZD',
    })
  ).body.request;
  const [got] = await receiver.waitFor(1);
  assert.equal(got.body.type, 'request.created');
  assert.equal(verifyWebhookSignature(got.raw, got.headers['x-service-signature'] as string, secret), true);
  failing = true;
  const eventId = got.body.id;
  const resend = await browser.request(`/dashboard/test/events/${eventId}`);
  assert.equal(resend.status, 200);
  assert.ok(resend.text.includes('&quot;request.created&quot;'), 'the JSON body');
  const resent = await browser.request(`/dashboard/test/events/${eventId}/resend`, {
    form: { csrf: Browser.csrfOf(resend.text), webhook_id: endpoint.id },
  });
  assert.equal(resent.status, 303);
  await receiver.waitFor(2);
  let page = '';
  for (let i = 0; i < 100 && !/down for &lt;maintenance&gt;/.test(page); i++) {
    page = (await browser.request(`/dashboard/test/webhooks/${endpoint.id}`)).text;
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
  assert.match(page, /down for &lt;maintenance&gt;/, 'the reply excerpt, escaped');
  assert.match(textOf(page), /500 \d+ ms/);
  assert.match(textOf(page), /succeeded 1 attempt/);

  // recover: fail the resent delivery for good, then recover since an hour ago
  await world.app.deps.db
    .updateTable('webhook_deliveries')
    .set({ status: 'failed', failed_at: Date.now(), next_attempt_at: null })
    .where('status', '=', 'pending')
    .execute();
  failing = false;
  const home = await browser.request('/dashboard/test');
  assert.match(
    textOf(home.text),
    /Webhook deliveries that need attention 1 delivery failed for good and was not recovered/,
  );
  assert.ok(home.text.includes(`/dashboard/test/webhooks/${endpoint.id}`));
  const recovered = await browser.request(`/dashboard/test/webhooks/${endpoint.id}/recover`, {
    form: { csrf: Browser.csrfOf(page), since: '2000-01-01T00:00' },
  });
  assert.equal(recovered.status, 303, recovered.text);
  assert.match(recovered.headers.get('location')!, /done=recovered&count=1$/);
  assert.match(
    textOf((await browser.request('/dashboard/test')).text),
    /need attention None/,
    'recovered deliveries need no more attention',
  );
  const badSince = await browser.request(`/dashboard/test/webhooks/${endpoint.id}/recover`, {
    form: { csrf: Browser.csrfOf(page), since: 'yesterday' },
  });
  assert.equal(badSince.status, 400);

  // delete after confirming
  const confirm = await browser.request(`/dashboard/test/webhooks/${endpoint.id}/delete`);
  assert.match(textOf(confirm.text), /Delete the endpoint .* Nothing more is sent to it/);
  const deleted = await browser.request(`/dashboard/test/webhooks/${endpoint.id}/delete`, {
    form: { csrf: Browser.csrfOf(confirm.text) },
  });
  assert.equal(deleted.status, 303);
  assert.equal((await kowhai.test.get('/v1/webhooks')).body.webhooks.length, 0);
  void request;
});

test('events list and detail: the recurring token is masked', async (t) => {
  const world = await dashWorld(t);
  const [kowhai] = world.merchants;
  const rec = await kowhai.test.post('/v1/requests', {
    bank_account_id: kowhai.bankAccountId,
    message: 'Top-ups',
    recurring_options: { period: 'weekly', max_per_period: '100.00 NZD' },
    cust_info: { email: 'pat@example.com' },
  });
  const consent = (await kowhai.test.post(`/v1/test-helpers/requests/${rec.body.request.id}/pay`, {})).body
    .recurring_consent;
  const row = await world.app.deps.db
    .selectFrom('events')
    .select(['id', 'secret_sealed'])
    .where('object_id', '=', consent.id)
    .where('type', '=', 'recurring_payment.authorised')
    .executeTakeFirstOrThrow();
  const token = world.app.deps.secrets.open(row.secret_sealed!);
  const browser = await logIn(world, kowhai);
  const list = await browser.request('/dashboard/test/events?type=recurring_payment.authorised');
  assert.ok(list.text.includes(row.id));
  const detail = await browser.request(`/dashboard/test/events/${row.id}`);
  assert.equal(detail.status, 200);
  assert.ok(!detail.text.includes(token), 'the token is never shown');
  assert.match(detail.text, /rct_…/);
});

test('an API key created in the dashboard works on the API, is shown once, and once revoked there gets 401 at once', async (t) => {
  const world = await dashWorld(t, { workers: false });
  const [kowhai] = world.merchants;
  const browser = await logIn(world, kowhai);
  await kowhai.live.get('/v1/requests');
  const list = await browser.request('/dashboard/live/api-keys');
  assert.match(textOf(list.text), /sk_live_…\S{4} live .* active/);
  assert.ok(!/never/.test(textOf(list.text)), 'the key in use shows when it was last used');
  const posted = await browser.request('/dashboard/live/api-keys', { form: { csrf: Browser.csrfOf(list.text) } });
  assert.equal(posted.status, 303);
  const createdAt = posted.headers.get('location')!;
  assert.match(createdAt, /^\/dashboard\/live\/api-keys\/key_[0-9A-Z]{26}\/created$/);
  const held = await world.app.deps.db.selectFrom('dashboard_sessions').select('shown_once_sealed').execute();
  assert.ok(
    held.some((row) => row.shown_once_sealed?.startsWith('sealed:v1:')),
    'held sealed for its one view',
  );
  const created = await browser.request(createdAt);
  assert.equal(created.status, 200);
  const key = /id="api-key" value="(sk_live_[A-Za-z0-9_-]{32})"/.exec(created.text)![1];
  assert.ok(!JSON.stringify(held).includes(key), 'never in clear in the database');
  const again = await browser.request(createdAt);
  assert.ok(!again.text.includes(key) && /The key was already shown/.test(textOf(again.text)), 'shown once');
  assert.equal((await browser.request(`/dashboard/test${createdAt.slice('/dashboard/live'.length)}`)).status, 404);
  const call = () =>
    world.app.app.inject({ method: 'GET', url: '/v1/requests', headers: { authorization: `Bearer ${key}` } });
  assert.equal((await call()).statusCode, 200);
  const after = await browser.request('/dashboard/live/api-keys');
  assert.ok(!after.text.includes(key), 'shown once');
  const keyId = [...after.text.matchAll(/api-keys\/(key_[0-9A-Z]{26})\/revoke/g)].map((m) => m[1]);
  assert.equal(keyId.length, 2);
  const rows = await world.app.deps.db.selectFrom('api_keys').select(['id', 'hint']).where('id', 'in', keyId).execute();
  const newId = rows.find((r) => r.hint.endsWith(key.slice(-4)))!.id;
  // the test list is apart, and a live key cannot be revoked from the test pages
  assert.equal((await browser.request(`/dashboard/test/api-keys/${newId}/revoke`)).status, 404);
  const confirm = await browser.request(`/dashboard/live/api-keys/${newId}/revoke`);
  assert.match(textOf(confirm.text), /Revoke the key sk_live_…/);
  assert.equal((await call()).statusCode, 200, 'asking changes nothing');
  const revoked = await browser.request(`/dashboard/live/api-keys/${newId}/revoke`, {
    form: { csrf: Browser.csrfOf(confirm.text) },
  });
  assert.equal(revoked.status, 303);
  assert.equal((await call()).statusCode, 401);
  assert.equal((await kowhai.live.get('/v1/requests')).status, 200, 'the other key still works');
});
