import { test } from 'node:test';
import assert from 'node:assert/strict';
import { nextStep, parseForms } from './pay.bank-driver.ts';

const login = `<main><form method="post" action="/sandbox-bank/authorize/login">
  <input type="hidden" name="consent_id" value="c&amp;1">
  <input type="hidden" name="state" value="abc">
  <label for="username">Username</label><input type="text" id="username" name="username" autocomplete="username" required value="">
  <label for="password">Password</label><input type="password" id="password" name="password" required>
  <button type="submit" class="primary">Sign in</button></form></main>`;
const decide = `<form method="post" action="/sandbox-bank/authorize/decision"><input type="hidden" name="session" value="s1">
  <button type="submit" name="decision" value="approve">Approve</button><button type="submit" name="decision" value="decline">Decline</button></form>`;

test('reads forms with their hidden fields and buttons', () => {
  const [form] = parseForms(login);
  assert.equal(form.action, '/sandbox-bank/authorize/login');
  assert.deepEqual(
    form.controls.map((c) => c.attrs.name),
    ['consent_id', 'state', 'username', 'password', undefined],
  );
  assert.equal(form.controls[0].attrs.value, 'c&1');
});

test('signs in as sandbox, then presses the chosen button', () => {
  const signIn = nextStep(login, 'http://bank.test/sandbox-bank/authorize?x=1', 'approve')!;
  assert.equal(signIn.url, 'http://bank.test/sandbox-bank/authorize/login');
  assert.equal(signIn.method, 'post');
  assert.deepEqual(Object.fromEntries(signIn.body!), {
    consent_id: 'c&1',
    state: 'abc',
    username: 'sandbox',
    password: 'test-password',
  });
  for (const decision of ['approve', 'decline'] as const) {
    const step = nextStep(decide, 'http://bank.test/sandbox-bank/authorize/login', decision)!;
    assert.equal(step.url, 'http://bank.test/sandbox-bank/authorize/decision');
    assert.deepEqual(Object.fromEntries(step.body!), { session: 's1', decision });
  }
  assert.equal(nextStep('<p>Something went wrong</p>', 'http://bank.test/', 'approve'), null);
});
