import { test } from 'node:test';
import assert from 'node:assert/strict';
import { TOTP } from 'otpauth';
import { Browser } from '../../../test/payer.ts';
import { dashWorld, PASSWORD, textOf, type DashMerchant, type DashWorld } from '../../../test/dashboard.ts';
import { createTestMerchant } from '../../../test/helpers.ts';
import { openStoreDb, processStore, runCli } from '../../../test/process.ts';
import type { Db } from '../../store/db.ts';
import { shiftedClock, systemClock } from '../../shared/time.ts';
import { TWO_FACTOR_LIMITS } from './dashboard.two-factor.ts';
import { chainCommitted } from '../audit/audit.service.ts';
import { sha256Hex } from '../../shared/crypto.ts';

/** The id of a merchant's first owner: the member every two-factor row of these tests belongs to. */
const ownerIdOf = async (db: Db, userId: string) =>
  (
    await db
      .selectFrom('members')
      .select('id')
      .where('user_id', '=', userId)
      .where('role', '=', 'owner')
      .executeTakeFirstOrThrow()
  ).id;

// Two-factor sign-in over HTTP on SQLite and PostgreSQL: enrolment from the account page, codes at
// sign-in (wrong, right, reused, from recovery), the limits, the team's requirement, and the
// operator's reset from the CLI.

const STEP_MS = 30_000;

/** Moves the service's clock on by whole TOTP steps, so each code below is of a step not used yet. */
function advance(world: DashWorld, steps = 1): void {
  const offset = (world.app.deps.clock.offsetMs ?? 0) + steps * STEP_MS;
  world.app.deps.clock = shiftedClock(systemClock, offset);
}

/** The code an authenticator app shows now (the service's now). */
const codeOf = (world: DashWorld, secret: string, atMs = world.app.deps.clock.now()) =>
  new TOTP({ secret, algorithm: 'SHA1', digits: 6, period: 30 }).generate({ timestamp: atMs });

/** Logs in with the password only; the browser then holds whatever the login answered with. */
async function password(world: DashWorld, merchant: DashMerchant, next?: string) {
  const browser = new Browser(world.baseUrl);
  const page = await browser.request('/dashboard/login');
  const done = await browser.request('/dashboard/login', {
    form: { email: merchant.email, password: PASSWORD, csrf: Browser.csrfOf(page.text), ...(next ? { next } : {}) },
  });
  return { browser, done };
}

async function submitCode(browser: Browser, code: string) {
  const page = await browser.request('/dashboard/login/two-factor');
  if (page.status !== 200) return page;
  return browser.request('/dashboard/login/two-factor', { form: { code, csrf: Browser.csrfOf(page.text) } });
}

const secretOn = (html: string) => /<code id="totp-secret">([A-Z2-7 ]+)<\/code>/.exec(html)![1].replace(/ /g, '');
const codesOn = (html: string) =>
  [...html.matchAll(/<li><code>([0-9a-z]{5}-[0-9a-z]{5})<\/code><\/li>/g)].map((m) => m[1]);

/** Sets up two-factor sign-in from the account page of a signed-in browser: the secret and the recovery codes. */
async function enrol(world: DashWorld, browser: Browser): Promise<{ secret: string; codes: string[] }> {
  const setup = await browser.request('/dashboard/account/two-factor/setup');
  assert.equal(setup.status, 200);
  const secret = secretOn(setup.text);
  const done = await browser.request('/dashboard/account/two-factor/setup', {
    form: { code: codeOf(world, secret), csrf: Browser.csrfOf(setup.text) },
  });
  assert.equal(done.status, 303, done.text);
  const shown = await browser.request(done.headers.get('location')!);
  assert.equal(shown.status, 200);
  return { secret, codes: codesOn(shown.text) };
}

async function signedIn(world: DashWorld, merchant: DashMerchant): Promise<Browser> {
  const { browser, done } = await password(world, merchant);
  assert.equal(done.status, 303);
  assert.equal(done.headers.get('location'), '/dashboard');
  return browser;
}

test('enrolment: a sealed secret shown with its QR code, on only after a right current code; ten recovery codes shown once, stored hashed', async (t) => {
  const world = await dashWorld(t, { workers: false });
  const [kowhai] = world.merchants;
  const browser = await signedIn(world, kowhai);
  const account = await browser.request('/dashboard/account');
  assert.match(textOf(account.text), /Two-factor sign-in Off\./);

  const setup = await browser.request('/dashboard/account/two-factor/setup');
  assert.equal(setup.status, 200);
  assert.match(
    setup.text,
    /<img src="data:image\/gif;base64,[A-Za-z0-9+/=]+" alt="QR code of your two-factor sign-in key"/,
  );
  const secret = secretOn(setup.text);
  assert.match(secret, /^[A-Z2-7]{32}$/);
  const row = await world.app.deps.db.selectFrom('two_factor_members').selectAll().executeTakeFirstOrThrow();
  assert.equal(row.member_id, await ownerIdOf(world.app.deps.db, kowhai.userId));
  assert.match(row.totp_secret_sealed, /^sealed:v1:/);
  assert.equal(world.app.deps.secrets.open(row.totp_secret_sealed), secret);
  assert.equal(row.enabled_at, null);
  // reloading shows the same secret, until it is confirmed
  assert.equal(secretOn((await browser.request('/dashboard/account/two-factor/setup')).text), secret);

  const csrf = Browser.csrfOf(setup.text);
  const malformed = await browser.request('/dashboard/account/two-factor/setup', { form: { code: '12ab', csrf } });
  assert.equal(malformed.status, 400);
  assert.match(textOf(malformed.text), /Enter the 6-digit code your authenticator app shows\./);
  const wrongCode = String((Number(codeOf(world, secret)) + 1) % 1_000_000).padStart(6, '0');
  const wrong = await browser.request('/dashboard/account/two-factor/setup', { form: { code: wrongCode, csrf } });
  assert.equal(wrong.status, 400);
  assert.match(textOf(wrong.text), /That code is not right/);
  assert.match(textOf(wrong.text), /Two-factor sign-in is not on yet/);
  const forged = await browser.request('/dashboard/account/two-factor/setup', {
    form: { code: codeOf(world, secret), csrf: 'not-the-token' },
  });
  assert.equal(forged.status, 403);
  assert.equal(
    (await world.app.deps.db.selectFrom('two_factor_members').select('enabled_at').executeTakeFirstOrThrow())
      .enabled_at,
    null,
  );

  const done = await browser.request('/dashboard/account/two-factor/setup', {
    form: { code: codeOf(world, secret), csrf },
  });
  assert.equal(done.status, 303);
  const shownAt = done.headers.get('location')!;
  assert.match(shownAt, /^\/dashboard\/account\/two-factor\/recovery-codes\/[0-9a-f-]{36}$/);
  const shown = await browser.request(shownAt);
  assert.equal(shown.status, 200);
  const codes = codesOn(shown.text);
  assert.equal(codes.length, 10);
  assert.equal(new Set(codes).size, 10);
  const again = await browser.request(shownAt);
  assert.equal(again.status, 404);
  assert.doesNotMatch(again.text, new RegExp(codes[0]));
  assert.match(textOf(again.text), /These recovery codes were already shown/);
  // another browser of the same merchant cannot see them either
  const stored = JSON.stringify(await world.app.deps.db.selectFrom('two_factor_recovery_codes').selectAll().execute());
  assert.equal(JSON.parse(stored).length, 10);
  for (const code of codes) assert.ok(!stored.includes(code) && !stored.includes(code.replace('-', '')), 'only hashes');
  const sessions = JSON.stringify(await world.app.deps.db.selectFrom('dashboard_sessions').selectAll().execute());
  for (const code of codes) assert.ok(!sessions.includes(code), 'nothing of them is left in the session');

  // on now: the secret is never shown again
  const later = await browser.request('/dashboard/account/two-factor/setup');
  assert.equal(later.status, 303);
  assert.equal(later.headers.get('location'), '/dashboard/account');
  const on = textOf((await browser.request('/dashboard/account')).text);
  assert.match(on, /Two-factor sign-in On\./);
  assert.match(on, /Recovery codes left: 10 of 10/);
  assert.ok(!on.includes(secret));
});

test('sign-in with two-factor: no session after the password; a wrong code is refused, a right one opens a new session once, a used one is refused', async (t) => {
  const world = await dashWorld(t, { workers: false });
  const [kowhai] = world.merchants;
  const { secret } = await enrol(world, await signedIn(world, kowhai));
  const before = (await world.app.deps.db.selectFrom('dashboard_sessions').selectAll().execute()).length;
  advance(world);

  const { browser, done } = await password(world, kowhai, '/dashboard/test/payments');
  assert.equal(done.status, 303);
  assert.equal(done.headers.get('location'), '/dashboard/login/two-factor');
  assert.equal(browser.cookie('tono_dash'), undefined, 'no session yet');
  const pendingCookie = done.setCookies.find((line) => line.startsWith('tono_dash_2fa='))!;
  assert.match(pendingCookie, /; Max-Age=300; Path=\/dashboard; HttpOnly; SameSite=Lax$/);
  const token = browser.cookie('tono_dash_2fa')!;
  const pending = await world.app.deps.db.selectFrom('two_factor_pending_sign_ins').selectAll().execute();
  assert.equal(pending.length, 1);
  assert.ok(!JSON.stringify(pending).includes(token), 'only the hash is stored');
  assert.equal(pending[0].member_id, await ownerIdOf(world.app.deps.db, kowhai.userId));
  assert.equal((await world.app.deps.db.selectFrom('dashboard_sessions').selectAll().execute()).length, before);
  // the pending sign-in opens nothing
  assert.equal((await browser.request('/dashboard/test')).status, 303);
  assert.match(
    (await browser.request('/dashboard/account')).headers.get('location') ?? '',
    /^\/dashboard\/login(\?|$)/,
  );

  const page = await browser.request('/dashboard/login/two-factor');
  assert.equal(page.status, 200);
  assert.match(page.text, /<label for="code">Code<\/label>/);
  const wrong = await submitCode(browser, String((Number(codeOf(world, secret)) + 7) % 1_000_000).padStart(6, '0'));
  assert.equal(wrong.status, 400);
  assert.match(textOf(wrong.text), /That code is not right, or it was used already/);
  const malformed = await submitCode(browser, 'hello');
  assert.equal(malformed.status, 400);
  assert.match(textOf(malformed.text), /or one of your recovery codes/);

  const code = codeOf(world, secret);
  const right = await submitCode(browser, code);
  assert.equal(right.status, 303, right.text);
  assert.equal(right.headers.get('location'), '/dashboard/test/payments');
  assert.ok(browser.cookie('tono_dash'));
  assert.equal(browser.cookie('tono_dash_2fa'), undefined);
  assert.equal((await browser.request('/dashboard/test')).status, 200);
  // the spent pending sign-in cannot be used again, even with a new code
  const replay = new Browser(world.baseUrl);
  replay.cookies.set('tono_dash_2fa', token);
  assert.equal((await replay.request('/dashboard/login/two-factor')).headers.get('location'), '/dashboard/login');

  // the same code again, in a new sign-in within its window: refused
  const second = await password(world, kowhai);
  const reused = await submitCode(second.browser, code);
  assert.equal(reused.status, 400);
  assert.match(textOf(reused.text), /or it was used already/);
  assert.equal(second.browser.cookie('tono_dash'), undefined);
  // the next step's code is taken (one step of drift either way is allowed)
  const ahead = await submitCode(second.browser, codeOf(world, secret, world.app.deps.clock.now() + STEP_MS));
  assert.equal(ahead.status, 303);
  // and now the code of the step before it is refused too: it is older than the last one taken
  advance(world);
  const third = await password(world, kowhai);
  assert.equal(
    (await submitCode(third.browser, codeOf(world, secret, world.app.deps.clock.now() - STEP_MS))).status,
    400,
  );

  // a pending sign-in lasts 5 minutes
  const slow = await password(world, kowhai);
  advance(world, 11);
  const late = await slow.browser.request('/dashboard/login/two-factor');
  assert.equal(late.status, 303);
  assert.equal(late.headers.get('location'), '/dashboard/login');
});

test('two uses of one code at once: exactly one signs in', async (t) => {
  const world = await dashWorld(t, { workers: false });
  const [kowhai] = world.merchants;
  const { secret } = await enrol(world, await signedIn(world, kowhai));
  advance(world);
  const browsers = await Promise.all([password(world, kowhai), password(world, kowhai), password(world, kowhai)]);
  const pages = await Promise.all(browsers.map(({ browser }) => browser.request('/dashboard/login/two-factor')));
  const code = codeOf(world, secret);
  const replies = await Promise.all(
    browsers.map(({ browser }, i) =>
      browser.request('/dashboard/login/two-factor', { form: { code, csrf: Browser.csrfOf(pages[i].text) } }),
    ),
  );
  assert.deepEqual(replies.map((reply) => reply.status).sort(), [303, 400, 400]);
});

test('recovery codes: each signs in once; a new set ends the old one; turning off needs a code', async (t) => {
  const world = await dashWorld(t, { workers: false });
  const [kowhai] = world.merchants;
  const account = await signedIn(world, kowhai);
  const { secret, codes } = await enrol(world, account);

  const first = await password(world, kowhai);
  const used = await submitCode(first.browser, ` ${codes[0].toUpperCase().replace('-', ' ')} `);
  assert.equal(used.status, 303, 'typed in capitals with a space: still the code');
  const second = await password(world, kowhai);
  assert.equal((await submitCode(second.browser, codes[0])).status, 400, 'used once already');
  assert.equal((await submitCode(second.browser, codes[1])).status, 303);
  assert.match(textOf((await account.request('/dashboard/account')).text), /Recovery codes left: 8 of 10/);

  // a new set needs a current code; the old codes stop working
  const ask = await account.request('/dashboard/account/two-factor/new-recovery-codes');
  assert.equal(ask.status, 200);
  const refused = await account.request('/dashboard/account/two-factor/new-recovery-codes', {
    form: { code: '000000', csrf: Browser.csrfOf(ask.text) },
  });
  assert.equal(refused.status, 400);
  assert.match(textOf(refused.text), /Nothing was changed/);
  advance(world);
  const made = await account.request('/dashboard/account/two-factor/new-recovery-codes', {
    form: { code: codeOf(world, secret), csrf: Browser.csrfOf(ask.text) },
  });
  assert.equal(made.status, 303);
  const fresh = codesOn((await account.request(made.headers.get('location')!)).text);
  assert.equal(fresh.length, 10);
  const third = await password(world, kowhai);
  assert.equal((await submitCode(third.browser, codes[2])).status, 400, 'an old code no longer works');
  assert.equal((await submitCode(third.browser, fresh[0])).status, 303);

  // turning it off: a wrong code changes nothing; a right one turns it off
  const off = await account.request('/dashboard/account/two-factor/off');
  assert.equal(off.status, 200);
  const wrongOff = await account.request('/dashboard/account/two-factor/off', {
    form: {
      code: String((Number(codeOf(world, secret)) + 1) % 1_000_000).padStart(6, '0'),
      csrf: Browser.csrfOf(off.text),
    },
  });
  assert.equal(wrongOff.status, 400);
  assert.equal((await world.app.deps.db.selectFrom('two_factor_members').selectAll().execute()).length, 1);
  advance(world);
  const turnedOff = await account.request('/dashboard/account/two-factor/off', {
    form: { code: codeOf(world, secret), csrf: Browser.csrfOf(off.text) },
  });
  assert.equal(turnedOff.status, 303);
  assert.equal(turnedOff.headers.get('location'), '/dashboard/account?done=two-factor-off');
  assert.match(
    textOf((await account.request('/dashboard/account?done=two-factor-off')).text),
    /Two-factor sign-in is off\./,
  );
  assert.equal((await world.app.deps.db.selectFrom('two_factor_members').selectAll().execute()).length, 0);
  assert.equal((await world.app.deps.db.selectFrom('two_factor_recovery_codes').selectAll().execute()).length, 0);
  await signedIn(world, kowhai);

  // every change to the second step, and every wrong code at sign-in or for a change, is in the team's audit trail
  const ownerId = await ownerIdOf(world.app.deps.db, kowhai.userId);
  await chainCommitted(world.app.deps.db);
  const trail = await world.app.deps.db
    .selectFrom('audit_events')
    .select(['action', 'actor_id', 'object_id', 'summary'])
    .where('user_id', '=', kowhai.userId)
    .where('action', 'in', [
      'member.two_factor_enable',
      'member.recovery_codes_renew',
      'member.two_factor_disable',
      'member.sign_in_failed',
      'member.change_refused',
    ])
    .orderBy('seq')
    .execute();
  assert.deepEqual(
    trail.map((r) => [r.action, r.actor_id, r.object_id, r.summary]),
    [
      ['member.two_factor_enable', ownerId, ownerId, '{}'],
      ['member.sign_in_failed', ownerId, ownerId, '{"step":"code"}'],
      ['member.change_refused', ownerId, ownerId, '{"change":"member.recovery_codes_renew","step":"code"}'],
      ['member.recovery_codes_renew', ownerId, ownerId, '{}'],
      ['member.sign_in_failed', ownerId, ownerId, '{"step":"code"}'],
      ['member.change_refused', ownerId, ownerId, '{"change":"member.two_factor_disable","step":"code"}'],
      ['member.two_factor_disable', ownerId, ownerId, '{}'],
    ],
  );
});

test('wrong codes are limited per member (then the right one is refused too) and per client address', async (t) => {
  const world = await dashWorld(t, { workers: false });
  const [kowhai, tui] = world.merchants;
  const { secret } = await enrol(world, await signedIn(world, kowhai));
  advance(world);
  const { browser } = await password(world, kowhai);
  for (let i = 0; i < TWO_FACTOR_LIMITS.byMember.max; i++)
    assert.equal((await submitCode(browser, `00000${i}`)).status, 400, `wrong code ${i + 1}`);
  const locked = await submitCode(browser, codeOf(world, secret));
  assert.equal(locked.status, 429);
  assert.match(textOf(locked.text), /Too many wrong codes\. Codes are refused for 15 minutes\./);
  assert.ok(Number(locked.headers.get('retry-after')) > 0);
  assert.equal(browser.cookie('tono_dash'), undefined);
  // all at once: no more than the limit are checked
  const tuiSecret = (await enrol(world, await signedIn(world, tui))).secret;
  advance(world);
  // the passwords one after another (a flood of password checks is told to come back), the codes at once
  const guesses: Awaited<ReturnType<typeof password>>[] = [];
  for (let i = 0; i < 12; i++) guesses.push(await password(world, tui));
  const replies = await Promise.all(guesses.map(({ browser }, i) => submitCode(browser, `12345${i % 10}`)));
  const checked = replies.filter((reply) => reply.status === 400).length;
  assert.equal(replies.filter((reply) => reply.status === 429).length, 12 - checked, 'the rest are refused');
  assert.ok(checked <= TWO_FACTOR_LIMITS.byMember.max, `${checked} checked`);
  assert.equal((await submitCode(guesses[0].browser, codeOf(world, tuiSecret))).status, 429);

  // from one address across members: 20 wrong codes, then every member's code from it is refused
  const more = [];
  for (let i = 0; i < 3; i++) more.push(await createTestMerchant(world.app, `Member ${i}`));
  let wrongSoFar = TWO_FACTOR_LIMITS.byMember.max + checked;
  for (const created of more) {
    const email = (
      await world.app.deps.db
        .selectFrom('users')
        .select('email')
        .where('id', '=', created.userId)
        .executeTakeFirstOrThrow()
    ).email;
    const member = { ...created, email } as DashMerchant;
    const memberSecret = (await enrol(world, await signedIn(world, member))).secret;
    advance(world);
    const attempt = await password(world, member);
    for (let i = 0; i < 4 && wrongSoFar < TWO_FACTOR_LIMITS.byClient.max; i++, wrongSoFar++)
      assert.equal((await submitCode(attempt.browser, `99999${i}`)).status, 400);
    if (wrongSoFar >= TWO_FACTOR_LIMITS.byClient.max) {
      assert.equal(
        (await submitCode(attempt.browser, codeOf(world, memberSecret))).status,
        429,
        'the address is locked',
      );
      return;
    }
  }
  assert.fail(`only ${wrongSoFar} wrong codes were sent`);
});

test("the team's requirement: only with your own two-factor on; members without it set it up after their password, before anything else", async (t) => {
  const world = await dashWorld(t, { workers: false });
  const [kowhai] = world.merchants;
  const account = await signedIn(world, kowhai);
  const page = await account.request('/dashboard/account');
  assert.match(textOf(page.text), /Only the team's owner may change this\./);
  const early = await account.request('/dashboard/account/two-factor/requirement', {
    form: { required: 'yes', csrf: Browser.csrfOf(page.text) },
  });
  assert.equal(early.headers.get('location'), '/dashboard/account?done=two-factor-own-first');
  assert.equal((await world.app.deps.db.selectFrom('two_factor_team_settings').selectAll().execute()).length, 0);
  const bad = await account.request('/dashboard/account/two-factor/requirement', {
    form: { required: 'maybe', csrf: Browser.csrfOf(page.text) },
  });
  assert.equal(bad.status, 400);
  const forged = await account.request('/dashboard/account/two-factor/requirement', { form: { required: 'yes' } });
  assert.equal(forged.status, 403);

  const { secret } = await enrol(world, account);
  const set = await account.request('/dashboard/account/two-factor/requirement', {
    form: { required: 'yes', csrf: Browser.csrfOf(page.text) },
  });
  assert.equal(set.headers.get('location'), '/dashboard/account?done=two-factor-required');
  assert.match(
    textOf((await account.request(set.headers.get('location')!)).text),
    /Your team requires two-factor sign-in\./,
  );
  // while required, it cannot be turned off
  advance(world);
  const off = await account.request('/dashboard/account/two-factor/off');
  const refused = await account.request('/dashboard/account/two-factor/off', {
    form: { code: codeOf(world, secret), csrf: Browser.csrfOf(off.text) },
  });
  assert.equal(refused.status, 409);
  assert.match(textOf(refused.text), /Your team requires two-factor sign-in, so it cannot be turned off/);

  // a member without it (here: after the operator's reset) is taken to set-up right after the password
  await world.app.deps.db.deleteFrom('two_factor_members').execute();
  await world.app.deps.db.deleteFrom('two_factor_recovery_codes').execute();
  const { browser, done } = await password(world, kowhai, '/dashboard/test');
  assert.equal(done.headers.get('location'), '/dashboard/login/two-factor/setup');
  assert.equal(browser.cookie('tono_dash'), undefined);
  assert.equal((await browser.request('/dashboard/test')).status, 303, 'nothing else opens');
  assert.equal(
    (await browser.request('/dashboard/login/two-factor')).headers.get('location'),
    '/dashboard/login/two-factor/setup',
    'no code page without an authenticator',
  );
  const setup = await browser.request('/dashboard/login/two-factor/setup');
  assert.equal(setup.status, 200);
  assert.match(textOf(setup.text), /Your team requires two-factor sign-in\. Set it up to finish logging in\./);
  const newSecret = secretOn(setup.text);
  assert.notEqual(newSecret, secret);
  const wrong = await browser.request('/dashboard/login/two-factor/setup', {
    form: { code: '000000', csrf: Browser.csrfOf(setup.text) },
  });
  assert.equal(wrong.status, 400);
  assert.equal(browser.cookie('tono_dash'), undefined);
  advance(world);
  const finished = await browser.request('/dashboard/login/two-factor/setup', {
    form: { code: codeOf(world, newSecret), csrf: Browser.csrfOf(setup.text) },
  });
  assert.equal(finished.status, 303, finished.text);
  assert.match(finished.headers.get('location')!, /^\/dashboard\/account\/two-factor\/recovery-codes\//);
  assert.ok(browser.cookie('tono_dash'), 'signed in now');
  assert.equal(codesOn((await browser.request(finished.headers.get('location')!)).text).length, 10);
  assert.equal((await browser.request('/dashboard/test')).status, 200);
  // the next sign-in asks for a code
  advance(world);
  const next = await password(world, kowhai);
  assert.equal(next.done.headers.get('location'), '/dashboard/login/two-factor');
  assert.equal((await submitCode(next.browser, codeOf(world, newSecret))).status, 303);
});

test("the team's requirement holds for a new member too: accepting an invitation leads to set-up, not a session", async (t) => {
  const world = await dashWorld(t);
  const [kowhai] = world.merchants;
  const db = world.app.deps.db;
  const owner = await signedIn(world, kowhai);
  await enrol(world, owner);
  const page = await owner.request('/dashboard/account');
  const csrf = Browser.csrfOf(page.text);
  const required = await owner.request('/dashboard/account/two-factor/requirement', {
    form: { required: 'yes', csrf },
  });
  assert.equal(required.headers.get('location'), '/dashboard/account?done=two-factor-required');
  const sent = await owner.request('/dashboard/team/invitations', {
    form: { email: 'nika@example.com', role: 'viewer', csrf },
  });
  assert.equal(sent.status, 303, sent.text);
  const mail = await world.smtp.waitFor((m) => m.to === 'nika@example.com');
  const link = new RegExp(`${world.baseUrl}(/dashboard/invitations/[A-Za-z0-9_-]+)`).exec(mail.text)![1];

  const browser = new Browser(world.baseUrl);
  const form = await browser.request(link);
  const joined = await browser.request(link, {
    form: { csrf: Browser.csrfOf(form.text), name: 'Nika', password: PASSWORD },
  });
  assert.equal(joined.status, 303, joined.text);
  assert.equal(joined.headers.get('location'), '/dashboard/login/two-factor/setup');
  assert.equal(browser.cookie('tono_dash'), undefined, 'no session before set-up');
  const nikaId = (
    await db.selectFrom('members').select('id').where('email', '=', 'nika@example.com').executeTakeFirstOrThrow()
  ).id;
  assert.equal(
    (await db.selectFrom('dashboard_sessions').select('id_hash').where('member_id', '=', nikaId).execute()).length,
    0,
  );
  assert.equal((await browser.request('/dashboard/test')).status, 303, 'nothing else opens');

  const setup = await browser.request('/dashboard/login/two-factor/setup');
  assert.equal(setup.status, 200);
  assert.match(textOf(setup.text), /Your team requires two-factor sign-in\. Set it up to finish logging in\./);
  const finished = await browser.request('/dashboard/login/two-factor/setup', {
    form: { code: codeOf(world, secretOn(setup.text)), csrf: Browser.csrfOf(setup.text) },
  });
  assert.equal(finished.status, 303, finished.text);
  assert.match(finished.headers.get('location')!, /^\/dashboard\/account\/two-factor\/recovery-codes\//);
  assert.equal((await browser.request('/dashboard/test')).status, 200, 'signed in once it is set up');
});

test('cli member reset-2fa removes the member’s authenticator and recovery codes and ends their sessions', async (t) => {
  const store = await processStore(t, { migrated: true });
  assert.equal((await runCli(store, ['migrate'])).status, 0);
  const created = await runCli(store, [
    'merchant',
    'create',
    '--name',
    'Kiwi',
    '--email',
    'owner@kiwi.example',
    '--password',
    'a long enough password',
    '--json',
  ]);
  const userId = JSON.parse(created.stdout).user_id as string;
  const db = openStoreDb(store);
  t.after(() => db.destroy());
  const now = Date.now();
  const memberId = await ownerIdOf(db, userId);
  await db
    .insertInto('two_factor_members')
    .values({
      member_id: memberId,
      totp_secret_sealed: 'sealed:v1:x',
      enabled_at: now,
      last_step: null,
      created_at: now,
      updated_at: now,
    })
    .execute();
  await db
    .insertInto('two_factor_recovery_codes')
    .values({ member_id: memberId, code_hash: 'h', created_at: now, used_at: null })
    .execute();
  await db
    .insertInto('dashboard_sessions')
    .values({
      id_hash: 'session-hash',
      user_id: userId,
      member_id: memberId,
      csrf_token: 'c',
      created_at: now,
      last_seen_at: now,
      expires_at: now + 60_000,
      ended_at: null,
      user_agent: null,
      shown_once_sealed: null,
    })
    .execute();

  const missing = await runCli(store, ['member', 'reset-2fa']);
  assert.equal(missing.status, 1);
  assert.match(missing.stderr, /member reset-2fa needs --email/);
  const unknown = await runCli(store, ['member', 'reset-2fa', '--email', 'nobody@kiwi.example']);
  assert.equal(unknown.status, 1);
  assert.match(unknown.stderr, /no member with email nobody@kiwi\.example/);
  assert.equal((await db.selectFrom('two_factor_members').selectAll().execute()).length, 1, 'nothing changed');

  const reset = await runCli(store, ['member', 'reset-2fa', '--email', 'Owner@Kiwi.example', '--json']);
  assert.equal(reset.status, 0, reset.stderr);
  assert.deepEqual(JSON.parse(reset.stdout), { member_id: memberId, two_factor_removed: true, sessions_ended: true });
  assert.equal((await db.selectFrom('two_factor_members').selectAll().execute()).length, 0);
  assert.equal((await db.selectFrom('two_factor_recovery_codes').selectAll().execute()).length, 0);
  const session = await db.selectFrom('dashboard_sessions').select('ended_at').executeTakeFirstOrThrow();
  assert.notEqual(session.ended_at, null);
  const again = await runCli(store, ['member', 'reset-2fa', '--email', 'owner@kiwi.example']);
  assert.equal(again.status, 0);
  assert.match(again.stdout, /had no two-factor sign-in/);
});

test('passkeys over HTTP: only with two-factor on; adding or removing one needs a current code; an answer that does not verify adds nothing and counts as a wrong code at sign-in; another member’s passkey is not found; turning two-factor off removes them', async (t) => {
  const world = await dashWorld(t, { workers: false });
  const [kowhai, tui] = world.merchants;
  let account = await signedIn(world, kowhai);
  let csrf = Browser.csrfOf((await account.request('/dashboard/account')).text);
  const atAddress = await account.request('/dashboard/account/passkeys/options', { json: { csrf } });
  assert.equal(atAddress.status, 409, 'browsers take no IP address as a relying party');
  assert.match(JSON.parse(atAddress.text).error, /need the dashboard at a host name/);
  // As the docs say for a laptop: the service at localhost.
  world.baseUrl = world.baseUrl.replace('127.0.0.1', 'localhost');
  world.app.deps.config.publicBaseUrl = world.baseUrl;
  account = await signedIn(world, kowhai);
  csrf = Browser.csrfOf((await account.request('/dashboard/account')).text);

  const early = await account.request('/dashboard/account/passkeys/options', { json: { csrf } });
  assert.equal(early.status, 409);
  assert.match(JSON.parse(early.text).error, /Set up two-factor sign-in with an authenticator app first/);
  assert.equal((await account.request('/dashboard/account/passkeys/options', { json: {} })).status, 403, 'CSRF');

  const { secret } = await enrol(world, account);
  // Adding one changes the second step: a session alone is not enough, a current code is needed.
  const noCode = await account.request('/dashboard/account/passkeys/options', { json: { csrf } });
  assert.equal(noCode.status, 400);
  assert.match(
    JSON.parse(noCode.text).error,
    /Enter the 6-digit code .* or one of your recovery codes\. Nothing was added\./,
  );
  const wrongCode = String((Number(codeOf(world, secret)) + 3) % 1_000_000).padStart(6, '0');
  const wrongAdd = await account.request('/dashboard/account/passkeys/options', { json: { csrf, code: wrongCode } });
  assert.equal(wrongAdd.status, 400);
  assert.match(JSON.parse(wrongAdd.text).error, /That code is not right/);
  const ownerId = await ownerIdOf(world.app.deps.db, kowhai.userId);
  const challengeOf = async () =>
    (
      await world.app.deps.db
        .selectFrom('two_factor_members')
        .select('passkey_challenge')
        .where('member_id', '=', ownerId)
        .executeTakeFirstOrThrow()
    ).passkey_challenge;
  assert.equal(await challengeOf(), null, 'no challenge without a right code');
  const counted = await world.app.deps.db
    .selectFrom('attempt_windows')
    .select('attempts')
    .where('scope', '=', TWO_FACTOR_LIMITS.byMember.scope)
    .where('key_hash', '=', sha256Hex(ownerId))
    .executeTakeFirstOrThrow();
  assert.equal(counted.attempts, 1, 'the wrong code counts against the member, as any wrong code does');
  advance(world);
  const options = await account.request('/dashboard/account/passkeys/options', {
    json: { csrf, code: codeOf(world, secret) },
  });
  assert.equal(options.status, 200, options.text);
  const asked = JSON.parse(options.text);
  assert.equal(asked.rp.id, 'localhost');
  assert.match(asked.challenge, /^[A-Za-z0-9_-]{20,}$/);
  assert.deepEqual(
    asked.pubKeyCredParams.map((p: { alg: number }) => p.alg),
    [-8, -7, -257],
  );

  const forged = {
    id: 'AAAA',
    rawId: 'AAAA',
    type: 'public-key',
    response: { clientDataJSON: 'e30', attestationObject: 'oA' },
    clientExtensionResults: {},
  };
  const unnamed = await account.request('/dashboard/account/passkeys', { json: { csrf, name: ' ', response: forged } });
  assert.equal(unnamed.status, 400);
  assert.match(JSON.parse(unnamed.text).error, /Give the passkey a name/);
  const refused = await account.request('/dashboard/account/passkeys', {
    json: { csrf, name: 'Key', response: forged },
  });
  assert.equal(refused.status, 400);
  assert.match(JSON.parse(refused.text).error, /did not verify/);
  const again = await account.request('/dashboard/account/passkeys', { json: { csrf, name: 'Key', response: forged } });
  assert.match(JSON.parse(again.text).error, /did not verify/, 'the challenge was used by the first answer');
  assert.equal((await world.app.deps.db.selectFrom('two_factor_passkeys').selectAll().execute()).length, 0);

  // At sign-in: no passkey, so no passkey options; a forged answer counts as a wrong code.
  const { browser } = await password(world, kowhai);
  const codePage = await browser.request('/dashboard/login/two-factor');
  assert.doesNotMatch(codePage.text, /Use a passkey/);
  const preCsrf = Browser.csrfOf(codePage.text);
  assert.equal(
    (await browser.request('/dashboard/login/two-factor/passkey/options', { json: { csrf: preCsrf } })).status,
    400,
  );
  const wrong = await browser.request('/dashboard/login/two-factor/passkey', {
    json: { csrf: preCsrf, response: forged },
  });
  assert.equal(wrong.status, 400);
  assert.match(JSON.parse(wrong.text).error, /That passkey did not sign in/);
  await chainCommitted(world.app.deps.db);
  const failed = await world.app.deps.db
    .selectFrom('audit_events')
    .select('summary')
    .where('action', '=', 'member.sign_in_failed')
    .execute();
  assert.deepEqual(
    failed.map((r) => r.summary),
    ['{"step":"passkey"}'],
  );
  assert.equal((await submitCode(browser, codeOf(world, secret, world.app.deps.clock.now() + STEP_MS))).status, 303);

  // Another member's passkey is not found to this member, and turning two-factor off removes them.
  const tuiOwner = await ownerIdOf(world.app.deps.db, tui.userId);
  for (const [id, member] of [
    ['passkey_mine', ownerId],
    ['passkey_theirs', tuiOwner],
  ])
    await world.app.deps.db
      .insertInto('two_factor_passkeys')
      .values({
        id,
        member_id: member,
        credential_id: `cred-${id}`,
        public_key: 'pA',
        counter: 0,
        transports: '[]',
        name: `${id} <b>`,
        created_at: 0,
        last_used_at: null,
      })
      .execute();
  const listed = await account.request('/dashboard/account');
  assert.match(listed.text, /passkey_mine &lt;b&gt;/);
  assert.doesNotMatch(listed.text, /passkey_theirs/);
  assert.equal(
    (await account.request('/dashboard/account/passkeys/passkey_theirs/delete', { form: { csrf } })).status,
    404,
  );
  assert.equal((await account.request('/dashboard/account/passkeys/passkey_theirs/delete')).status, 404);
  // Removing one needs a current code too; without a right one nothing is removed.
  const mineLeft = async () =>
    (await world.app.deps.db.selectFrom('two_factor_passkeys').select('id').where('id', '=', 'passkey_mine').execute())
      .length;
  const bare = await account.request('/dashboard/account/passkeys/passkey_mine/delete', { form: { csrf } });
  assert.equal(bare.status, 400);
  assert.match(
    textOf(bare.text),
    /Enter the 6-digit code your authenticator app shows, or one of your recovery codes\. Nothing was changed\./,
  );
  const confirm = await account.request('/dashboard/account/passkeys/passkey_mine/delete');
  assert.equal(confirm.status, 200);
  assert.match(textOf(confirm.text), /Remove the passkey passkey_mine <b>\?/);
  assert.doesNotMatch(confirm.text, /passkey_mine <b>/, 'the name is escaped');
  advance(world, 2);
  const wrongRemove = await account.request('/dashboard/account/passkeys/passkey_mine/delete', {
    form: {
      csrf: Browser.csrfOf(confirm.text),
      code: String((Number(codeOf(world, secret)) + 5) % 1_000_000).padStart(6, '0'),
    },
  });
  assert.equal(wrongRemove.status, 400);
  assert.match(textOf(wrongRemove.text), /That code is not right, or it was used already\. .* Nothing was changed\./);
  assert.equal(await mineLeft(), 1, 'a wrong code removes nothing');
  const removed = await account.request('/dashboard/account/passkeys/passkey_mine/delete', {
    form: { csrf: Browser.csrfOf(confirm.text), code: codeOf(world, secret) },
  });
  assert.equal(removed.status, 303, removed.text);
  assert.equal(await mineLeft(), 0);
  assert.equal(removed.headers.get('location'), '/dashboard/account?done=passkey-removed#two-factor');
  await world.app.deps.db
    .insertInto('two_factor_passkeys')
    .values({
      id: 'passkey_second',
      member_id: ownerId,
      credential_id: 'cred-second',
      public_key: 'pA',
      counter: 0,
      transports: '[]',
      name: 'Second',
      created_at: 0,
      last_used_at: null,
    })
    .execute();
  const off = await account.request('/dashboard/account/two-factor/off');
  advance(world, 2);
  const turnedOff = await account.request('/dashboard/account/two-factor/off', {
    form: { code: codeOf(world, secret), csrf: Browser.csrfOf(off.text) },
  });
  assert.equal(turnedOff.status, 303);
  const left = await world.app.deps.db.selectFrom('two_factor_passkeys').select('id').execute();
  assert.deepEqual(
    left.map((r) => r.id),
    ['passkey_theirs'],
  );
  await chainCommitted(world.app.deps.db);
  const trail = await world.app.deps.db
    .selectFrom('audit_events')
    .select(['action', 'summary'])
    .where('action', 'in', ['member.passkey_remove', 'member.change_refused'])
    .orderBy('seq')
    .execute();
  assert.deepEqual(trail, [
    { action: 'member.change_refused', summary: '{"change":"member.passkey_add","step":"code"}' },
    { action: 'member.change_refused', summary: '{"change":"member.passkey_remove","step":"code"}' },
    { action: 'member.passkey_remove', summary: '{"name":"passkey_mine <b>","passkey":"passkey_mine"}' },
  ]);
});
