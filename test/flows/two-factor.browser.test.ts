// Two-factor sign-in in a real browser (Debian's Chromium through playwright-core): set up TOTP
// from the account page with a code computed here from the secret the page shows, log out, log in
// with the password and a fresh code; and a passkey added on the account page (with a current code) and used to sign in,
// with Chromium's virtual authenticator (DevTools' WebAuthn domain). Each two-factor page is
// checked with axe-core (no serious or critical violations). SQLite only; skipped when Chromium is absent.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { accessibilityProblems, browserSkipReason, newBrowserPage } from '../support/chromium.ts';
import { TOTP } from 'otpauth';
import { dashWorld, PASSWORD } from '../dashboard.ts';
import { chainCommitted } from '../../src/modules/audit/audit.service.ts';

const codeAt = (secret: string, timestamp: number) =>
  new TOTP({ secret, algorithm: 'SHA1', digits: 6, period: 30 }).generate({ timestamp });

test('set up two-factor sign-in from the account page, log out, log in with the password and a fresh code', {
  skip: browserSkipReason ?? false,
}, async (t) => {
  const world = await dashWorld(t, { workers: false });
  const [kowhai] = world.merchants;
  const { page, errors } = await newBrowserPage(t);

  const logIn = async () => {
    await page.goto(`${world.baseUrl}/dashboard`);
    await page.getByLabel('Email').fill(kowhai.email);
    await page.getByLabel('Password').fill(PASSWORD);
    await page.getByRole('button', { name: 'Log in' }).click();
  };
  await logIn();
  await page.waitForURL(/\/dashboard\/(live|test)$/);

  await page.goto(`${world.baseUrl}/dashboard/account`);
  await page.getByRole('link', { name: 'Set up two-factor sign-in' }).click();
  await page.waitForURL(/\/dashboard\/account\/two-factor\/setup$/);
  const qr = page.getByRole('img', { name: 'QR code of your two-factor sign-in key' });
  assert.ok((await qr.evaluate((img: any) => img.naturalWidth)) > 100, 'the QR code is drawn');
  assert.deepEqual(await accessibilityProblems(page), []);
  const secret = (await page.locator('#totp-secret').innerText()).replace(/\s/g, '');
  assert.match(secret, /^[A-Z2-7]{32}$/);
  await page.getByLabel('6-digit code').fill(codeAt(secret, Date.now()));
  await page.getByRole('button', { name: 'Turn on two-factor sign-in' }).click();

  await page.getByRole('heading', { name: 'Your recovery codes' }).waitFor();
  assert.equal(await page.locator('#recovery-codes li').count(), 10);
  assert.deepEqual(await accessibilityProblems(page), []);
  await page.getByRole('link', { name: /I have kept them/ }).click();
  await page.waitForURL(/\/dashboard\/account$/);
  assert.match(await page.locator('main').innerText(), /On\. After your password, logging in asks for a code/);
  await page.getByRole('button', { name: 'Log out' }).click();
  await page.waitForURL(/\/dashboard\/login$/);

  await logIn();
  await page.waitForURL(/\/dashboard\/login\/two-factor$/);
  await page.getByRole('heading', { name: 'Enter your code' }).waitFor();
  assert.deepEqual(await accessibilityProblems(page), []);
  // the code of the next step: the one used to set up may still be showing, and is used already
  await page.getByLabel('Code').fill(codeAt(secret, Date.now() + 30_000));
  await page.getByRole('button', { name: 'Log in' }).click();
  await page.waitForURL(/\/dashboard\/(live|test)$/);
  assert.match(await page.locator('.who').innerText(), /Kōwhai Coffee/);
  assert.deepEqual(errors, []);
});

test('add a passkey on the account page, log out, and give the second step with it', {
  skip: browserSkipReason ?? false,
}, async (t) => {
  const world = await dashWorld(t, { workers: false });
  // A passkey's relying party is a host name: the service is reached as localhost, not 127.0.0.1.
  const base = world.baseUrl.replace('127.0.0.1', 'localhost');
  world.app.deps.config.publicBaseUrl = base;
  const [kowhai] = world.merchants;
  const { page, errors } = await newBrowserPage(t);
  const devtools = await page.context().newCDPSession(page);
  await devtools.send('WebAuthn.enable');
  const { authenticatorId } = await devtools.send('WebAuthn.addVirtualAuthenticator', {
    options: {
      protocol: 'ctap2',
      transport: 'usb',
      hasResidentKey: false,
      hasUserVerification: true,
      isUserVerified: true,
      automaticPresenceSimulation: true,
    },
  });

  const logIn = async () => {
    await page.goto(`${base}/dashboard`);
    await page.getByLabel('Email').fill(kowhai.email);
    await page.getByLabel('Password').fill(PASSWORD);
    await page.getByRole('button', { name: 'Log in' }).click();
  };
  await logIn();
  await page.waitForURL(/\/dashboard\/(live|test)$/);
  await page.goto(`${base}/dashboard/account/two-factor/setup`);
  const secret = (await page.locator('#totp-secret').innerText()).replace(/\s/g, '');
  await page.getByLabel('6-digit code').fill(codeAt(secret, Date.now()));
  await page.getByRole('button', { name: 'Turn on two-factor sign-in' }).click();
  await page.getByRole('heading', { name: 'Your recovery codes' }).waitFor();

  await page.goto(`${base}/dashboard/account`);
  await page.getByLabel('Name for a new passkey').fill('Keyring <key>');
  // Adding a passkey changes the second step: it takes a current code (the next step's: the set-up's is used).
  await page.getByLabel('Code from your authenticator app').fill(codeAt(secret, Date.now() + 30_000));
  await page.getByRole('button', { name: 'Add a passkey' }).click();
  await page.waitForURL(/\/dashboard\/account\?done=passkey-added/);
  const main = await page.locator('main').innerText();
  assert.match(main, /The passkey is added/);
  assert.match(main, /Keyring <key>\s+\S/, 'the name is shown as typed (escaped in the page)');
  assert.deepEqual(await accessibilityProblems(page), []);
  const { credentials } = await devtools.send('WebAuthn.getCredentials', { authenticatorId });
  assert.equal(credentials.length, 1);
  const stored = await world.app.deps.db.selectFrom('two_factor_passkeys').selectAll().execute();
  assert.equal(stored.length, 1);
  assert.equal(
    stored[0]!.credential_id,
    credentials[0]!.credentialId.replace(/=+$/, '').replace(/\+/g, '-').replace(/\//g, '_'),
  );

  await page.getByRole('button', { name: 'Log out' }).click();
  await page.waitForURL(/\/dashboard\/login$/);
  await logIn();
  await page.waitForURL(/\/dashboard\/login\/two-factor$/);
  assert.deepEqual(await accessibilityProblems(page), []);
  await page.getByRole('button', { name: 'Use a passkey' }).click();
  await page.waitForURL(/\/dashboard\/(live|test)$/);
  assert.match(await page.locator('.who').innerText(), /Kōwhai Coffee/);

  const used = await world.app.deps.db.selectFrom('two_factor_passkeys').selectAll().executeTakeFirstOrThrow();
  assert.ok(used.last_used_at !== null, 'the sign-in is recorded on the passkey');
  await chainCommitted(world.app.deps.db);
  const actions = (
    await world.app.deps.db.selectFrom('audit_events').select('action').where('user_id', '=', kowhai.userId).execute()
  ).map((row) => row.action);
  assert.ok(actions.includes('member.passkey_add'));
  assert.equal(actions.filter((action) => action === 'member.sign_in').length, 2);
  assert.deepEqual(errors, []);
});
