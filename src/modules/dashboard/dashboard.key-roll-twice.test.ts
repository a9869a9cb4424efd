import { test } from 'node:test';
import assert from 'node:assert/strict';
import { Browser } from '../../../test/payer.ts';
import { dashWorld, logIn, textOf, type DashWorld } from '../../../test/dashboard.ts';
import { NO_ORIGIN } from '../context.ts';
import { rollApiKey } from '../merchants/merchants.service.ts';

// Rolling a key posted twice, on SQLite and PostgreSQL: a double click on Roll shows the one new
// key (the second post leads to its page rather than to "rolled already"), and two rolls of one key
// at once make one new key.

const keysOf = (world: DashWorld, userId: string) =>
  world.app.deps.db
    .selectFrom('api_keys')
    .select(['id', 'hint', 'revoked_at', 'expires_at'])
    .where('user_id', '=', userId)
    .where('mode', '=', 'test')
    .orderBy('id')
    .execute();

const shownKeyOf = (html: string) => /id="api-key" value="(sk_test_[A-Za-z0-9_-]{32})"/.exec(html)?.[1] ?? null;

const callWith = (world: DashWorld, key: string) =>
  world.app.app.inject({ method: 'GET', url: '/v1/requests', headers: { authorization: `Bearer ${key}` } });

for (const period of ['now', '24h'] as const) {
  test(`Roll (${period}) posted twice from one page: the second post leads to the new key's page, which shows it once; one new key`, async (t) => {
    const world = await dashWorld(t, { workers: false });
    const [kowhai] = world.merchants;
    const browser = await logIn(world, kowhai);
    const [old] = await keysOf(world, kowhai.userId);
    const path = `/dashboard/test/api-keys/${old!.id}/roll`;
    const form = { csrf: Browser.csrfOf((await browser.request(path)).text), period };

    const first = await browser.request(path, { form });
    const second = await browser.request(path, { form });
    assert.equal(first.status, 303);
    // The browser shows the reply to the last click: the page of the key the first click made.
    assert.equal(second.status, 303, textOf(second.text));
    assert.equal(second.headers.get('location'), first.headers.get('location'));
    const shown = await browser.request(second.headers.get('location')!);
    const newKey = shownKeyOf(shown.text);
    assert.ok(newKey, 'the new key is shown');
    assert.equal((await callWith(world, newKey)).statusCode, 200, 'and works');
    assert.equal((await callWith(world, kowhai.testKey)).statusCode, period === 'now' ? 401 : 200);

    const keys = await keysOf(world, kowhai.userId);
    assert.equal(keys.length, 2, 'one new key');
    assert.ok(keys.some((k) => k.hint.endsWith(newKey.slice(-4))));

    // Once shown, it is not shown again, and a third post is the refusal it always was.
    assert.equal(shownKeyOf((await browser.request(second.headers.get('location')!)).text), null);
    const third = await browser.request(path, { form });
    assert.equal(third.status, 409);
    assert.match(textOf(third.text), /This key cannot be rolled/);
  });
}

test('Roll double-clicked (both posts at once, one session): both lead to the one new key', async (t) => {
  const world = await dashWorld(t, { workers: false });
  const [kowhai] = world.merchants;
  const browser = await logIn(world, kowhai);
  for (let trial = 0; trial < 3; trial++) {
    const keys = await keysOf(world, kowhai.userId);
    const old = keys.find((k) => k.revoked_at === null && k.expires_at === null)!;
    const path = `/dashboard/test/api-keys/${old.id}/roll`;
    const form = { csrf: Browser.csrfOf((await browser.request(path)).text), period: '1h' };
    const [a, b] = await Promise.all([browser.request(path, { form }), browser.request(path, { form })]);
    assert.deepEqual([a.status, b.status], [303, 303], textOf(a.text + b.text));
    assert.equal(a.headers.get('location'), b.headers.get('location'));
    assert.ok(shownKeyOf((await browser.request(b.headers.get('location')!)).text), 'the new key is shown');
    assert.equal((await keysOf(world, kowhai.userId)).length, keys.length + 1, 'one new key');
  }
});

test('two rolls of one key at once (two members, or the service twice) make one new key; the other is refused as rolled already', async (t) => {
  const world = await dashWorld(t, { workers: false });
  const [kowhai] = world.merchants;
  const deps = world.app.deps;
  const by = { actor: { kind: 'operator', name: 'test' } as const, origin: NO_ORIGIN };
  for (let trial = 0; trial < 5; trial++) {
    const before = await keysOf(world, kowhai.userId);
    const old = before.find((k) => k.revoked_at === null && k.expires_at === null)!;
    const key = { id: old.id, user_id: kowhai.userId, mode: 'test' as const };
    const results = await Promise.allSettled([
      rollApiKey(deps.db, deps.clock, key, '24h', 'operator', by),
      rollApiKey(deps.db, deps.clock, key, '24h', 'operator', by),
    ]);
    const refused = results.flatMap((r) => (r.status === 'rejected' ? [String(r.reason?.message)] : []));
    assert.deepEqual(refused, ['This key was rolled already: it stops at its expiry'], `trial ${trial}`);
    assert.equal((await keysOf(world, kowhai.userId)).length, before.length + 1, `trial ${trial}: one new key`);
  }

  const a = await logIn(world, kowhai);
  const b = await logIn(world, kowhai);
  const before = await keysOf(world, kowhai.userId);
  const old = before.find((k) => k.revoked_at === null && k.expires_at === null)!;
  const path = `/dashboard/test/api-keys/${old.id}/roll`;
  const [ca, cb] = [Browser.csrfOf((await a.request(path)).text), Browser.csrfOf((await b.request(path)).text)];
  const replies = await Promise.all([
    a.request(path, { form: { csrf: ca, period: '24h' } }),
    b.request(path, { form: { csrf: cb, period: '24h' } }),
  ]);
  assert.deepEqual(replies.map((r) => r.status).sort(), [303, 409], 'the other session is refused');
  assert.equal((await keysOf(world, kowhai.userId)).length, before.length + 1, 'one new key');
});
