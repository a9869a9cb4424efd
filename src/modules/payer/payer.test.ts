import { test } from 'node:test';
import assert from 'node:assert/strict';
import { Browser, payerWorld, signIn } from '../../../test/payer.ts';
import { shiftedClock, systemClock } from '../../shared/time.ts';
import { buildTestApp } from '../../../test/helpers.ts';
import { CODE_TRIES, PAYER_LIMITS } from './payer.signin.ts';

// The payer dashboard over HTTP, with a real SMTP receiver, on SQLite and PostgreSQL.

const text = (html: string) =>
  html
    .replace(/<[^>]+>/g, ' ')
    .replace(/&#39;/g, "'")
    .replace(/&amp;/g, '&')
    .replace(/\s+/g, ' ');

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
    const wrong = await browser.request('/customer/verify', {
      form: { email, code: '12345x', csrf: Browser.csrfOf(asked.text) },
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

test('five wrong codes kill the code; a code expires after 10 minutes; one live code per email; codes are limited per email', async (t) => {
  const world = await payerWorld(t);
  const ask = async () => {
    const browser = new Browser(world.baseUrl);
    const start = await browser.request('/customer');
    const before = world.smtp.messages.length;
    const asked = await browser.request('/customer/code', {
      form: { email: 'pat@example.com', csrf: Browser.csrfOf(start.text) },
    });
    const mail = await world.smtp.waitFor(
      (m) => world.smtp.messages.indexOf(m) >= before && /sign-in code/.test(m.subject),
    );
    return { browser, csrf: Browser.csrfOf(asked.text), code: /(\d{6})/.exec(mail.subject)![1] };
  };
  const tryCode = (session: Awaited<ReturnType<typeof ask>>, code: string) =>
    session.browser.request('/customer/verify', { form: { email: 'pat@example.com', code, csrf: session.csrf } });

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

  // a new code kills the old one: the old code is just a wrong code now
  const second = await ask();
  const third = await ask();
  if (second.code !== third.code)
    assert.match(text((await tryCode(second, second.code)).text), /That code is not right\. You have 4 tries left\./);
  // expiry: ten minutes later the live code is dead
  world.app.deps.clock = shiftedClock(systemClock, 10 * 60_000 + 1_000);
  assert.match(text((await tryCode(third, third.code)).text), /That code no longer works/);
  world.app.deps.clock = systemClock;

  // five codes per email per hour (three asked above, by one email): the sixth ask is refused
  await ask();
  await ask();
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
  const world = await payerWorld(t);
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
  const world = await payerWorld(t);
  const mailTo = (pattern: RegExp) => world.smtp.waitFor((m) => m.to === 'pat@example.com' && pattern.test(m.subject));
  const consent = await mailTo(/You authorised payments to Kōwhai Coffee for “Top-ups”/);
  assert.match(
    consent.text,
    /to take payments for “Top-ups” from your bank account, up to \$50\.00 a payment, \$100\.00 a week/,
  );
  assert.match(consent.text, /\/customer/);
  const setUp = await mailTo(/Your subscription “Beans” with Tui Books is set up/);
  assert.match(setUp.text, /\$15\.00 every fortnight/);
  assert.match(setUp.text, /First charge: /);
  const receipt = await mailTo(/^\[Test\] Receipt: \$15\.00 to Kōwhai Coffee for “Beans”$/);
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

test('codes asked for at once: one email gets at most five an hour and one live code, whatever the addresses; wrong codes from one address are counted before they are checked', async (t) => {
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
  const statuses = asks.map((reply) => reply.statusCode);
  assert.equal(statuses.filter((status) => status === 200).length, PAYER_LIMITS.codesByEmail.max);
  assert.equal(statuses.filter((status) => status === 429).length, 100 - PAYER_LIMITS.codesByEmail.max);
  const codes = await app.deps.db
    .selectFrom('payer_codes')
    .selectAll()
    .where('email', '=', 'pat@example.com')
    .execute();
  assert.equal(codes.length, PAYER_LIMITS.codesByEmail.max, 'codes stored');
  assert.equal(
    codes.filter((code) => code.dead_at === null && code.used_at === null).length,
    1,
    'one live code at a time',
  );

  // 50 emails with a live code each, then 50 wrong guesses at once from one address: only the
  // address's 30 are checked; the rest are refused unchecked, and their codes keep every try
  const emails = Array.from({ length: 50 }, (_, i) => `payer${i}@example.com`);
  for (const [i, email] of emails.entries())
    assert.equal((await post('/customer/code', { email }, `203.0.113.${i + 1}`)).statusCode, 200);
  const guesses = await Promise.all(
    emails.map((email) => post('/customer/verify', { email, code: '1234567' }, '192.0.2.7')),
  );
  const checked = guesses.filter((reply) => reply.statusCode === 400).length;
  assert.equal(checked, PAYER_LIMITS.checksByClient.max);
  assert.equal(guesses.filter((reply) => reply.statusCode === 429).length, 50 - PAYER_LIMITS.checksByClient.max);
  const spent = await app.deps.db.selectFrom('payer_codes').select('tries_left').where('email', 'in', emails).execute();
  assert.equal(spent.filter((code) => code.tries_left < CODE_TRIES).length, PAYER_LIMITS.checksByClient.max);
});
