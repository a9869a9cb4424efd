import { test } from 'node:test';
import assert from 'node:assert/strict';
import { Browser } from '../../../test/payer.ts';
import { addMember, dashWorld, logIn, logInAs, objectsOf, textOf } from '../../../test/dashboard.ts';
import { inZone } from '../../shared/zone.ts';
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
  assert.match(
    textOf(reloaded.text),
    /The secret was already shown .* To get a new one, use “Rotate the secret” on the endpoint's page\./,
  );
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
  assert.match(textOf(list.text), /First live key sk_live_…\S{4} Full access .* active/);
  assert.ok(!/never/.test(textOf(list.text)), 'the key in use shows when it was last used');
  const posted = await browser.request('/dashboard/live/api-keys', {
    form: { csrf: Browser.csrfOf(list.text), name: 'Till', access: 'full' },
  });
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

/** A page's table row of an object (by an id in it), its text and its HTML. */
function rowOf(html: string, id: string): { text: string; html: string } {
  const row = html.split('<tr>').find((r) => r.includes(`>${id}<`));
  assert.ok(row, `a row of ${id}`);
  return { html: row, text: textOf(row) };
}

/** Sets how a delivery stands, as the sender would have left it. */
async function setDelivery(
  world: Awaited<ReturnType<typeof dashWorld>>,
  eventId: string,
  state: { status: 'pending' | 'succeeded' | 'failed'; attempts: number; at: number },
) {
  await world.app.deps.db
    .updateTable('webhook_deliveries')
    .set({
      status: state.status,
      attempts: state.attempts,
      created_at: state.at,
      first_attempt_at: state.attempts ? state.at : null,
      last_attempt_at: state.attempts ? state.at : null,
      next_attempt_at: state.status === 'pending' ? state.at + 60_000 : null,
      failed_at: state.status === 'failed' ? state.at : null,
      succeeded_at: state.status === 'succeeded' ? state.at : null,
    })
    .where('event_id', '=', eventId)
    .execute();
}

test('endpoints show their description, status, last delivery and failures over 7 days; the form refuses a long description in its own words', async (t) => {
  const world = await dashWorld(t, { workers: false });
  const [kowhai, tui] = world.merchants;
  const browser = await logIn(world, kowhai);
  const url = 'https://example.com/hooks';
  const list = await browser.request('/dashboard/test/webhooks');
  assert.match(list.text, /<label for="description">Description <span class="hint">\(optional\)<\/span><\/label>/);
  const long = await browser.request('/dashboard/test/webhooks', {
    form: { csrf: Browser.csrfOf(list.text), url, description: 'x'.repeat(201) },
  });
  assert.equal(long.status, 400);
  assert.match(
    textOf(long.text),
    /The description can be at most 200 characters: shorten it, or leave it empty\. Nothing was created\./,
  );
  assert.match(long.text, /id="description"[^>]*aria-describedby="description-hint form-error" aria-invalid="true"/);
  assert.match(long.text, /id="url"[^>]*value="https:\/\/example\.com\/hooks"/, 'what was typed stays');
  const badUrl = await browser.request('/dashboard/test/webhooks', {
    form: { csrf: Browser.csrfOf(list.text), url: 'example.com', description: 'Shop' },
  });
  assert.equal(badUrl.status, 400);
  assert.match(textOf(badUrl.text), /Enter the URL to send events to: https:\/\/…/);
  assert.match(badUrl.text, /id="url"[^>]*aria-invalid="true"/);
  assert.equal((await kowhai.test.get('/v1/webhooks')).body.webhooks.length, 0, 'nothing created');

  const made = await browser.request('/dashboard/test/webhooks', {
    form: { csrf: Browser.csrfOf(list.text), url, description: '  <Shop> orders & more  ' },
  });
  assert.equal(made.status, 303, made.text);
  const shop = (await kowhai.test.get('/v1/webhooks')).body.webhooks[0];
  assert.equal(shop.description, '<Shop> orders & more', 'trimmed, through the same service as the API');
  const crm = (await kowhai.test.post('/v1/webhooks', { url })).body.webhook;
  await kowhai.test.patch(`/v1/webhooks/${crm.id}`, { disabled: true });

  // four deliveries to the shop's endpoint: one older than the window, then delivered, failed, retrying
  const now = world.app.deps.clock.now();
  const states = [
    { status: 'failed', attempts: 5, at: now - 8 * 86_400_000 },
    { status: 'succeeded', attempts: 1, at: now - 3000 },
    { status: 'failed', attempts: 3, at: now - 2000 },
    { status: 'pending', attempts: 2, at: now - 1000 },
  ] as const;
  for (const state of states) {
    const request = (
      await kowhai.test.post('/v1/requests', {
        bank_account_id: kowhai.bankAccountId,
        message: 'Tea',
        amount: '3.00 NZD',
      })
    ).body.request;
    const event = (await kowhai.test.get('/v1/events', { query: { object_id: request.id } })).body.events[0];
    await setDelivery(world, event.id, state);
  }

  const page = await browser.request('/dashboard/test/webhooks');
  assert.ok(page.text.includes('&lt;Shop&gt; orders &amp; more'), 'escaped');
  assert.ok(!page.text.includes('<Shop>'));
  assert.match(
    rowOf(page.text, '&lt;Shop&gt; orders &amp; more').text,
    /^ <Shop> orders & more https:\/\/example\.com\/hooks enabled retrying \d.* 5 of 6 attempts failed \(83%\) all events/,
  );
  assert.match(
    rowOf(page.text, url).text,
    /^ https:\/\/example\.com\/hooks disabled none yet no attempts all events/,
    'the other endpoint at the same URL, told apart',
  );
  const detail = textOf((await browser.request(`/dashboard/test/webhooks/${shop.id}`)).text);
  assert.match(detail, /Endpoint <Shop> orders & more/);
  assert.match(detail, /URL https:\/\/example\.com\/hooks Description <Shop> orders & more Status enabled/);
  assert.match(detail, /Last delivery retrying [^,]+, [^,]+, 2 attempts/);
  assert.match(detail, /Last 7 days 5 of 6 attempts failed \(83%\)/);
  const disabled = textOf((await browser.request(`/dashboard/test/webhooks/${crm.id}`)).text);
  assert.match(disabled, /Description none Status disabled no new deliveries are sent to it Last delivery none yet/);
  const home = textOf((await browser.request('/dashboard/test')).text);
  assert.match(home, /2 deliveries failed for good .* <Shop> orders & more event_\S+ .* <Shop> orders & more event_/);
  const stranger = await logIn(world, tui);
  assert.equal((await stranger.request(`/dashboard/test/webhooks/${shop.id}`)).status, 404);
  assert.ok(!(await stranger.request('/dashboard/test/webhooks')).text.includes('Shop'), 'not in their list');
});

test('events list: each object links to its page, Sent on one line, the delivery state with attempts; a failed one is resent from the list', async (t) => {
  const world = await dashWorld(t, { workers: false });
  const [kowhai, tui] = world.merchants;
  const o = await objectsOf(world, kowhai);
  const browser = await logIn(world, kowhai);
  for (const [type, path] of [
    ['request.created', `requests/${o.request.id}`],
    ['payment.created', `payments/${o.payment.id}`],
    ['customer.created', `customers/${o.customer.id}`],
    ['subscription.created', `subscriptions/${o.subscription.id}`],
    ['recurring_payment.authorised', `recurring-consents/${o.consent.id}`],
  ]) {
    const html = (await browser.request(`/dashboard/test/events?type=${type}`)).text;
    assert.ok(html.includes(`<a href="/dashboard/test/${path}">`), `${type} links to ${path}`);
    assert.equal((await browser.request(`/dashboard/test/${path}`)).status, 200, path);
  }
  const first = (await browser.request(`/dashboard/test/events?object_id=${o.request.id}`)).text;
  assert.match(first, /<td class="nowrap">[^<]+<\/td>/, 'Sent on one line');
  assert.match(rowOf(first, o.event.id).text, /no endpoint/, 'no endpoint took it');

  // the endpoint objectsOf made takes the events from here on: one waits, one failed, one delivered
  const events: string[] = [];
  for (let i = 0; i < 3; i++) {
    const request = (
      await kowhai.test.post('/v1/requests', {
        bank_account_id: kowhai.bankAccountId,
        message: 'Tea',
        amount: '3.00 NZD',
      })
    ).body.request;
    events.push((await kowhai.test.get('/v1/events', { query: { object_id: request.id } })).body.events[0].id);
  }
  const [waiting, failed, delivered] = events;
  const now = world.app.deps.clock.now();
  await setDelivery(world, failed, { status: 'failed', attempts: 20, at: now - 1000 });
  await setDelivery(world, delivered, { status: 'succeeded', attempts: 2, at: now - 500 });
  const list = (await browser.request('/dashboard/test/events?type=request.created')).text;
  assert.match(rowOf(list, waiting).text, /request\.created .* sending $/);
  assert.match(rowOf(list, delivered).text, /delivered 2 attempts $/);
  assert.ok(!rowOf(list, delivered).html.includes('<form'), 'nothing to resend');
  const failedRow = rowOf(list, failed);
  assert.match(failedRow.text, /failed 20 attempts Resend $/);
  assert.match(failedRow.html, new RegExp(`<button type="submit" class="small" aria-label="Resend ${failed}">`));
  const fields = Object.fromEntries(
    [...failedRow.html.matchAll(/<input type="hidden" name="([^"]+)" value="([^"]+)">/g)].map((m) => [m[1], m[2]]),
  );
  assert.deepEqual(
    { ...fields, csrf: undefined },
    { csrf: undefined, back: 'events', type: 'request.created', webhook_id: o.webhook.id },
  );
  assert.match(failedRow.html, new RegExp(`action="/dashboard/test/events/${failed}/resend"`));

  // another merchant, another merchant's endpoint, no token: 404, 404, 403, and nothing is queued
  const stranger = await logIn(world, tui);
  const strangerCsrf = Browser.csrfOf((await stranger.request('/dashboard/test/events')).text);
  const tuiHook = (await tui.test.post('/v1/webhooks', { url: 'https://example.com/tui' })).body.webhook;
  const post = (who: typeof browser, form: Record<string, string>) =>
    who.request(`/dashboard/test/events/${failed}/resend`, { form });
  assert.equal((await post(stranger, { ...fields, csrf: strangerCsrf })).status, 404);
  assert.equal((await post(browser, { ...fields, webhook_id: tuiHook.id })).status, 404);
  assert.equal((await post(browser, { ...fields, csrf: 'forged' })).status, 403);
  const count = async () =>
    (await world.app.deps.db.selectFrom('webhook_deliveries').select('id').where('event_id', '=', failed).execute())
      .length;
  assert.equal(await count(), 1);

  const resent = await post(browser, fields);
  assert.equal(resent.status, 303, resent.text);
  assert.equal(
    resent.headers.get('location'),
    `/dashboard/test/events?type=request.created&done=resent&count=1&event=${failed}`,
    'back to the list, its filter kept',
  );
  assert.equal(await count(), 2);
  const after = (await browser.request(resent.headers.get('location')!)).text;
  assert.match(textOf(after), new RegExp(`Event ${failed} is queued to be sent again \\(1 deliveries\\)`));
  assert.match(rowOf(after, failed).text, /sending 20 attempts $/, 'the new delivery waits; the old attempts count');

  // a disabled endpoint is not sent to: the message says why
  await setDelivery(world, failed, { status: 'failed', attempts: 20, at: now });
  await kowhai.test.patch(`/v1/webhooks/${o.webhook.id}`, { disabled: true });
  const refused = await post(browser, fields);
  assert.equal(refused.status, 400);
  assert.match(textOf(refused.text), /The event was not sent again .* is disabled: enable it first/);
  assert.ok(
    !rowOf((await browser.request('/dashboard/test/events?type=request.created')).text, failed).html.includes('<form'),
    'no resend offered to a disabled endpoint',
  );
});

test('an endpoint is disabled after confirming and enabled again from its page, as PATCH { disabled } does; another merchant gets 404', async (t) => {
  const world = await dashWorld(t, { workers: false });
  const [kowhai, tui] = world.merchants;
  const { webhook } = await objectsOf(world, kowhai);
  const browser = await logIn(world, kowhai);
  const base = `/dashboard/test/webhooks/${webhook.id}`;
  const page = await browser.request(base);
  const csrf = Browser.csrfOf(page.text);
  assert.match(page.text, new RegExp(`href="${base}/disable">Disable endpoint</a>`));
  const confirm = await browser.request(`${base}/disable`);
  assert.match(
    textOf(confirm.text),
    /Disable the endpoint https:\/\/example\.com\/hooks\? Deliveries not yet made are cancelled/,
  );

  const stranger = await logIn(world, tui);
  const strangerCsrf = Browser.csrfOf((await stranger.request('/dashboard/test')).text);
  assert.equal((await stranger.request(`${base}/disable`, { form: { csrf: strangerCsrf } })).status, 404);
  assert.equal((await browser.request(`${base}/disable`, { form: {} })).status, 403, 'no CSRF token, no change');
  assert.equal((await kowhai.test.get(`/v1/webhooks/${webhook.id}`)).body.webhook.disabled, false);

  const disabled = await browser.request(`${base}/disable`, { form: { csrf } });
  assert.equal(disabled.status, 303);
  assert.equal((await kowhai.test.get(`/v1/webhooks/${webhook.id}`)).body.webhook.disabled, true);
  const off = await browser.request(disabled.headers.get('location')!);
  assert.match(textOf(off.text), /The endpoint is disabled: .* Status disabled/);
  assert.match(off.text, /<button type="submit" class="primary">Enable endpoint<\/button>/);

  const enabled = await browser.request(`${base}/enable`, { form: { csrf } });
  assert.equal(enabled.status, 303);
  assert.equal((await kowhai.test.get(`/v1/webhooks/${webhook.id}`)).body.webhook.disabled, false);
  assert.match(
    textOf((await browser.request(enabled.headers.get('location')!)).text),
    /The endpoint is enabled: new events are sent to it again/,
  );
});

test('the signing secret is rotated from the endpoint’s page after confirming, once however often the confirmation is sent; the new secret is shown once and signs beside the old one', async (t) => {
  const world = await dashWorld(t);
  const [kowhai, tui] = world.merchants;
  const receiver = await startReceiver(() => ({ status: 204 }));
  t.after(() => receiver.close());
  const made = (await kowhai.test.post('/v1/webhooks', { url: receiver.url, events: ['request.created'] })).body
    .webhook;
  const oldSecret = made.secret as string;
  const storedSecret = async () =>
    (
      await world.app.deps.db
        .selectFrom('webhook_endpoints')
        .select('secret')
        .where('id', '=', made.id)
        .executeTakeFirstOrThrow()
    ).secret;
  const before = await storedSecret();
  const browser = await logIn(world, kowhai);
  const base = `/dashboard/test/webhooks/${made.id}`;
  const page = await browser.request(base);
  assert.ok(page.text.includes(`<a class="button" href="${base}/rotate-secret">Rotate the secret</a>`));
  assert.match(textOf(page.text), /Signing secret shown once, when the endpoint was created or its secret was rotated/);

  // asked first, on a page of its own whose form carries the CSRF token and a one-time key
  const confirm = await browser.request(`${base}/rotate-secret`);
  assert.equal(confirm.status, 200);
  assert.match(
    textOf(confirm.text),
    /Rotate the signing secret of the endpoint http:\/\/\S+\? Tono makes a new secret and shows it to you once\. For 24 hours the old secret keeps signing beside the new one/,
  );
  assert.ok(confirm.text.includes(`<form method="post" action="${base}/rotate-secret">`));
  assert.ok(confirm.text.includes(`href="${base}">Go back</a>`));
  assert.match(String(confirm.headers.get('content-security-policy')), /default-src 'none'.*form-action 'self';/);
  assert.equal(confirm.headers.get('cache-control'), 'no-store');
  const form = {
    csrf: Browser.csrfOf(confirm.text),
    idempotency_key: /name="idempotency_key" value="(dashboard-[0-9a-f-]{36})"/.exec(confirm.text)![1],
  };

  // another merchant, the other mode, a viewer, no token: refused, and nothing rotated
  const stranger = await logIn(world, tui);
  const strangerCsrf = Browser.csrfOf((await stranger.request('/dashboard/test')).text);
  assert.equal((await stranger.request(`${base}/rotate-secret`)).status, 404);
  assert.equal((await stranger.request(`${base}/rotate-secret`, { form: { csrf: strangerCsrf } })).status, 404);
  assert.equal((await browser.request(`/dashboard/live/webhooks/${made.id}/rotate-secret`)).status, 404);
  const viewer = await logInAs(world, (await addMember(world, kowhai, 'viewer')).email);
  assert.ok(!(await viewer.request(base)).text.includes('rotate-secret'), 'no button for a role that cannot');
  assert.equal((await viewer.request(`${base}/rotate-secret`)).status, 403);
  assert.equal((await browser.request(`${base}/rotate-secret`, { form: { ...form, csrf: 'forged' } })).status, 403);
  assert.equal(await storedSecret(), before, 'nothing rotated yet');

  // sent twice at once and once more (a double click, a reload): one rotation, every post to the same page
  const posts = await Promise.all([
    browser.request(`${base}/rotate-secret`, { form }),
    browser.request(`${base}/rotate-secret`, { form }),
  ]);
  posts.push(await browser.request(`${base}/rotate-secret`, { form }));
  for (const posted of posts) {
    assert.equal(posted.status, 303, posted.text);
    assert.equal(posted.headers.get('location'), `${base}/new-secret`);
  }
  // the same confirmation posted to another endpoint (a hand-made post) rotates nothing there
  const other = (await kowhai.test.post('/v1/webhooks', { url: 'https://example.com/other' })).body.webhook;
  const otherBefore = await world.app.deps.db
    .selectFrom('webhook_endpoints')
    .select('secret')
    .where('id', '=', other.id)
    .executeTakeFirstOrThrow();
  const reused = await browser.request(`/dashboard/test/webhooks/${other.id}/rotate-secret`, { form });
  assert.equal(reused.status, 409);
  assert.match(textOf(reused.text), /The secret was not rotated This confirmation was used before/);
  assert.deepEqual(
    await world.app.deps.db
      .selectFrom('webhook_endpoints')
      .select('secret')
      .where('id', '=', other.id)
      .executeTakeFirstOrThrow(),
    otherBefore,
  );

  const shown = await browser.request(`${base}/new-secret`);
  assert.equal(shown.status, 200, shown.text);
  const fresh = /id="secret" value="([^"]+)"/.exec(shown.text)![1];
  assert.notEqual(fresh, oldSecret);
  assert.match(
    textOf(shown.text),
    /New signing secret Copy the new signing secret now\. It is shown this once, and never again\. .* Until .+ the old secret signs each delivery too/,
  );
  const reloaded = await browser.request(`${base}/new-secret`);
  assert.ok(!reloaded.text.includes(fresh), 'shown once');
  assert.match(textOf(reloaded.text), /The secret was already shown A new secret is shown once/);
  const held = await world.app.deps.db.selectFrom('dashboard_sessions').select('shown_once_sealed').execute();
  assert.ok(
    held.every((row) => row.shown_once_sealed === null),
    'nothing held after its one view',
  );
  assert.ok(!(await browser.request(base)).text.includes(fresh), 'never on the endpoint’s page');

  // a delivery carries both signatures: rotated once (a second rotation would have dropped the old one)
  await kowhai.test.post('/v1/requests', { bank_account_id: kowhai.bankAccountId, message: 'Tea', amount: '3.00 NZD' });
  const [got] = await receiver.waitFor(1);
  const signature = got.headers['x-service-signature'] as string;
  assert.equal(signature.split(',').length, 2, signature);
  assert.equal(verifyWebhookSignature(got.raw, signature, fresh), true, 'the new secret signs');
  assert.equal(verifyWebhookSignature(got.raw, signature, oldSecret), true, 'the old one too, for a day');
});

test('the Recover form starts a day back on real time, as deliveries run, even with the test clock a month ahead', async (t) => {
  const world = await dashWorld(t, { workers: false });
  const [kowhai] = world.merchants;
  const webhook = (await kowhai.test.post('/v1/webhooks', { url: 'https://example.com/hooks' })).body.webhook;
  assert.equal((await kowhai.test.post('/v1/test-helpers/clock/advance', { seconds: 30 * 86_400 })).status, 200);
  const browser = await logIn(world, kowhai);
  const zone = world.app.deps.config.serviceTimeZone;
  const dayBefore = (ms: number) => inZone(ms - 86_400_000, zone).toFormat("yyyy-LL-dd'T'HH:mm");
  const from = world.app.deps.clock.now();
  const page = await browser.request(`/dashboard/test/webhooks/${webhook.id}`);
  const to = world.app.deps.clock.now();
  const since = /id="since" name="since" value="([^"]+)"/.exec(page.text)![1];
  assert.ok([dayBefore(from), dayBefore(to)].includes(since), `${since} is a day before real now`);
});
