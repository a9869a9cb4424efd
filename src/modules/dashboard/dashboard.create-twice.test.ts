import { test } from 'node:test';
import assert from 'node:assert/strict';
import { Browser } from '../../../test/payer.ts';
import { dashWorld, logIn, textOf, type DashWorld } from '../../../test/dashboard.ts';

// The dashboard's create forms posted twice, on SQLite and PostgreSQL: each form page carries a
// one-time key (made by its GET, kept when the form is shown again after a refusal), so a double
// click, or the same form sent again, makes one request, endpoint, key or bank account and leads
// to the first's page; for an endpoint or a key, the one view of its secret.

const formKeyOf = (html: string) => /name="idempotency_key" value="(dashboard-[0-9a-f-]{36})"/.exec(html)?.[1] ?? null;

const keysOf = (world: DashWorld, userId: string) =>
  world.app.deps.db.selectFrom('api_keys').select('id').where('user_id', '=', userId).execute();

/** Posts the same form twice at once (a double click), then once more after (a reload of the reply). */
async function postedThrice(browser: Browser, path: string, form: Record<string, string | string[]>) {
  const twice = await Promise.all([browser.request(path, { form }), browser.request(path, { form })]);
  return [...twice, await browser.request(path, { form })];
}

test('Create request posted twice, and again: one request, every post leads to its page; a refusal keeps the form key', async (t) => {
  const world = await dashWorld(t, { workers: false });
  const [kowhai] = world.merchants;
  const browser = await logIn(world, kowhai);
  const page = await browser.request('/dashboard/test/requests/new?kind=fixed');
  const key = formKeyOf(page.text);
  assert.ok(key, 'the form carries its key');
  assert.notEqual(formKeyOf((await browser.request('/dashboard/test/requests/new?kind=fixed')).text), key);
  const form = {
    csrf: Browser.csrfOf(page.text),
    idempotency_key: key,
    kind: 'fixed',
    type: 'single',
    message: 'Invoice 42',
    amount: '120.00',
    bank_account_id: kowhai.bankAccountId,
    reference: 'INV-42',
  };
  const refused = await browser.request('/dashboard/test/requests/new', { form: { ...form, message: '' } });
  assert.equal(refused.status, 400);
  assert.equal(formKeyOf(refused.text), key, 'shown again with the same key');

  const posts = await postedThrice(browser, '/dashboard/test/requests/new', form);
  assert.deepEqual(
    posts.map((p) => p.status),
    [303, 303, 303],
  );
  assert.equal(new Set(posts.map((p) => p.headers.get('location'))).size, 1, 'all lead to one request');
  const requests = (await kowhai.test.get('/v1/requests')).body.requests;
  assert.equal(requests.length, 1, 'one request');
  assert.equal(posts[0]!.headers.get('location'), `/dashboard/test/requests/${requests[0].id}?done=created`);

  // The same key with other values (an old page edited and sent again): nothing more, a new key.
  const other = await browser.request('/dashboard/test/requests/new', { form: { ...form, amount: '99.00' } });
  assert.equal(other.status, 400);
  assert.match(textOf(other.text), /This form was sent before with other values/);
  const fresh = formKeyOf(other.text);
  assert.ok(fresh && fresh !== key);
  assert.equal((await kowhai.test.get('/v1/requests')).body.requests.length, 1);
  const next = await browser.request('/dashboard/test/requests/new', {
    form: { ...form, amount: '99.00', idempotency_key: fresh },
  });
  assert.equal(next.status, 303);
  assert.equal((await kowhai.test.get('/v1/requests')).body.requests.length, 2);
});

test('Create webhook endpoint posted twice: one endpoint, and the second post leads to the first’s page, which shows its secret once', async (t) => {
  const world = await dashWorld(t, { workers: false });
  const [kowhai] = world.merchants;
  const browser = await logIn(world, kowhai);
  const page = await browser.request('/dashboard/test/webhooks');
  const form = {
    csrf: Browser.csrfOf(page.text),
    idempotency_key: formKeyOf(page.text)!,
    url: 'https://example.com/hooks',
    events: ['request.created'],
  };
  const posts = await postedThrice(browser, '/dashboard/test/webhooks', form);
  assert.deepEqual(
    posts.map((p) => p.status),
    [303, 303, 303],
  );
  const endpoints = (await kowhai.test.get('/v1/webhooks')).body.webhooks;
  assert.equal(endpoints.length, 1, 'one endpoint');
  const location = `/dashboard/test/webhooks/${endpoints[0].id}/created`;
  assert.deepEqual(
    posts.map((p) => p.headers.get('location')),
    [location, location, location],
  );
  const shown = await browser.request(location);
  assert.match(shown.text, /id="secret" value="[^"]+"/, 'the secret is shown');
  const again = await browser.request('/dashboard/test/webhooks', { form });
  assert.equal(again.headers.get('location'), location);
  assert.match(textOf((await browser.request(location)).text), /The secret was already shown/, 'and only once');
});

test('Create API key posted twice: one key, and the second post leads to the first’s page, which shows the key once', async (t) => {
  const world = await dashWorld(t, { workers: false });
  const [kowhai] = world.merchants;
  const browser = await logIn(world, kowhai);
  const before = (await keysOf(world, kowhai.userId)).length;
  const page = await browser.request('/dashboard/test/api-keys');
  const form = {
    csrf: Browser.csrfOf(page.text),
    idempotency_key: formKeyOf(page.text)!,
    name: 'Shop server',
    access: 'full',
  };
  const refused = await browser.request('/dashboard/test/api-keys', { form: { ...form, access: 'limited' } });
  assert.equal(refused.status, 400);
  assert.equal(formKeyOf(refused.text), form.idempotency_key, 'shown again with the same key');

  const posts = await postedThrice(browser, '/dashboard/test/api-keys', form);
  assert.deepEqual(
    posts.map((p) => p.status),
    [303, 303, 303],
  );
  assert.equal((await keysOf(world, kowhai.userId)).length, before + 1, 'one key');
  const location = posts[2]!.headers.get('location')!;
  assert.deepEqual(
    posts.map((p) => p.headers.get('location')),
    [location, location, location],
  );
  const shown = await browser.request(location);
  const key = /id="api-key" value="(sk_test_[A-Za-z0-9_-]{32})"/.exec(shown.text)?.[1];
  assert.ok(key, 'the key is shown');
  const call = await world.app.app.inject({
    method: 'GET',
    url: '/v1/requests',
    headers: { authorization: `Bearer ${key}` },
  });
  assert.equal(call.statusCode, 200);
  assert.match(textOf((await browser.request(location)).text), /The key was already shown/);
  const stored = await world.app.deps.db.selectFrom('idempotency_keys').select('response').execute();
  const replies = stored.map((row) => world.app.deps.secrets.open(row.response!));
  assert.ok(
    replies.length > 0 && replies.every((reply) => !reply.includes(key!)),
    'the key is kept nowhere to show again',
  );
});

test('Add bank account posted twice: one account, both answered as the first', async (t) => {
  const world = await dashWorld(t, { workers: false });
  const [kowhai] = world.merchants;
  const browser = await logIn(world, kowhai);
  const count = async () => (await kowhai.test.get('/v1/bank-accounts')).body.bank_accounts.length;
  const before = await count();
  const page = await browser.request('/dashboard/test/bank-accounts');
  const form = {
    csrf: Browser.csrfOf(page.text),
    idempotency_key: formKeyOf(page.text)!,
    account_number: '12-3456-7890138-00',
    name: 'Main',
  };
  const posts = await postedThrice(browser, '/dashboard/test/bank-accounts', form);
  assert.deepEqual(
    posts.map((p) => [p.status, p.headers.get('location')]),
    Array(3).fill([303, '/dashboard/test/bank-accounts?done=added']),
  );
  assert.equal(await count(), before + 1, 'one account');
});
