import { test } from 'node:test';
import assert from 'node:assert/strict';
import { Browser, payerWorld } from '../../../test/payer.ts';
import { REPEAT_SIGN_IN_MS } from './payer.signin.ts';

// A payer's sign-in form sent twice (a double click: the second post carries the cookies from
// before the first's answer; or back and resubmit) signs the payer in, rather than answer that the
// code was used. Only the browser that used the code, and only for a minute. Both engines.

const USED = /That code no longer works/;

test('the sign-in form sent twice by one browser signs it in both times; the used code works for no other browser, nor after a minute', async (t) => {
  const world = await payerWorld(t);
  const email = 'pat@example.com';
  const browser = new Browser(world.baseUrl);
  const start = await browser.request('/customer');
  const before = world.smtp.messages.length;
  const asked = await browser.request('/customer/code', { form: { email, csrf: Browser.csrfOf(start.text) } });
  const mail = await world.smtp.waitFor(
    (m) => m.to === email && /sign-in code/.test(m.subject) && world.smtp.messages.indexOf(m) >= before,
  );
  const code = /(\d{6})/.exec(mail.subject)![1]!;
  const form = { email, code, csrf: Browser.csrfOf(asked.text) };
  const cookiesBefore = new Map(browser.cookies);
  const copy = (cookies: Map<string, string>) => {
    const other = new Browser(world.baseUrl);
    for (const [name, value] of cookies) other.cookies.set(name, value);
    return other;
  };

  const first = await browser.request('/customer/verify', { form });
  assert.deepEqual([first.status, first.headers.get('location')], [303, '/customer']);
  // The double click's second post, sent before the first's answer came back.
  const twice = copy(cookiesBefore);
  const second = await twice.request('/customer/verify', { form });
  assert.deepEqual([second.status, second.headers.get('location')], [303, '/customer'], second.text);
  const home = await twice.request('/customer');
  assert.equal(home.status, 200);
  assert.match(home.text, /Log out/, 'the second answer signs the browser in too');

  // Back, then the form resubmitted by the signed-in browser: to the dashboard.
  const resubmitted = await browser.request('/customer/verify', { form });
  assert.deepEqual([resubmitted.status, resubmitted.headers.get('location')], [303, '/customer']);

  // Another browser with the code: it is used.
  const stranger = new Browser(world.baseUrl);
  const page = await stranger.request('/customer');
  const refused = await stranger.request('/customer/verify', {
    form: { email, code, csrf: Browser.csrfOf(page.text) },
  });
  assert.equal(refused.status, 400);
  assert.match(refused.text, USED);
  // The same browser with a wrong code, or a minute later: used.
  const wrong = await copy(cookiesBefore).request('/customer/verify', {
    form: { ...form, code: code === '000000' ? '000001' : '000000' },
  });
  assert.match(wrong.text, USED);
  await world.app.deps.db
    .updateTable('payer_codes')
    .set((eb) => ({ used_at: eb('used_at', '-', REPEAT_SIGN_IN_MS + 1) }))
    .where('email', '=', email)
    .execute();
  const late = await copy(cookiesBefore).request('/customer/verify', { form });
  assert.equal(late.status, 400);
  assert.match(late.text, USED);
});
