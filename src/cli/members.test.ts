import { test } from 'node:test';
import assert from 'node:assert/strict';
import pino from 'pino';
import { loadConfig } from '../config.ts';
import { createRuntime } from '../runtime.ts';
import { Browser } from '../../test/payer.ts';
import { processStore, runCli, type Store } from '../../test/process.ts';

// `member create-owner` against a real database (SQLite, or PostgreSQL when TEST_ENGINE=postgres),
// and the dashboard of the same database taking the owner it made.

async function dashboardOn(t: Parameters<typeof processStore>[0], store: Store) {
  const config = { ...loadConfig({ ...store.env, LOG_LEVEL: 'silent', DEMO_MERCHANT: 'false' }), workers: false };
  const runtime = await createRuntime(config, { log: pino({ level: 'silent' }) });
  t.after(() => runtime.close());
  const baseUrl = (await runtime.app.listen({ port: 0, host: '127.0.0.1' })).replace('localhost', '127.0.0.1');
  runtime.deps.config.publicBaseUrl = baseUrl;
  return baseUrl;
}

async function logsIn(baseUrl: string, email: string, password: string): Promise<number> {
  const browser = new Browser(baseUrl);
  const page = await browser.request('/dashboard/login');
  return (await browser.request('/dashboard/login', { form: { email, password, csrf: Browser.csrfOf(page.text) } }))
    .status;
}

test('member create-owner: a new owner with a one-time set-password link, or a password from stdin; an existing member made owner', async (t) => {
  const store = await processStore(t, { migrated: true });
  assert.equal((await runCli(store, ['migrate'])).status, 0);
  const merchant = JSON.parse(
    (await runCli(store, ['merchant', 'create', '--name', 'Kiwi', '--email', 'owner@kiwi.example', '--json'])).stdout,
  );
  const other = JSON.parse(
    (await runCli(store, ['merchant', 'create', '--name', 'Tui', '--email', 'owner@tui.example', '--json'])).stdout,
  );

  const linked = await runCli(store, [
    'member',
    'create-owner',
    '--merchant',
    merchant.user_id,
    '--email',
    'New@Kiwi.example',
    '--json',
  ]);
  assert.equal(linked.status, 0, linked.stderr);
  const made = JSON.parse(linked.stdout);
  assert.deepEqual(
    [made.merchant_id, made.email, made.role, made.created],
    [merchant.user_id, 'new@kiwi.example', 'owner', true],
  );
  assert.match(made.member_id, /^mem_[0-9A-Z]{26}$/);
  const link = /^https?:\/\/[^/]+(\/dashboard\/reset\/[A-Za-z0-9_-]+)$/.exec(made.set_password_link);
  assert.ok(link, made.set_password_link);

  const piped = await runCli(
    store,
    ['member', 'create-owner', '--merchant', merchant.user_id, '--email', 'second@kiwi.example', '--password-stdin'],
    'a long passphrase here\n',
  );
  assert.equal(piped.status, 0, piped.stderr);
  assert.ok(!piped.stdout.includes('a long passphrase here'), 'a given password is never printed');
  assert.match(piped.stdout, /dashboard {5}second@kiwi\.example \/ \(the password you gave\)/);

  // The owner the merchant was made with, made owner again with a new password: not a second member.
  const again = await runCli(store, [
    'member',
    'create-owner',
    '--merchant',
    merchant.user_id,
    '--email',
    'owner@kiwi.example',
    '--password',
    'another long pass',
    '--json',
  ]);
  assert.equal(again.status, 0, again.stderr);
  assert.equal(JSON.parse(again.stdout).created, false);
  assert.ok(!again.stdout.includes('another long pass'));

  for (const [args, stderr] of [
    [
      ['--merchant', other.user_id, '--email', 'new@kiwi.example'],
      /^error: A dashboard member with email new@kiwi\.example already exists\n/,
    ],
    [
      ['--merchant', 'user_01JD2Q8Z7M3V4K5N6P7R8S9T0V', '--email', 'x@kiwi.example'],
      /^error: no merchant user_01JD2Q8Z7M3V4K5N6P7R8S9T0V\n/,
    ],
    [['--merchant', merchant.user_id], /^error: member create-owner needs --merchant and --email\n/],
    [['--merchant', merchant.user_id, '--email', 'nope'], /^error: --email must be an email address, not nope\n/],
    [
      ['--merchant', merchant.user_id, '--email', 'y@kiwi.example', '--password', 'short'],
      /^error: password must be at least 12 characters\n/,
    ],
  ] as const) {
    const refused = await runCli(store, ['member', 'create-owner', ...args]);
    assert.equal(refused.status, 1, args.join(' '));
    assert.match(refused.stderr, stderr);
  }

  const baseUrl = await dashboardOn(t, store);
  // The linked owner cannot log in until they choose a password at the link, which works once.
  const browser = new Browser(baseUrl);
  const page = await browser.request(link[1]);
  assert.equal(page.status, 200);
  const set = await browser.request(link[1], {
    form: { csrf: Browser.csrfOf(page.text), password: 'chosen at the link' },
  });
  assert.equal(set.status, 303);
  assert.equal((await new Browser(baseUrl).request(link[1])).status, 400);
  assert.equal(await logsIn(baseUrl, 'new@kiwi.example', 'chosen at the link'), 303);
  assert.equal(await logsIn(baseUrl, 'second@kiwi.example', 'a long passphrase here'), 303);
  assert.equal(await logsIn(baseUrl, 'owner@kiwi.example', 'another long pass'), 303);
  assert.equal(await logsIn(baseUrl, 'owner@kiwi.example', merchant.dashboard_password), 400);
});
