import { test } from 'node:test';
import assert from 'node:assert/strict';
import { Browser } from '../../../test/payer.ts';
import { dashWorld, logIn, PASSWORD, textOf } from '../../../test/dashboard.ts';
import { processStore, runCli, type Store } from '../../../test/process.ts';
import { shiftedClock, systemClock } from '../../shared/time.ts';
import { SESSION_IDLE_MS, SESSION_MAX_MS, SIGN_IN_LIMITS } from './dashboard.sessions.ts';
import pino from 'pino';
import { createRuntime } from '../../runtime.ts';
import { createTestMerchant, freshDb, testConfig } from '../../../test/helpers.ts';

// Dashboard sign-in over HTTP on SQLite and PostgreSQL: sessions, cookie flags, lockouts, CSRF and
// origin checks, password reset by mailed link.

test('signed out, /dashboard leads to the login page; a right password opens a rotated, server-side session; logout ends it', async (t) => {
  const world = await dashWorld(t, { workers: false });
  const [kowhai] = world.merchants;
  const anonymous = new Browser(world.baseUrl);
  const start = await anonymous.request('/dashboard');
  assert.equal(start.status, 303);
  assert.equal(start.headers.get('location'), '/dashboard/login');
  const deep = await anonymous.request('/dashboard/test');
  assert.equal(deep.headers.get('location'), '/dashboard/login?next=%2Fdashboard%2Ftest');
  const login = await anonymous.request('/dashboard/login');
  assert.equal(login.status, 200);
  assert.match(login.text, /<label for="email">Email<\/label>/);
  assert.match(login.text, /<label for="password">Password<\/label>/);
  assert.match(login.text, />Log in<\/button>/);
  assert.match(login.headers.get('content-security-policy')!, /default-src 'none'/);
  assert.equal(login.headers.get('x-content-type-options'), 'nosniff');
  assert.equal(login.headers.get('referrer-policy'), 'no-referrer');
  assert.match(login.setCookies.join('\n'), /tono_dash_csrf=[^;]+; Path=\/dashboard; HttpOnly; SameSite=Lax/);

  // a session id planted before sign-in is not the one after it
  anonymous.cookies.set('tono_dash', 'planted-session-id-planted-session-id');
  const done = await anonymous.request('/dashboard/login', {
    form: {
      email: kowhai.email.toUpperCase(),
      password: PASSWORD,
      csrf: Browser.csrfOf(login.text),
      next: '/dashboard/test',
    },
  });
  assert.equal(done.status, 303);
  assert.equal(done.headers.get('location'), '/dashboard/test');
  const cookieLine = done.setCookies.find((line) => line.startsWith('tono_dash='))!;
  assert.match(cookieLine, /; Max-Age=604800; Path=\/dashboard; HttpOnly; SameSite=Lax$/);
  const session = anonymous.cookie('tono_dash')!;
  assert.notEqual(session, 'planted-session-id-planted-session-id');
  const rows = await world.app.deps.db.selectFrom('dashboard_sessions').selectAll().execute();
  assert.equal(rows.length, 1);
  assert.ok(!JSON.stringify(rows).includes(session), 'only the hash is stored');

  const home = await anonymous.request('/dashboard/live');
  assert.equal(home.status, 200);
  assert.match(textOf(home.text), /Kōwhai Coffee/);
  // a login page reached while signed in goes on, and an outside "next" is never followed
  const outside = await anonymous.request('/dashboard/login?next=https://evil.example/');
  assert.equal(outside.headers.get('location'), '/dashboard');
  // the dashboard opens in the mode last looked at (live, just now)
  assert.equal((await anonymous.request('/dashboard')).headers.get('location'), '/dashboard/live');

  const logout = await anonymous.request('/dashboard/logout', { form: { csrf: Browser.csrfOf(home.text) } });
  assert.equal(logout.status, 303);
  const reused = new Browser(world.baseUrl);
  reused.cookies.set('tono_dash', session);
  assert.equal((await reused.request('/dashboard/live')).status, 303, 'the ended session no longer works');
});

test('sessions end after 12 hours idle and 7 days at most, and can be ended from the account page', async (t) => {
  const world = await dashWorld(t, { workers: false });
  const [kowhai] = world.merchants;
  const browser = await logIn(world, kowhai);
  world.app.deps.clock = shiftedClock(systemClock, SESSION_IDLE_MS + 1_000);
  assert.equal((await browser.request('/dashboard/live')).status, 303, 'idle too long');
  world.app.deps.clock = systemClock;

  const active = await logIn(world, kowhai);
  // seen every 11 hours, it lives until its seventh day and no longer
  for (let hours = 11; hours < 7 * 24; hours += 11) {
    world.app.deps.clock = shiftedClock(systemClock, hours * 3_600_000);
    assert.equal((await active.request('/dashboard/live')).status, 200, `at ${hours} h`);
  }
  world.app.deps.clock = shiftedClock(systemClock, SESSION_MAX_MS + 1_000);
  assert.equal((await active.request('/dashboard/live')).status, 303, 'past 7 days');
  world.app.deps.clock = systemClock;

  // the sessions above are left behind in time; end them so only the next two are live now
  await world.app.deps.db.updateTable('dashboard_sessions').set({ ended_at: Date.now() }).execute();
  const phone = await logIn(world, kowhai);
  const laptop = await logIn(world, kowhai);
  const account = await laptop.request('/dashboard/account');
  assert.equal(account.status, 200);
  const refs = [...account.text.matchAll(/\/dashboard\/account\/sessions\/([0-9a-f]{16})\/end/g)].map((m) => m[1]);
  assert.equal(refs.length, 1, 'the other live session can be ended (not this one)');
  const ended = await laptop.request(`/dashboard/account/sessions/${refs[0]}/end`, {
    form: { csrf: Browser.csrfOf(account.text) },
  });
  assert.equal(ended.status, 303);
  assert.equal((await phone.request('/dashboard/live')).status, 303, 'the phone is signed out');
  assert.equal((await laptop.request('/dashboard/live')).status, 200);
});

test('wrong passwords are refused alike for unknown emails, then locked per email and per client address', async (t) => {
  const world = await dashWorld(t, { workers: false });
  const [kowhai, tui] = world.merchants;
  // each attempt from a fresh browser, as a guesser would; all from this one client address
  const attempt = async (email: string, password: string) => {
    const browser = new Browser(world.baseUrl);
    const page = await browser.request('/dashboard/login');
    return browser.request('/dashboard/login', { form: { email, password, csrf: Browser.csrfOf(page.text) } });
  };

  const unknown = await attempt('nobody@example.com', 'whatever it is');
  const wrong = await attempt(kowhai.email, 'not the password');
  assert.deepEqual([unknown.status, wrong.status], [400, 400]);
  assert.equal(textOf(unknown.text).replace('nobody@example.com', 'E'), textOf(wrong.text).replace(kowhai.email, 'E'));
  assert.match(textOf(wrong.text), /That email and password do not match/);
  for (let i = 0; i < 3; i++) await attempt(kowhai.email, 'not the password');
  // the fifth wrong password for this email locks it, even with the right one
  await attempt(kowhai.email, 'still wrong');
  const locked = await attempt(kowhai.email, PASSWORD);
  assert.equal(locked.status, 429);
  assert.match(textOf(locked.text), /Too many wrong passwords\. Logging in is locked for \d+ minutes/);
  assert.ok(Number(locked.headers.get('retry-after')) > 0);
  // another merchant's email from the same address still works: per email first
  const other = await attempt(tui.email, PASSWORD);
  assert.equal(other.status, 303);

  // per client address: 20 wrong passwords across many emails lock this address for every email
  for (let i = 0; i < 14; i++) await attempt(`guess${i}@example.com`, 'x');
  const byAddress = await attempt(tui.email, PASSWORD);
  assert.equal(byAddress.status, 429);
  assert.equal(
    await world.app.deps.db
      .selectFrom('dashboard_sessions')
      .select('id_hash')
      .execute()
      .then((r) => r.length),
    1,
  );
});

test('200 wrong passwords at once for one email: at most the limit are checked, and the right one is refused while locked', async (t) => {
  const world = await dashWorld(t, { workers: false });
  const [kowhai] = world.merchants;
  const browser = new Browser(world.baseUrl);
  const csrf = Browser.csrfOf((await browser.request('/dashboard/login')).text);
  const replies = await Promise.all(
    Array.from({ length: 200 }, (_, i) =>
      browser.request('/dashboard/login', { form: { email: kowhai.email, password: `guess number ${i}`, csrf } }),
    ),
  );
  const statuses = replies.map((reply) => reply.status);
  assert.equal(
    statuses.filter((status) => status === 400).length,
    SIGN_IN_LIMITS.byEmail.max,
    "only the email's five were checked",
  );
  assert.equal(statuses.filter((status) => status === 429).length, 200 - SIGN_IN_LIMITS.byEmail.max);
  const locked = await browser.request('/dashboard/login', { form: { email: kowhai.email, password: PASSWORD, csrf } });
  assert.equal(locked.status, 429);
  assert.match(textOf(locked.text), /Too many wrong passwords/);
  assert.equal((await world.app.deps.db.selectFrom('dashboard_sessions').select('id_hash').execute()).length, 0);
  // the counts are in the database, shared by every process, and hold neither the email nor the address
  const windows = await world.app.deps.db.selectFrom('attempt_windows').selectAll().execute();
  assert.ok(windows.some((w) => w.scope === SIGN_IN_LIMITS.byEmail.scope));
  assert.ok(!JSON.stringify(windows).includes(kowhai.email) && !JSON.stringify(windows).includes('127.0.0.1'));
  // a second app on the same database (another process, another instance) sees the lock too
  const other = await createRuntime(testConfig({ workers: false }), {
    db: world.app.deps.db,
    log: pino({ level: 'silent' }),
  });
  // closed without its database, which is the world's
  t.after(() => other.app.close());
  const page = await other.app.inject({ method: 'GET', url: '/dashboard/login' });
  const cookie = page.cookies.map((c) => `${c.name}=${c.value}`).join('; ');
  const elsewhere = await other.app.inject({
    method: 'POST',
    url: '/dashboard/login',
    remoteAddress: '203.0.113.9',
    headers: { cookie, 'content-type': 'application/x-www-form-urlencoded' },
    payload: new URLSearchParams({
      email: kowhai.email,
      password: PASSWORD,
      csrf: Browser.csrfOf(page.body),
    }).toString(),
  });
  assert.equal(elsewhere.statusCode, 429);
});

test('password checks run a few at a time: past a short queue a sign-in is told to come back, and the API keeps answering', async (t) => {
  const world = await dashWorld(t, { workers: false });
  const [kowhai] = world.merchants;
  const { app } = world.app;
  const page = await app.inject({ method: 'GET', url: '/dashboard/login' });
  const cookie = page.cookies.map((c) => `${c.name}=${c.value}`).join('; ');
  const csrf = Browser.csrfOf(page.body);
  // every sign-in from its own address for its own email, so no per-address or per-email limit applies
  const storm = Array.from({ length: 100 }, (_, i) =>
    app.inject({
      method: 'POST',
      url: '/dashboard/login',
      remoteAddress: `198.51.100.${i + 1}`,
      headers: { cookie, 'content-type': 'application/x-www-form-urlencoded' },
      payload: new URLSearchParams({ email: `guess${i}@example.com`, password: 'not it at all', csrf }).toString(),
    }),
  );
  const api = await kowhai.test.get('/v1/requests?limit=1');
  assert.equal(api.status, 200);
  const replies = await Promise.all(storm);
  const busy = replies.filter((reply) => reply.statusCode === 429);
  assert.ok(busy.length > 0, 'some were told to come back');
  assert.ok(
    busy.every(
      (reply) =>
        /Too many people are logging in right now/.test(textOf(reply.body)) && reply.headers['retry-after'] === '5',
    ),
  );
  assert.ok(
    replies.every((reply) => reply.statusCode === 400 || reply.statusCode === 429),
    'nothing else',
  );
  assert.ok(
    replies.some((reply) => reply.statusCode === 400),
    'some were checked',
  );
  // a refused-as-busy attempt was given back: that address can try again at once
  const index = replies.findIndex((reply) => reply.statusCode === 429);
  const again = await app.inject({
    method: 'POST',
    url: '/dashboard/login',
    remoteAddress: `198.51.100.${index + 1}`,
    headers: { cookie, 'content-type': 'application/x-www-form-urlencoded' },
    payload: new URLSearchParams({ email: kowhai.email, password: PASSWORD, csrf }).toString(),
  });
  assert.equal(again.statusCode, 303);
});

test('a cross-site or token-less post is refused with 403 and changes nothing', async (t) => {
  const world = await dashWorld(t, { workers: false });
  const [kowhai] = world.merchants;
  const browser = new Browser(world.baseUrl);
  const page = await browser.request('/dashboard/login');
  const csrf = Browser.csrfOf(page.text);
  const form = { email: kowhai.email, password: PASSWORD, csrf };
  assert.equal(
    (await browser.request('/dashboard/login', { form: { email: kowhai.email, password: PASSWORD } })).status,
    403,
  );
  assert.equal(
    (await browser.request('/dashboard/login', { form, headers: { origin: 'https://evil.example' } })).status,
    403,
  );
  assert.equal(
    (await browser.request('/dashboard/login', { form, headers: { 'sec-fetch-site': 'cross-site', origin: 'null' } }))
      .status,
    403,
  );
  assert.equal((await world.app.deps.db.selectFrom('dashboard_sessions').select('id_hash').execute()).length, 0);

  const signed = await logIn(world, kowhai);
  const home = await signed.request('/dashboard/live');
  const token = Browser.csrfOf(home.text);
  const before = await world.app.deps.db.selectFrom('dashboard_sessions').select(['id_hash', 'ended_at']).execute();
  assert.equal((await signed.request('/dashboard/logout', { form: { csrf: 'forged' } })).status, 403);
  assert.equal(
    (await signed.request('/dashboard/logout', { form: { csrf: token }, headers: { 'sec-fetch-site': 'cross-site' } }))
      .status,
    403,
  );
  const refused = await signed.request('/dashboard/logout', {
    form: { csrf: token },
    headers: { origin: 'https://evil.example' },
  });
  assert.equal(refused.status, 403);
  assert.match(textOf(refused.text), /Nothing was changed/);
  assert.deepEqual(
    await world.app.deps.db.selectFrom('dashboard_sessions').select(['id_hash', 'ended_at']).execute(),
    before,
  );
});

test('password reset by an emailed link: once, for 30 minutes; it ends every session; the reply never says whether the email is known', async (t) => {
  const world = await dashWorld(t);
  const [kowhai] = world.merchants;
  const oldSession = await logIn(world, kowhai);
  const ask = async (email: string) => {
    const browser = new Browser(world.baseUrl);
    const page = await browser.request('/dashboard/forgot');
    const reply = await browser.request('/dashboard/forgot', { form: { email, csrf: Browser.csrfOf(page.text) } });
    assert.equal(reply.status, 200);
    return textOf(reply.text).replace(email, 'E');
  };
  assert.equal(await ask('nobody@example.com'), await ask(kowhai.email));
  const mail = await world.smtp.waitFor(
    (m) => m.to === kowhai.email && /Reset your Tono dashboard password/.test(m.subject),
  );
  const link = new RegExp(`${world.baseUrl}(/dashboard/reset/[A-Za-z0-9_-]+)`).exec(mail.text)![1];
  const rows = await world.app.deps.db.selectFrom('dashboard_resets').selectAll().execute();
  assert.ok(!JSON.stringify(rows).includes(link.split('/').pop()!), 'only the hash is stored');

  const browser = new Browser(world.baseUrl);
  const form = await browser.request(link);
  assert.equal(form.status, 200);
  const short = await browser.request(link, { form: { password: 'short', csrf: Browser.csrfOf(form.text) } });
  assert.equal(short.status, 400);
  assert.match(textOf(short.text), /Choose a password of 12 to 200 characters/);
  const set = await browser.request(link, {
    form: { password: 'a brand new passphrase', csrf: Browser.csrfOf(form.text) },
  });
  assert.equal(set.status, 303);
  assert.equal(set.headers.get('location'), '/dashboard/login?done=reset');
  assert.equal((await oldSession.request('/dashboard/live')).status, 303, 'every old session ended');
  assert.equal((await browser.request(link)).status, 400, 'the link works once');
  await assert.rejects(logIn(world, kowhai));
  await logIn(world, kowhai, 'a brand new passphrase');
  // expiry: a link is dead after 30 minutes
  await ask(kowhai.email);
  const second = await world.smtp.waitFor((m) => m.to === kowhai.email && /Reset/.test(m.subject) && m !== mail);
  const secondLink = new RegExp(`${world.baseUrl}(/dashboard/reset/[A-Za-z0-9_-]+)`).exec(second.text)![1];
  world.app.deps.clock = shiftedClock(systemClock, 31 * 60_000);
  assert.equal((await new Browser(world.baseUrl).request(secondLink)).status, 400);
  world.app.deps.clock = systemClock;
});

test('cli merchant set-password sets a new scrypt password, read from stdin or generated and shown once', async (t) => {
  const store: Store = await processStore(t, { migrated: true });
  assert.equal((await runCli(store, ['migrate'])).status, 0);
  const created = await runCli(store, [
    'merchant',
    'create',
    '--name',
    'Kiwi',
    '--email',
    'owner@kiwi.example',
    '--json',
  ]);
  assert.equal(created.status, 0, created.stderr);
  const generated = await runCli(store, ['merchant', 'set-password', 'owner@kiwi.example', '--json']);
  assert.equal(generated.status, 0, generated.stderr);
  const shown = JSON.parse(generated.stdout);
  assert.equal(shown.password_set, true);
  assert.ok(shown.password.length >= 12);
  const piped = await runCli(
    store,
    ['merchant', 'set-password', 'owner@kiwi.example', '--password-stdin'],
    'my own long passphrase\n',
  );
  assert.equal(piped.status, 0, piped.stderr);
  assert.ok(!piped.stdout.includes('my own long passphrase'), 'a given password is never printed');
  const short = await runCli(store, ['merchant', 'set-password', 'owner@kiwi.example', '--password-stdin'], 'short\n');
  assert.equal(short.status, 1);
  assert.match(short.stderr, /password must be at least 12 characters/);
  const unknown = await runCli(store, ['merchant', 'set-password', 'nobody@kiwi.example']);
  assert.equal(unknown.status, 1);
});

test('the reset link never reaches the request log', async (t) => {
  const lines: string[] = [];
  const testDb = await freshDb();
  const runtime = await createRuntime(testConfig({ workers: false }), {
    db: testDb.db,
    log: pino({ level: 'info' }, { write: (line: string) => void lines.push(line) }),
  });
  t.after(async () => {
    await runtime.close();
    await testDb.drop();
  });
  const merchant = await createTestMerchant(runtime, 'Kōwhai Coffee');
  const { email } = await runtime.deps.db
    .selectFrom('users')
    .select('email')
    .where('id', '=', merchant.userId)
    .executeTakeFirstOrThrow();
  const page = await runtime.app.inject({ method: 'GET', url: '/dashboard/forgot' });
  const cookie = page.cookies.map((c) => `${c.name}=${c.value}`).join('; ');
  const asked = await runtime.app.inject({
    method: 'POST',
    url: '/dashboard/forgot',
    headers: { cookie, 'content-type': 'application/x-www-form-urlencoded' },
    payload: new URLSearchParams({ email, csrf: Browser.csrfOf(page.body) }).toString(),
  });
  assert.equal(asked.statusCode, 200);
  const mail = await runtime.deps.db
    .selectFrom('mail_messages')
    .select('data')
    .where('template', '=', 'merchant_password_reset')
    .executeTakeFirstOrThrow();
  const { token } = JSON.parse(runtime.deps.secrets.open(mail.data));
  assert.ok(!mail.data.includes(token), 'sealed at rest');
  assert.equal((await runtime.app.inject({ method: 'GET', url: `/dashboard/reset/${token}` })).statusCode, 200);
  assert.ok(
    lines.some((line) => line.includes('/dashboard/forgot')),
    'requests are logged',
  );
  assert.ok(!lines.some((line) => line.includes(token)), 'the token is not');
});

test('the dashboard opens in test mode until something is live, then in the mode last looked at', async (t) => {
  const world = await dashWorld(t, { workers: false });
  const [kowhai] = world.merchants;
  const browser = await logIn(world, kowhai!);
  const opened = async () => (await browser.request('/dashboard')).headers.get('location');
  assert.equal(await opened(), '/dashboard/test', 'nothing live yet: where everything tried out is');
  const live = await kowhai!.live.post('/v1/requests', {
    bank_account_id: kowhai!.bankAccountId,
    amount: '4.00 NZD',
    message: 'Flat white',
  });
  assert.equal(live.status, 201, live.text);
  assert.equal(await opened(), '/dashboard/live', 'a live request: live');
  assert.equal((await browser.request('/dashboard/test/requests')).status, 200);
  assert.equal(await opened(), '/dashboard/test', 'the mode last looked at');
  const line = (await browser.request('/dashboard/live')).setCookies.find((l) => l.startsWith('tono_dash_mode='));
  assert.match(line ?? '', /^tono_dash_mode=live; Max-Age=31536000; Path=\/dashboard; HttpOnly; SameSite=Lax$/);
  assert.equal(await opened(), '/dashboard/live');
});
