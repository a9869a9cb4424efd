import { test, type TestContext } from 'node:test';
import assert from 'node:assert/strict';
import { Browser } from '../../../test/payer.ts';
import { buildTestApp } from '../../../test/helpers.ts';
import { CODE_TRIES, PAYER_LIMITS } from './payer.signin.ts';

// The sign-in pages as a payer and a screen reader meet them: a code that is not 6 digits is a slip
// that spends nothing; each error is tied to the field it is about, and only to that field; the
// bar at the top and its Log out are in landmarks. Both engines. An email no payer has is enough:
// it gets a live code too (never sent), read here from its row.

async function service(t: TestContext) {
  const app = await buildTestApp(t, { workers: false });
  const baseUrl = (await app.app.listen({ port: 0, host: '127.0.0.1' })).replace('localhost', '127.0.0.1');
  app.deps.config.publicBaseUrl = baseUrl;
  const db = app.deps.db;
  /** Asks for a code for `email` in a new browser: the browser, the code page, and the code. */
  const ask = async (email: string) => {
    const browser = new Browser(baseUrl);
    const start = await browser.request('/customer');
    const asked = await browser.request('/customer/code', { form: { email, csrf: Browser.csrfOf(start.text) } });
    assert.equal(asked.status, 200, asked.text);
    const row = await db
      .selectFrom('payer_codes')
      .select('code_sealed')
      .where('email', '=', email)
      .orderBy('created_at', 'desc')
      .executeTakeFirstOrThrow();
    return { browser, page: asked.text, code: app.deps.secrets.open(row.code_sealed) };
  };
  const triesLeft = async (email: string) =>
    Number(
      (
        await db
          .selectFrom('payer_codes')
          .select('tries_left')
          .where('email', '=', email)
          .orderBy('created_at', 'desc')
          .executeTakeFirstOrThrow()
      ).tries_left,
    );
  /** What the wrong-code limits have counted, all keys together. */
  const checksCounted = async () => {
    const rows = await db
      .selectFrom('attempt_windows')
      .select(['scope', 'attempts'])
      .where('scope', 'in', [PAYER_LIMITS.checksByClient.scope, PAYER_LIMITS.wrongCodesByEmail.scope])
      .execute();
    return rows.reduce((sum, row) => sum + Number(row.attempts), 0);
  };
  return { app, baseUrl, ask, triesLeft, checksCounted };
}

/** The opening tag of the element with this id. */
const tagOf = (html: string, id: string) => {
  const match = new RegExp(`<[a-z]+ [^>]*id="${id}"[^>]*>`).exec(html);
  assert.ok(match, `an element #${id}`);
  return match[0];
};

test('a code that is not 6 digits asks for the 6-digit code and spends nothing: no try of the code, no wrong-code limit; spaces in a pasted code are dropped', async (t) => {
  const { ask, triesLeft, checksCounted } = await service(t);
  const email = 'someone@example.com';
  const { browser, page, code } = await ask(email);
  let csrf = Browser.csrfOf(page);
  for (const typed of ['', '   ', '12345', '1234567', '12345x', '１２３４５６', '12-345']) {
    const reply = await browser.request('/customer/verify', { form: { email, code: typed, csrf } });
    assert.equal(reply.status, 400, typed);
    assert.match(reply.text, /<p id="code-error">Enter the 6-digit code from the email<\/p>/, typed);
    assert.doesNotMatch(reply.text, /tries? left|no longer works/, typed);
    // the code page again, its field marked and described by the error
    assert.match(tagOf(reply.text, 'code'), /aria-invalid="true" aria-describedby="code-error"/);
    assert.equal(await triesLeft(email), CODE_TRIES, `"${typed}" spends no try`);
    assert.equal(await checksCounted(), 0, `"${typed}" counts toward no limit`);
    csrf = Browser.csrfOf(reply.text);
  }
  // a wrong code of 6 digits still spends one
  const wrong = code === '000000' ? '111111' : '000000';
  const counted = await browser.request('/customer/verify', { form: { email, code: wrong, csrf } });
  assert.match(counted.text, new RegExp(`That code is not right\\. You have ${CODE_TRIES - 1} tries left\\.`));
  assert.equal(await triesLeft(email), CODE_TRIES - 1);
  // the right code pasted with a space in the middle and around it signs in
  const pasted = ` ${code.slice(0, 3)} ${code.slice(3)} `;
  const signedIn = await browser.request('/customer/verify', {
    form: { email, code: pasted, csrf: Browser.csrfOf(counted.text) },
  });
  assert.equal(signedIn.status, 303, signedIn.text);
  assert.ok(browser.cookie('tono_payer'));
});

test('a sign-in error is tied to the email field only when the email is what is wrong; the others are an alert of their own', async (t) => {
  const { app, baseUrl, ask } = await service(t);

  // a mistyped email: the field is invalid and described by the error, which the page alerts
  const browser = new Browser(baseUrl);
  const start = await browser.request('/customer');
  assert.doesNotMatch(tagOf(start.text, 'email'), /aria-invalid|aria-describedby/, 'no error, nothing marked');
  const mistyped = await browser.request('/customer/code', {
    form: { email: 'name@example', csrf: Browser.csrfOf(start.text) },
  });
  assert.equal(mistyped.status, 400);
  assert.match(tagOf(mistyped.text, 'email'), /aria-invalid="true" aria-describedby="email-error"/);
  assert.match(mistyped.text, /value="name@example"/);
  assert.match(
    mistyped.text,
    /<div class="error-summary" role="alert"><p id="email-error">Enter the email address your plans were set up with, like name@example\.com<\/p><\/div>/,
  );
  assert.match(mistyped.text, /<div class="field has-error">\s*<label for="email">/);

  // a code that no longer works: the email is right, so it is neither marked nor described
  const email = 'someone@example.com';
  const asked = await ask(email);
  let csrf = Browser.csrfOf(asked.page);
  const wrong = asked.code === '000000' ? '111111' : '000000';
  let dead: Awaited<ReturnType<Browser['request']>> | undefined;
  for (let i = 0; i < 5; i++) {
    dead = await asked.browser.request('/customer/verify', { form: { email, code: wrong, csrf } });
    csrf = Browser.csrfOf(dead.text);
  }
  assert.match(dead!.text, /That code no longer works/);
  const unrelated = (html: string, error: RegExp) => {
    const field = tagOf(html, 'email');
    assert.match(field, new RegExp(`value="${email.replace('.', '\\.')}"`));
    assert.doesNotMatch(field, /aria-invalid|aria-describedby/);
    assert.match(html, /<div class="field">\s*<label for="email">/);
    assert.doesNotMatch(html, /id="email-error"/);
    assert.match(html, new RegExp(`<div class="error-summary" role="alert"><p id="signin-error">${error.source}`));
  };
  unrelated(dead!.text, /That code no longer works/);

  // too many codes asked for from one address: not the email's fault either
  const address = '198.51.100.9';
  let limited: Awaited<ReturnType<typeof app.app.inject>> | undefined;
  for (let i = 0; i <= PAYER_LIMITS.sendsByClient.max; i++) {
    const page = await app.app.inject({ method: 'GET', url: '/customer', remoteAddress: address });
    limited = await app.app.inject({
      method: 'POST',
      url: '/customer/code',
      remoteAddress: address,
      headers: {
        cookie: page.cookies.map((c) => `${c.name}=${c.value}`).join('; '),
        origin: baseUrl,
        'content-type': 'application/x-www-form-urlencoded',
      },
      payload: new URLSearchParams({ email, csrf: Browser.csrfOf(page.body) }).toString(),
    });
  }
  assert.equal(limited!.statusCode, 429);
  unrelated(limited!.body, /Too many codes have been asked for/);
});

test('the bar at the top is a header, and Log out, with its CSRF token, is in an Account navigation landmark', async (t) => {
  const { ask } = await service(t);
  const email = 'someone@example.com';
  const { browser, page, code } = await ask(email);
  // before sign-in: the header, and no Log out
  assert.match(
    page,
    /<header class="topbar">\s*<strong>Your payments with Tono<\/strong>\s*<\/header>\s*<main id="main"/,
  );
  assert.doesNotMatch(page, /Log out|<nav/);
  const verified = await browser.request('/customer/verify', { form: { email, code, csrf: Browser.csrfOf(page) } });
  assert.equal(verified.status, 303, verified.text);
  const home = await browser.request('/customer');
  assert.equal(home.status, 200);
  assert.match(home.headers.get('content-security-policy') ?? '', /script-src 'none'|default-src 'none'/);
  assert.equal(home.headers.get('referrer-policy'), 'no-referrer');
  const bar = /<header class="topbar">([\s\S]*?)<\/header>/.exec(home.text);
  assert.ok(bar, 'a header');
  assert.match(
    bar[1],
    /<strong>Your payments with Tono<\/strong>\s*<nav aria-label="Account"><form method="post" action="\/customer\/logout"><input type="hidden" name="csrf" value="([^"]+)"><button type="submit" class="link-button">Log out<\/button><\/form><\/nav>/,
  );
  // nothing between the skip link and the landmarks but the header itself
  assert.match(home.text, /<body>\s*<a class="skip-link" href="#main">Skip to content<\/a>\s*<header /);
  assert.match(home.text, /<\/header>\s*<main id="main" tabindex="-1">/);
  // the token in the form logs out; a forged one does not
  const token = Browser.csrfOf(bar[1]);
  assert.equal((await browser.request('/customer/logout', { form: { csrf: 'forged' } })).status, 403);
  const out = await browser.request('/customer/logout', { form: { csrf: token } });
  assert.equal(out.status, 303);
  assert.match((await browser.request('/customer')).text, /Send code/);
});
