import { test, type TestContext } from 'node:test';
import assert from 'node:assert/strict';
import pino from 'pino';
import { Agent, fetch } from 'undici';
import { Browser, payerWorld, signIn, type PayerWorld } from '../../../test/payer.ts';
import { sha256Hex } from '../../shared/crypto.ts';
import { shiftedClock, systemClock } from '../../shared/time.ts';
import { buildTestApp } from '../../../test/helpers.ts';
import { CODE_TRIES, CODE_TTL_MS, PAYER_LIMITS } from './payer.signin.ts';

// The payer dashboard over HTTP, with a real SMTP receiver, on SQLite and PostgreSQL.

const text = (html: string) =>
  html
    .replace(/<[^>]+>/g, ' ')
    .replace(/&#39;/g, "'")
    .replace(/&amp;/g, '&')
    .replace(/\s+/g, ' ');

/** Moves the service's clock on by `ms` more at each call. */
const clockMover = (world: PayerWorld) => {
  let offsetMs = 0;
  return (ms: number) => {
    offsetMs += ms;
    world.app.deps.clock = shiftedClock(systemClock, offsetMs);
  };
};

/** The sign-in code messages queued to `email`: rows written before the page answers. */
const codeMailsTo = (world: PayerWorld, email: string) =>
  world.app.deps.db
    .selectFrom('mail_messages')
    .select('id')
    .where('to_address', '=', email)
    .where('template', '=', 'payer_code')
    .execute();

/** What the service logs at warn and above from now on, each line parsed. */
function warningsOf(world: PayerWorld): Array<Record<string, any>> {
  const lines: Array<Record<string, any>> = [];
  world.app.deps.log = pino({ level: 'warn' }, { write: (line: string) => void lines.push(JSON.parse(line)) });
  return lines;
}

/**
 * A client at an address of its own (all of 127.0.0.0/8 is this machine), over real HTTP, so the
 * per-address limits count it apart. Each post first loads the sign-in page for a CSRF cookie and token.
 */
function clientAt(t: TestContext, world: PayerWorld, address: string) {
  const dispatcher = new Agent({ localAddress: address });
  t.after(() => dispatcher.close());
  return {
    async post(path: string, form: Record<string, string>) {
      const start = await fetch(`${world.baseUrl}/customer`, { dispatcher });
      const cookie = start.headers
        .getSetCookie()
        .map((line) => line.split(';')[0])
        .join('; ');
      const csrf = Browser.csrfOf(await start.text());
      const reply = await fetch(`${world.baseUrl}${path}`, {
        dispatcher,
        method: 'POST',
        redirect: 'manual',
        headers: { cookie, origin: world.baseUrl, 'content-type': 'application/x-www-form-urlencoded' },
        body: new URLSearchParams({ ...form, csrf }).toString(),
      });
      return {
        status: reply.status,
        headers: reply.headers,
        text: await reply.text(),
        signedIn: reply.headers.getSetCookie().some((line) => line.startsWith('tono_payer=')),
      };
    },
  };
}

test('sign in with the mailed code: every subscription and consent of that email, across merchants, and nothing else', async (t) => {
  const world = await payerWorld(t);
  const browser = await signIn(world, 'Pat@Example.com'.toLowerCase());
  const session = browser.cookie('tono_payer');
  assert.ok(session && session.length >= 40);
  const home = await browser.request('/customer');
  assert.equal(home.status, 200);
  const page = text(home.text);
  for (const merchant of ['Kōwhai Coffee', 'Tui Books']) assert.ok(page.includes(merchant), merchant);
  for (const id of [...world.subscriptions['pat@example.com'], ...world.consents['pat@example.com'].map((c) => c.id)])
    assert.ok(home.text.includes(id), id);
  for (const id of [
    ...world.subscriptions['other@example.com'],
    ...world.consents['other@example.com'].map((c) => c.id),
  ])
    assert.ok(!home.text.includes(id), `not ${id}`);
  assert.match(page, /\$15\.00 every fortnight/);
  // each titled by what it is, the merchant beside it: two plans with one merchant are told apart
  assert.match(page, /Beans with Kōwhai Coffee active test \$15\.00 every fortnight/);
  assert.match(page, /Top-ups with Tui Books active test/);
  assert.match(page, /may take up to \$50\.00 a payment, \$100\.00 a week/);
  assert.match(page, /This period: \$100\.00 left until/);
  assert.match(page, /Next charge: /);

  // the detail pages show the payments; another payer's objects are 404
  const sub = await browser.request(`/customer/subscriptions/${world.subscriptions['pat@example.com'][0]}`);
  assert.equal(sub.status, 200);
  assert.match(text(sub.text), /Payments .*\$15\.00 Paid/);
  for (const path of [
    `/customer/subscriptions/${world.subscriptions['other@example.com'][0]}`,
    `/customer/recurring-consents/${world.consents['other@example.com'][0].id}`,
    `/customer/subscriptions/${world.subscriptions['other@example.com'][0]}/cancel`,
    '/customer/subscriptions/subscription_01JD2Q8Z7M3V4K5N6P7R8S9T0V',
    '/customer/recurring-consents/not-an-id',
  ]) {
    const other = await browser.request(path);
    assert.equal(other.status, 404, path);
    assert.match(other.text, /There is nothing with that address/);
  }

  // the session cookie: HttpOnly, SameSite=Lax, scoped to /customer; stored server-side by its hash only
  const signedIn = await new Browser(world.baseUrl).request('/customer');
  assert.match(signedIn.setCookies.join('\n'), /tono_payer_csrf=[^;]+; Path=\/customer; HttpOnly; SameSite=Lax/);
  const rows = await world.app.deps.db.selectFrom('payer_sessions').selectAll().execute();
  assert.equal(rows.length, 1);
  assert.ok(!JSON.stringify(rows).includes(session));

  // logout ends it here and on the server
  const logout = await browser.request('/customer/logout', { form: { csrf: Browser.csrfOf(home.text) } });
  assert.equal(logout.status, 303);
  const reused = new Browser(world.baseUrl);
  reused.cookies.set('tono_payer', session);
  assert.match((await reused.request('/customer')).text, /Send code/);
});

test('the replies never say whether an email is known; an unknown email is sent nothing', async (t) => {
  const world = await payerWorld(t);
  const pages = [];
  const wrongs = [];
  for (const email of ['pat@example.com', 'nobody@example.com']) {
    const browser = new Browser(world.baseUrl);
    const start = await browser.request('/customer');
    const asked = await browser.request('/customer/code', { form: { email, csrf: Browser.csrfOf(start.text) } });
    assert.equal(asked.status, 200);
    pages.push(text(asked.text).replace(email, 'EMAIL'));
    // a wrong code reads the same too
    const live = await world.app.deps.db
      .selectFrom('payer_codes')
      .select('code_sealed')
      .where('email', '=', email)
      .executeTakeFirstOrThrow();
    const wrong = await browser.request('/customer/verify', {
      form: {
        email,
        code: world.app.deps.secrets.open(live.code_sealed) === '000000' ? '111111' : '000000',
        csrf: Browser.csrfOf(asked.text),
      },
    });
    wrongs.push([wrong.status, text(wrong.text).replace(email, 'EMAIL')]);
  }
  assert.equal(pages[0], pages[1]);
  assert.deepEqual(wrongs[0], wrongs[1]);
  await world.smtp.waitFor((m) => m.to === 'pat@example.com' && /sign-in code/.test(m.subject));
  await new Promise((resolve) => setTimeout(resolve, 300));
  assert.equal(world.smtp.messages.filter((m) => m.to === 'nobody@example.com').length, 0);
  assert.equal(
    (
      await world.app.deps.db
        .selectFrom('mail_messages')
        .select('id')
        .where('to_address', '=', 'nobody@example.com')
        .execute()
    ).length,
    0,
  );
});

test('five wrong codes kill the code; a code expires 10 minutes after its last mail; asking again while it is live sends that same code once more; five codes per email per hour', async (t) => {
  const world = await payerWorld(t);
  const later = clockMover(world);
  const ask = async ({ mailed = true } = {}) => {
    const browser = new Browser(world.baseUrl);
    const start = await browser.request('/customer');
    const before = world.smtp.messages.length;
    const asked = await browser.request('/customer/code', {
      form: { email: 'pat@example.com', csrf: Browser.csrfOf(start.text) },
    });
    assert.equal(asked.status, 200);
    const csrf = Browser.csrfOf(asked.text);
    if (!mailed) return { browser, csrf, code: '' };
    const mail = await world.smtp.waitFor(
      (m) => world.smtp.messages.indexOf(m) >= before && /sign-in code/.test(m.subject),
    );
    return { browser, csrf, code: /(\d{6})/.exec(mail.subject)![1] };
  };
  const tryCode = (session: Awaited<ReturnType<typeof ask>>, code: string) =>
    session.browser.request('/customer/verify', { form: { email: 'pat@example.com', code, csrf: session.csrf } });
  const codeMails = async () => (await codeMailsTo(world, 'pat@example.com')).length;

  const first = await ask();
  const wrong = first.code === '000000' ? '111111' : '000000';
  for (let left = 4; left >= 1; left--) {
    const reply = await tryCode(first, wrong);
    assert.equal(reply.status, 400);
    assert.match(
      text(reply.text),
      new RegExp(`That code is not right\\. You have ${left} ${left === 1 ? 'try' : 'tries'} left\\.`),
    );
  }
  assert.match(text((await tryCode(first, wrong)).text), /That code no longer works/);
  assert.match(
    text((await tryCode(first, first.code)).text),
    /That code no longer works/,
    'the right code after five wrong ones is refused',
  );

  // while a code is live, asking again mails that same code, once; a third ask mails nothing
  const second = await ask();
  const again = await ask();
  assert.equal(again.code, second.code, 'the live code is sent again, not replaced');
  const mailed = await codeMails();
  await ask({ mailed: false });
  assert.equal(await codeMails(), mailed, 'sent again once only');
  // expiry: ten minutes after the last mail of it the live code is dead
  later(CODE_TTL_MS + 1_000);
  assert.match(text((await tryCode(again, second.code)).text), /That code no longer works/);

  // five codes per email per hour (two made above): three more, each left to expire, then the sixth is refused
  for (let i = 0; i < 3; i++) {
    await ask();
    later(CODE_TTL_MS + 1_000);
  }
  const browser = new Browser(world.baseUrl);
  const start = await browser.request('/customer');
  const limited = await browser.request('/customer/code', {
    form: { email: 'pat@example.com', csrf: Browser.csrfOf(start.text) },
  });
  assert.equal(limited.status, 429);
  assert.match(text(limited.text), /Too many codes have been asked for\. Try again in \d+ minutes\./);
  assert.ok(Number(limited.headers.get('retry-after')) > 0);
  // codes are sealed at rest
  const codes = await world.app.deps.db.selectFrom('payer_codes').select('code_sealed').execute();
  assert.ok(codes.every((c) => c.code_sealed.startsWith('sealed:v1:')));
});

test("a stranger asking for codes, from any number of addresses, neither kills the payer's live code nor spends the hourly codes of the email", async (t) => {
  const world = await payerWorld(t);
  const later = clockMover(world);
  const payer = new Browser(world.baseUrl);
  const start = await payer.request('/customer');
  const asked = await payer.request('/customer/code', {
    form: { email: 'pat@example.com', csrf: Browser.csrfOf(start.text) },
  });
  const mail = await world.smtp.waitFor((m) => m.to === 'pat@example.com' && /sign-in code/.test(m.subject));
  const code = /(\d{6})/.exec(mail.subject)![1];

  // eight minutes on, twice an hour's codes of one email are asked for from ten addresses
  later(8 * 60_000);
  for (let i = 0; i < 2 * PAYER_LIMITS.codesByEmail.max; i++) {
    const reply = await clientAt(t, world, `127.0.0.${20 + i}`).post('/customer/code', { email: 'pat@example.com' });
    assert.equal(reply.status, 200, 'every ask reads as sent');
  }
  const codes = await world.app.deps.db
    .selectFrom('payer_codes')
    .select('id')
    .where('email', '=', 'pat@example.com')
    .execute();
  assert.equal(codes.length, 1, 'no new code while one is live');
  const mails = await codeMailsTo(world, 'pat@example.com');
  assert.equal(mails.length, 2, 'the live code is mailed once more, then nothing');
  const resent = await world.smtp.waitFor(
    (m) => m.to === 'pat@example.com' && /sign-in code/.test(m.subject) && m.messageId !== mail.messageId,
  );
  assert.equal(/(\d{6})/.exec(resent.subject)![1], code, 'the same code');
  const window = await world.app.deps.db
    .selectFrom('attempt_windows')
    .select('attempts')
    .where('scope', '=', PAYER_LIMITS.codesByEmail.scope)
    .where('key_hash', '=', sha256Hex('pat@example.com'))
    .executeTakeFirstOrThrow();
  assert.equal(Number(window.attempts), 1, 'one code of the hour spent');

  // fifteen minutes after the payer asked (seven after it was mailed again), the payer's code still signs them in
  later(7 * 60_000);
  const verified = await payer.request('/customer/verify', {
    form: { email: 'pat@example.com', code, csrf: Browser.csrfOf(asked.text) },
  });
  assert.equal(verified.status, 303, text(verified.text));
  assert.ok(payer.cookie('tono_payer'));
});

test('twenty wrong codes for an email in a week pause its sign-in from every address, the right code of a fresh code too; an unknown email reads the same; the pause is logged once; other emails are not affected', async (t) => {
  const world = await payerWorld(t);
  const later = clockMover(world);
  const warnings = warningsOf(world);
  let addresses = 0;
  const nextClient = () => clientAt(t, world, `127.0.1.${++addresses}`);
  // the limit as docs/security.md gives it
  const limit = { max: 20, windowMs: 7 * 24 * 60 * 60_000 };
  // a known payer's code comes by mail; an unknown email's is never sent, so it is read from its row
  const mailedCode = async (email: string, before: number) =>
    /(\d{6})/.exec(
      (
        await world.smtp.waitFor(
          (m) => m.to === email && /sign-in code/.test(m.subject) && world.smtp.messages.indexOf(m) >= before,
        )
      ).subject,
    )![1];
  const storedCode = async (email: string) => {
    const row = await world.app.deps.db
      .selectFrom('payer_codes')
      .select('code_sealed')
      .where('email', '=', email)
      .orderBy('created_at', 'desc')
      .executeTakeFirstOrThrow();
    return world.app.deps.secrets.open(row.code_sealed);
  };
  const seen = new Set<string>();
  const freshCode = async (email: string) => {
    const before = world.smtp.messages.length;
    assert.equal((await nextClient().post('/customer/code', { email })).status, 200);
    const code = email === 'pat@example.com' ? await mailedCode(email, before) : await storedCode(email);
    seen.add(code);
    return code;
  };
  const wrongFor = (code: string) => (code === '000000' ? '111111' : '000000');

  const pages: string[][] = [];
  for (const email of ['pat@example.com', 'nobody@example.com']) {
    // one wrong code short of the limit, each code from an address of its own (under every hourly limit)
    for (let spent = 0; spent < limit.max - 1; ) {
      const code = await freshCode(email);
      const client = nextClient();
      const tries = Math.min(CODE_TRIES, limit.max - 1 - spent);
      for (let i = 0; i < tries; i++) await client.post('/customer/verify', { email, code: wrongFor(code) });
      spent += tries;
      if (tries < CODE_TRIES) later(CODE_TTL_MS + 1_000);
    }
    // a fresh code: its first wrong try is the last one allowed, and then its right code is refused
    const code = await freshCode(email);
    const last = await nextClient().post('/customer/verify', { email, code: wrongFor(code) });
    const right = await nextClient().post('/customer/verify', { email, code });
    const codesBefore = await world.app.deps.db
      .selectFrom('payer_codes')
      .select('id')
      .where('email', '=', email)
      .execute();
    const mailsBefore = (await codeMailsTo(world, email)).length;
    const askAgain = await nextClient().post('/customer/code', { email });
    for (const reply of [last, right, askAgain]) {
      assert.equal(reply.status, 429, text(reply.text));
      assert.match(
        text(reply.text),
        /Too many wrong codes have been entered for this email, so signing in with it is paused\. Try again in 7 days\./,
      );
      const retryAfter = Number(reply.headers.get('retry-after'));
      assert.ok(retryAfter > limit.windowMs / 1000 - 3600 && retryAfter <= limit.windowMs / 1000, String(retryAfter));
      assert.ok(!reply.signedIn);
    }
    assert.equal(
      (await world.app.deps.db.selectFrom('payer_codes').select('id').where('email', '=', email).execute()).length,
      codesBefore.length,
      'no code made while paused',
    );
    assert.equal((await codeMailsTo(world, email)).length, mailsBefore, 'no code mailed while paused');
    pages.push([last, right, askAgain].map((reply) => text(reply.text).replaceAll(email, 'EMAIL')));
  }
  assert.deepEqual(pages[0], pages[1], 'a known and an unknown email read the same');

  // said once per email, by its SHA-256, with whether a payer has it, and no code nor the email
  const paused = warnings.filter((line) => /sign-in paused/.test(line.msg));
  assert.deepEqual(
    paused.map((line) => [line.email_sha256, line.payer]),
    [
      [sha256Hex('pat@example.com'), true],
      [sha256Hex('nobody@example.com'), false],
    ],
  );
  assert.ok(!JSON.stringify(paused).includes('@example.com'), 'no email in the log');
  for (const { time: _time, pid: _pid, hostname: _hostname, ...said } of paused)
    for (const code of seen) assert.ok(!JSON.stringify(said).includes(code), 'no code in the log');

  // pat is told once, by email, until when; an unknown email is sent nothing
  const notice = await world.smtp.waitFor(
    (m) => m.to === 'pat@example.com' && /sign-in|Signing in/.test(m.subject) && /paused/.test(m.subject),
  );
  assert.match(notice.text, /signing in to Tono with it is paused until /);
  for (const code of seen) assert.ok(!notice.text.includes(code), 'no code in the notice');
  await new Promise((resolve) => setTimeout(resolve, 300));
  assert.equal(world.smtp.messages.filter((m) => /paused/.test(m.subject)).length, 1, 'told once');
  const notices = await world.app.deps.db
    .selectFrom('mail_messages')
    .select('to_address')
    .where('template', '=', 'payer_signin_paused')
    .execute();
  assert.deepEqual(
    notices.map((row) => row.to_address),
    ['pat@example.com'],
  );

  // another email signs in as before, and a week on so does pat
  await signIn(world, 'other@example.com');
  later(limit.windowMs);
  await signIn(world, 'pat@example.com');
});

test('forms refuse a missing CSRF token and a cross-site origin, changing nothing', async (t) => {
  const world = await payerWorld(t);
  const browser = new Browser(world.baseUrl);
  const start = await browser.request('/customer');
  const csrf = Browser.csrfOf(start.text);
  assert.equal((await browser.request('/customer/code', { form: { email: 'pat@example.com' } })).status, 403);
  assert.equal(
    (
      await browser.request('/customer/code', {
        form: { email: 'pat@example.com', csrf },
        headers: { origin: 'https://evil.example' },
      })
    ).status,
    403,
  );
  assert.equal(
    (
      await browser.request('/customer/code', {
        form: { email: 'pat@example.com', csrf },
        headers: { 'sec-fetch-site': 'cross-site', origin: 'null' },
      })
    ).status,
    403,
  );
  assert.equal((await world.app.deps.db.selectFrom('payer_codes').select('id').execute()).length, 0);

  const signedIn = await signIn(world, 'pat@example.com');
  const subscription = world.subscriptions['pat@example.com'][0];
  const home = await signedIn.request('/customer');
  for (const form of [{}, { csrf: 'forged' }] as Array<Record<string, string>>) {
    assert.equal((await signedIn.request(`/customer/subscriptions/${subscription}/cancel`, { form })).status, 403);
  }
  assert.equal(
    (
      await signedIn.request(`/customer/subscriptions/${subscription}/cancel`, {
        form: { csrf: Browser.csrfOf(home.text) },
        headers: { origin: 'https://evil.example' },
      })
    ).status,
    403,
  );
  const row = await world.app.deps.db
    .selectFrom('subscriptions')
    .select('status')
    .where('id', '=', subscription)
    .executeTakeFirstOrThrow();
  assert.equal(row.status, 'active');
});

test('cancel and revoke, after a confirmation step: the events are sent, and no further charge or execution is made', async (t) => {
  const world = await payerWorld(t, { payerOnTeam: true });
  const browser = await signIn(world, 'pat@example.com');
  const [{ api }] = world.merchants;
  const subscription = world.subscriptions['pat@example.com'][0];
  const consent = world.consents['pat@example.com'][0];

  const confirm = await browser.request(`/customer/subscriptions/${subscription}/cancel`);
  assert.equal(confirm.status, 200);
  assert.match(
    text(confirm.text),
    /Cancel this subscription: “Beans” with Kōwhai Coffee\? .* Nothing more will be charged, and Kōwhai Coffee is told at once\./,
  );
  const cancelled = await browser.request(`/customer/subscriptions/${subscription}/cancel`, {
    form: { csrf: Browser.csrfOf(confirm.text) },
  });
  assert.equal(cancelled.status, 303);
  const after = await browser.request(cancelled.headers.get('location')!);
  assert.match(text(after.text), /Your subscription is cancelled\. Nothing more will be charged\./);
  assert.match(text(after.text), /Cancelled by you on /);
  const sub = (await api.get(`/v1/subscriptions/${subscription}`)).body.subscription;
  assert.deepEqual([sub.status, sub.cancelled_by], ['cancelled', 'payer']);
  const events = (await api.get('/v1/events', { query: { object_id: subscription } })).body.events.map(
    (e: any) => e.type,
  );
  assert.ok(events.includes('subscription.cancelled'));
  const charged = sub.successful_charges;
  await api.post('/v1/test-helpers/clock/advance', { seconds: 120 * 86_400 });
  assert.equal(
    (await api.get(`/v1/subscriptions/${subscription}`)).body.subscription.successful_charges,
    charged,
    'no further charge',
  );
  await world.smtp.waitFor((m) => m.to === 'pat@example.com' && /has been cancelled/.test(m.subject));

  const revokeConfirm = await browser.request(`/customer/recurring-consents/${consent.id}/revoke`);
  assert.match(text(revokeConfirm.text), /Revoke this authority: “Top-ups” with Kōwhai Coffee\?/);
  const revoked = await browser.request(`/customer/recurring-consents/${consent.id}/revoke`, {
    form: { csrf: Browser.csrfOf(revokeConfirm.text) },
  });
  assert.equal(revoked.status, 303);
  assert.deepEqual(
    (await api.get('/v1/events', { query: { object_id: consent.id } })).body.events
      .map((e: any) => e.type)
      .includes('recurring_payment.revoked'),
    true,
  );
  const refused = await api.post('/v1/payments', {
    token: consent.token,
    amount: '1.00 NZD',
    idempotency_key: 'after-revoke',
  });
  assert.equal(refused.body.code, 'payment_rejected.consent_revoked');
  await world.smtp.waitFor(
    (m) => m.to === 'pat@example.com' && /revoked/.test(m.subject) && /revoked by you/.test(m.text),
  );
  // Doing it again changes nothing.
  const again = await browser.request(`/customer/recurring-consents/${consent.id}/revoke`, {
    form: { csrf: Browser.csrfOf(revokeConfirm.text) },
  });
  assert.equal(again.status, 303);
  const revokedEvents = (await api.get('/v1/events', { query: { object_id: consent.id } })).body.events.filter(
    (e: any) => e.type === 'recurring_payment.revoked',
  );
  assert.equal(revokedEvents.length, 1);
});

test('payers hear about what they set up: consent, subscription, receipts, failed charges, endings', async (t) => {
  // Kōwhai Coffee's mail to pat goes by SMTP: pat is on its team (test mode emails no one else).
  const world = await payerWorld(t, { payerOnTeam: true });
  const mailTo = (pattern: RegExp) => world.smtp.waitFor((m) => m.to === 'pat@example.com' && pattern.test(m.subject));
  const consent = await mailTo(/You authorised payments to Kōwhai Coffee for “Top-ups”/);
  assert.match(
    consent.text,
    /to take payments for “Top-ups” from your bank account, up to \$50\.00 a payment, \$100\.00 a week/,
  );
  assert.match(consent.text, /\/customer/);
  const setUp = await mailTo(/Your subscription “Beans” with Kōwhai Coffee is set up/);
  assert.match(setUp.text, /\$15\.00 every fortnight/);
  assert.match(setUp.text, /First charge: /);
  const receipt = await mailTo(/^\[Test\] Receipt: \$15\.00 to Kōwhai Coffee for “Beans”$/);
  // the plain text says it is test mode at its top, as the HTML does
  assert.match(receipt.text, /^Test mode: no real money moved\.\n\nYou paid /);
  assert.match(receipt.text, /You paid \$15\.00 to Kōwhai Coffee for “Beans” on /);
  assert.match(receipt.text, /Particulars {2}\S+\n {2}Code {9}\S+/);
  // a failed charge, with its retry
  const [{ api }] = world.merchants;
  const subscription = world.subscriptions['pat@example.com'][0];
  await api.post(`/v1/test-helpers/subscriptions/${subscription}/decline-next`, { count: 1 });
  await api.post('/v1/test-helpers/clock/advance', { seconds: 15 * 86_400 });
  const failed = await mailTo(/did not go through/);
  assert.match(failed.text, /It will be tried again on /);
  // every message was recorded, once each
  const rows = await world.app.deps.db
    .selectFrom('mail_messages')
    .select(['template', 'related_id', 'status'])
    .where('to_address', '=', 'pat@example.com')
    .execute();
  const keys = rows.map((r) => `${r.template}:${r.related_id}`);
  assert.equal(
    new Set(keys.filter((k) => !k.startsWith('charge_'))).size,
    keys.filter((k) => !k.startsWith('charge_')).length,
    'no notice twice',
  );
});

test('codes asked for at once: one email gets one code whatever the addresses, and spends one of its hourly codes; wrong codes from one address are counted before they are checked', async (t) => {
  const app = await buildTestApp(t, { workers: false });
  const start = await app.app.inject({ method: 'GET', url: '/customer' });
  const cookie = start.cookies.map((c) => `${c.name}=${c.value}`).join('; ');
  const csrf = Browser.csrfOf(start.body);
  const post = (url: string, form: Record<string, string>, remoteAddress: string) =>
    app.app.inject({
      method: 'POST',
      url,
      remoteAddress,
      headers: { cookie, 'content-type': 'application/x-www-form-urlencoded' },
      payload: new URLSearchParams({ ...form, csrf }).toString(),
    });

  const asks = await Promise.all(
    Array.from({ length: 100 }, (_, i) => post('/customer/code', { email: 'pat@example.com' }, `198.51.100.${i + 1}`)),
  );
  assert.deepEqual(new Set(asks.map((reply) => reply.statusCode)), new Set([200]), 'every ask reads as sent');
  const codes = await app.deps.db
    .selectFrom('payer_codes')
    .selectAll()
    .where('email', '=', 'pat@example.com')
    .execute();
  assert.equal(codes.length, 1, 'one code: the others found it live');
  assert.equal(codes.filter((code) => code.dead_at === null && code.used_at === null).length, 1);
  const window = await app.deps.db
    .selectFrom('attempt_windows')
    .select('attempts')
    .where('scope', '=', PAYER_LIMITS.codesByEmail.scope)
    .where('key_hash', '=', sha256Hex('pat@example.com'))
    .executeTakeFirstOrThrow();
  assert.equal(Number(window.attempts), 1, "one of the hour's codes spent");

  // 50 emails with a live code each, then 50 wrong guesses at once from one address: only the
  // address's 30 are checked; the rest are refused unchecked, and their codes keep every try
  const emails = Array.from({ length: 50 }, (_, i) => `payer${i}@example.com`);
  for (const [i, email] of emails.entries())
    assert.equal((await post('/customer/code', { email }, `203.0.113.${i + 1}`)).statusCode, 200);
  const wrongFor = async (email: string) => {
    const row = await app.deps.db
      .selectFrom('payer_codes')
      .select('code_sealed')
      .where('email', '=', email)
      .executeTakeFirstOrThrow();
    return app.deps.secrets.open(row.code_sealed) === '000000' ? '111111' : '000000';
  };
  const wrongs = await Promise.all(emails.map(wrongFor));
  const guesses = await Promise.all(
    emails.map((email, i) => post('/customer/verify', { email, code: wrongs[i]! }, '192.0.2.7')),
  );
  const checked = guesses.filter((reply) => reply.statusCode === 400).length;
  assert.equal(checked, PAYER_LIMITS.checksByClient.max);
  assert.equal(guesses.filter((reply) => reply.statusCode === 429).length, 50 - PAYER_LIMITS.checksByClient.max);
  const spent = await app.deps.db.selectFrom('payer_codes').select('tries_left').where('email', 'in', emails).execute();
  assert.equal(spent.filter((code) => code.tries_left < CODE_TRIES).length, PAYER_LIMITS.checksByClient.max);
});
