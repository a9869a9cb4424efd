import { test } from 'node:test';
import assert from 'node:assert/strict';
import { Browser } from '../../../test/payer.ts';
import { dashWorld, logIn, textOf, type DashWorld } from '../../../test/dashboard.ts';

// The keys page over HTTP, on SQLite and PostgreSQL: a key made with a name and a restriction,
// refused forms that change nothing, rolling with a period and its confirmation, and another
// merchant's key as a 404.

const keysOf = (world: DashWorld, userId: string) =>
  world.app.deps.db
    .selectFrom('api_keys')
    .select(['id', 'name', 'hint', 'created_by', 'permissions', 'revoked_at', 'expires_at'])
    .where('user_id', '=', userId)
    .where('mode', '=', 'test')
    .orderBy('id')
    .execute();

const shownKeyOf = (html: string) => /id="api-key" value="(sk_test_[A-Za-z0-9_-]{32})"/.exec(html)![1]!;

test('a key made with a name and ticked permissions is listed with them and its creator; bad forms change nothing', async (t) => {
  const world = await dashWorld(t, { workers: false });
  const [kowhai] = world.merchants;
  const browser = await logIn(world, kowhai);
  const page = await browser.request('/dashboard/test/api-keys');
  const csrf = Browser.csrfOf(page.text);
  const before = await keysOf(world, kowhai.userId);

  const noCsrf = await browser.request('/dashboard/test/api-keys', { form: { name: 'X', access: 'full' } });
  assert.equal(noCsrf.status, 403);
  const noName = await browser.request('/dashboard/test/api-keys', { form: { csrf, name: '  ', access: 'full' } });
  assert.equal(noName.status, 400);
  assert.match(textOf(noName.text), /Give the key a name/);
  const nothingTicked = await browser.request('/dashboard/test/api-keys', {
    form: { csrf, name: 'Reports', access: 'limited' },
  });
  assert.equal(nothingTicked.status, 400);
  assert.match(textOf(nothingTicked.text), /Tick at least one permission/);
  assert.match(nothingTicked.text, /value="Reports"/, 'what was typed is kept');
  const forged = await browser.request('/dashboard/test/api-keys', {
    form: { csrf, name: 'Forged', access: 'limited', permissions: ['money:write'] },
  });
  assert.equal(forged.status, 400);
  const tooLong = await browser.request('/dashboard/test/api-keys', {
    form: { csrf, name: 'x'.repeat(101), access: 'full' },
  });
  assert.equal(tooLong.status, 400);
  assert.match(textOf(tooLong.text), /“Name” can be at most 100 characters: shorten it\. Nothing was created\./);
  assert.doesNotMatch(textOf(tooLong.text), /\bname must be\b/, "in the form's words, not the API's");
  assert.match(tooLong.text, /id="name" name="name"[^>]*value="x{101}"[^>]*aria-invalid="true"/, 'kept, and marked');
  assert.deepEqual(await keysOf(world, kowhai.userId), before, 'nothing was created');

  const posted = await browser.request('/dashboard/test/api-keys', {
    form: {
      csrf,
      name: '<b>Till</b>',
      access: 'limited',
      permissions: ['requests:read', 'requests:write', 'refunds:read'],
    },
  });
  assert.equal(posted.status, 303);
  const created = await browser.request(posted.headers.get('location')!);
  const key = shownKeyOf(created.text);
  assert.ok(created.text.includes('&lt;b&gt;Till&lt;/b&gt;') && !created.text.includes('<b>Till'), 'escaped');
  const api = world.app.app;
  const call = (method: 'GET' | 'POST', url: string) =>
    api.inject({
      method,
      url,
      headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' },
      payload: method === 'POST' ? '{}' : undefined,
    });
  assert.equal((await call('GET', '/v1/requests')).statusCode, 200);
  assert.equal((await call('GET', '/v1/refunds')).statusCode, 200);
  assert.equal((await call('POST', '/v1/refunds')).statusCode, 403);
  const row = (await keysOf(world, kowhai.userId)).find((k) => k.hint.endsWith(key.slice(-4)))!;
  assert.deepEqual(
    [row.name, row.created_by, row.permissions],
    ['<b>Till</b>', kowhai.email, 'requests:write,refunds:read'],
  );

  const list = await browser.request('/dashboard/test/api-keys');
  assert.ok(!list.text.includes('<b>Till'), 'escaped in the list');
  assert.match(
    textOf(list.text),
    new RegExp(
      `<b>Till</b> sk_test_…${key.slice(-4)} Read and write requests; read refunds ${kowhai.email.replace('.', '\\.')} .* active`,
    ),
  );
  const readOnly = await browser.request('/dashboard/test/api-keys', {
    form: { csrf, name: 'Nightly report', access: 'read_only' },
  });
  const readOnlyKey = shownKeyOf((await browser.request(readOnly.headers.get('location')!)).text);
  const readOnlyCall = (method: 'GET' | 'DELETE') =>
    api.inject({ method, url: '/v1/webhooks/webhook_x', headers: { authorization: `Bearer ${readOnlyKey}` } });
  assert.equal((await readOnlyCall('GET')).statusCode, 404);
  assert.equal((await readOnlyCall('DELETE')).statusCode, 403);
  assert.match(
    textOf((await browser.request('/dashboard/test/api-keys')).text),
    /Nightly report sk_test_…\S{4} Read-only/,
  );
});

test('rolling a key: the period is chosen and confirmed, the new key shown once, both listed with when the old one stops; another merchant cannot', async (t) => {
  const world = await dashWorld(t, { workers: false });
  const [kowhai, tui] = world.merchants;
  const browser = await logIn(world, kowhai);
  const [first] = await keysOf(world, kowhai.userId);
  const confirm = await browser.request(`/dashboard/test/api-keys/${first!.id}/roll`);
  assert.equal(confirm.status, 200);
  assert.match(textOf(confirm.text), /Roll the key sk_test_…\S{4} \(First test key\)\?/);
  const csrf = Browser.csrfOf(confirm.text);

  const stranger = await logIn(world, tui);
  const strangerCsrf = Browser.csrfOf((await stranger.request('/dashboard/test/api-keys')).text);
  assert.equal((await stranger.request(`/dashboard/test/api-keys/${first!.id}/roll`)).status, 404);
  const strangerPost = await stranger.request(`/dashboard/test/api-keys/${first!.id}/roll`, {
    form: { csrf: strangerCsrf, period: '1h' },
  });
  assert.equal(strangerPost.status, 404);
  const badPeriod = await browser.request(`/dashboard/test/api-keys/${first!.id}/roll`, {
    form: { csrf, period: '30d' },
  });
  assert.equal(badPeriod.status, 400);
  assert.match(textOf(badPeriod.text), /at most 7 days/);
  const noCsrf = await browser.request(`/dashboard/test/api-keys/${first!.id}/roll`, { form: { period: '1h' } });
  assert.equal(noCsrf.status, 403);
  assert.equal((await keysOf(world, kowhai.userId)).length, 1, 'nothing was rolled');

  const rolled = await browser.request(`/dashboard/test/api-keys/${first!.id}/roll`, { form: { csrf, period: '3d' } });
  assert.equal(rolled.status, 303);
  const shown = await browser.request(rolled.headers.get('location')!);
  const newKey = shownKeyOf(shown.text);
  assert.match(textOf(shown.text), /First test key .*keeps working until/);
  const keys = await keysOf(world, kowhai.userId);
  assert.equal(keys.length, 2);
  const old = keys.find((k) => k.id === first!.id)!;
  const fresh = keys.find((k) => k.id !== first!.id)!;
  const threeDays = 3 * 86_400_000;
  assert.ok(Math.abs(Number(old.expires_at) - (Date.now() + threeDays)) < 60_000, 'the old key stops in 3 days');
  assert.deepEqual([fresh.name, fresh.permissions, fresh.created_by], ['First test key', null, kowhai.email]);
  assert.equal((await kowhai.test.get('/v1/requests')).status, 200, 'the old key works during its period');
  const byNew = await world.app.app.inject({
    method: 'GET',
    url: '/v1/requests',
    headers: { authorization: `Bearer ${newKey}` },
  });
  assert.equal(byNew.statusCode, 200);

  const list = textOf((await browser.request('/dashboard/test/api-keys')).text);
  assert.match(list, new RegExp(`First test key sk_test_…${newKey.slice(-4)} Full access .* active`));
  assert.match(list, /First test key sk_test_…\S{4} Full access .* expiring stops /);
  const again = await browser.request(`/dashboard/test/api-keys/${first!.id}/roll`);
  assert.equal(again.status, 409, 'an expiring key is not rolled again');
  const againPost = await browser.request(`/dashboard/test/api-keys/${first!.id}/roll`, {
    form: { csrf, period: '1h' },
  });
  assert.equal(againPost.status, 409);
  assert.equal((await keysOf(world, kowhai.userId)).length, 2);
});
