import { test } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import { DatabaseSync } from 'node:sqlite';
import pino from 'pino';
import { loadConfig } from '../config.ts';
import { createRuntime } from '../runtime.ts';
import { apiClient, VALID_ACCOUNT } from '../../test/helpers.ts';
import { processStore, runCli, type Store } from '../../test/process.ts';
import { KEY_RESOURCES } from '../modules/merchants/key-scopes.rules.ts';

// The admin CLI against a real database: SQLite, or PostgreSQL when TEST_ENGINE=postgres.

async function serviceOn(t: Parameters<typeof processStore>[0], store: Store) {
  const config = { ...loadConfig({ ...store.env, LOG_LEVEL: 'silent', DEMO_MERCHANT: 'false' }), workers: false };
  const runtime = await createRuntime(config, { log: pino({ level: 'silent' }) });
  t.after(() => runtime.close());
  return runtime;
}

test('merchant create, keys create|roll|revoke, bank-accounts add, migrate', async (t) => {
  const store = await processStore(t);
  // before `migrate`, no command creates or touches a database
  const early = await runCli(store, ['merchant', 'create', '--name', 'Too Early', '--email', 'early@kiwi.example']);
  assert.equal(early.status, 1);
  assert.equal(early.stdout, '');
  if (store.engine === 'sqlite') {
    const file = path.join(store.dataDir, 'tono.db');
    assert.equal(
      early.stderr,
      `error: the SQLite database ${file} (DATA_DIR=${store.dataDir}) does not exist: set DATA_DIR (or DATABASE_URL) to the service's, or create it with \`npm run --silent cli -- migrate\`\n`,
    );
    assert.equal(fs.existsSync(file), false);
  } else {
    assert.match(
      early.stderr,
      /^error: the PostgreSQL database of DATABASE_URL is not migrated \(\d+ pending, from 0001-core\): start the service once, or run `npm run --silent cli -- migrate`\n$/,
    );
  }
  const migrated = await runCli(store, ['migrate', '--json']);
  assert.deepEqual([migrated.status, migrated.stdout, migrated.stderr], [0, '{"migrated":true}\n', '']);

  const created = await runCli(store, [
    'merchant',
    'create',
    '--name',
    'Kiwi Coffee',
    '--email',
    'Owner@Kiwi.example',
    '--bank-account',
    VALID_ACCOUNT,
    '--json',
  ]);
  assert.equal(created.status, 0, created.stderr);
  const merchant = JSON.parse(created.stdout);
  assert.deepEqual(Object.keys(merchant), ['user_id', 'live_key', 'test_key', 'bank_account_id', 'dashboard_password']);
  assert.match(merchant.user_id, /^user_[0-9A-Z]{26}$/);
  assert.match(merchant.live_key, /^sk_live_[A-Za-z0-9_-]{32}$/);
  assert.match(merchant.test_key, /^sk_test_[A-Za-z0-9_-]{32}$/);
  assert.match(merchant.bank_account_id, /^bankaccount_[0-9A-Z]{26}$/);
  assert.ok(merchant.dashboard_password.length >= 12);

  const withPassword = await runCli(store, [
    'merchant',
    'create',
    '--name',
    'Two',
    '--email',
    'two@kiwi.example',
    '--password',
    'long enough pass',
    '--json',
  ]);
  assert.equal(withPassword.status, 0, withPassword.stderr);
  // the operator's own password is never printed back
  assert.equal(withPassword.stdout.includes('long enough pass'), false);
  assert.equal('dashboard_password' in JSON.parse(withPassword.stdout), false);
  const withPasswordText = await runCli(store, [
    'merchant',
    'create',
    '--name',
    'Three',
    '--email',
    'three@kiwi.example',
    '--password',
    'long enough pass',
  ]);
  assert.equal(withPasswordText.status, 0, withPasswordText.stderr);
  assert.equal(withPasswordText.stdout.includes('long enough pass'), false);
  assert.match(withPasswordText.stdout, /dashboard {5}three@kiwi\.example \/ \(the password you gave\)/);
  assert.equal(JSON.parse(withPassword.stdout).bank_account_id, null);

  const refusals: Array<[string[], string]> = [
    [
      ['merchant', 'create', '--name', 'Again', '--email', 'owner@kiwi.example', '--json'],
      'error: A merchant with email owner@kiwi.example already exists\n',
    ],
    [['merchant', 'create', '--name', 'X', '--email', 'not-an-email'], 'error: email must be an email address\n'],
    [
      ['merchant', 'create', '--name', 'X', '--email', 'x@kiwi.example', '--password', 'short'],
      'error: password must be at least 8 characters\n',
    ],
    [['merchant', 'create', '--email', 'x@kiwi.example'], 'error: merchant create needs --name and --email\n'],
    [
      ['merchant', 'create', '--name', 'X', '--email', 'y@kiwi.example', '--bank-account', '12-3456-7890123-00'],
      'error: account_number must be a valid NZ bank account number BB-bbbb-AAAAAAA-SS, such as 12-3456-7890138-00 (bank, branch, account and suffix, passing the check digit)\n',
    ],
    [
      ['bank-accounts', 'add', '--merchant', merchant.user_id, '--number', '01-0902-0068388-00'],
      'error: account_number must be a valid NZ bank account number BB-bbbb-AAAAAAA-SS, such as 12-3456-7890138-00 (bank, branch, account and suffix, passing the check digit)\n',
    ],
    [
      ['bank-accounts', 'add', '--merchant', 'nobody@kiwi.example', '--number', VALID_ACCOUNT],
      'error: no merchant with email nobody@kiwi.example\n',
    ],
    [
      ['keys', 'create', '--merchant', merchant.user_id, '--mode', 'staging'],
      'error: keys create needs --merchant and --mode live|test\n',
    ],
    [['keys', 'revoke', 'key_01JD2Q8Z7M3V4K5N6P7R8S9T0V'], 'error: No such api key: key_01JD2Q8Z7M3V4K5N6P7R8S9T0V\n'],
    [
      ['keys', 'create', '--merchant', merchant.user_id, '--mode', 'test'],
      'error: keys create needs --name: say what uses the key, e.g. --name "Shop server"\n',
    ],
    [
      ['keys', 'create', '--merchant', merchant.user_id, '--mode', 'test', '--name', 'X', '--allow', 'money:write'],
      `error: --allow: money:write is not a permission: use resource:read or resource:write, the resource one of ${KEY_RESOURCES.join(', ')}\n`,
    ],
    [
      [
        'keys',
        'create',
        '--merchant',
        merchant.user_id,
        '--mode',
        'test',
        '--name',
        'X',
        '--read-only',
        '--allow',
        'requests:read',
      ],
      'error: give --read-only or --allow, not both\n',
    ],
  ];
  for (const [args, stderr] of refusals) {
    const result = await runCli(store, args);
    assert.deepEqual([result.status, result.stderr, result.stdout], [1, stderr, ''], args.join(' '));
  }
  const badFlag = await runCli(store, ['merchant', 'create', '--nmae', 'X']);
  assert.equal(badFlag.status, 2);
  assert.match(badFlag.stderr, /Unknown option '--nmae'/);
  const unknown = await runCli(store, ['frobnicate']);
  assert.equal(unknown.status, 2);
  assert.match(unknown.stderr, /^unknown command: frobnicate\n\nusage:/);

  const added = await runCli(store, [
    'bank-accounts',
    'add',
    '--merchant',
    'owner@kiwi.example',
    '--number',
    '01 0902 0068389 00',
    '--json',
  ]);
  assert.equal(added.status, 0, added.stderr);
  const account = JSON.parse(added.stdout);
  assert.deepEqual(Object.keys(account), ['id', 'account_number']);
  assert.equal(account.account_number, '01-0902-0068389-00');

  const key = JSON.parse(
    (
      await runCli(store, [
        'keys',
        'create',
        '--merchant',
        merchant.user_id,
        '--mode',
        'test',
        '--name',
        'Till',
        '--json',
      ])
    ).stdout,
  );
  assert.match(key.key, /^sk_test_/);
  assert.deepEqual([key.mode, key.name, key.access], ['test', 'Till', 'Full access']);
  const limited = JSON.parse(
    (
      await runCli(store, [
        ...['keys', 'create', '--merchant', 'owner@kiwi.example', '--mode', 'test', '--name', 'Requests only'],
        ...['--allow', 'requests:write,refunds:read', '--json'],
      ])
    ).stdout,
  );
  assert.equal(limited.access, 'Read and write requests; read refunds');
  const readOnly = JSON.parse(
    (
      await runCli(store, [
        ...['keys', 'create', '--merchant', 'owner@kiwi.example', '--mode', 'test', '--name', 'Reports'],
        ...['--read-only', '--json'],
      ])
    ).stdout,
  );
  assert.equal(readOnly.access, 'Read-only');

  const runtime = await serviceOn(t, store);
  const stored = await runtime.deps.db
    .selectFrom('api_keys')
    .select(['id', 'name', 'created_by', 'permissions'])
    .where('id', 'in', [key.id, limited.id, readOnly.id])
    .orderBy('id')
    .execute();
  assert.deepEqual(stored, [
    { id: key.id, name: 'Till', created_by: 'operator', permissions: null },
    { id: limited.id, name: 'Requests only', created_by: 'operator', permissions: 'requests:write,refunds:read' },
    { id: readOnly.id, name: 'Reports', created_by: 'operator', permissions: 'read_only' },
  ]);
  const api = apiClient(runtime, key.key);
  const request = await api.post('/v1/requests', {
    bank_account_id: account.id,
    amount: '4.50 NZD',
    message: 'Flat white',
  });
  assert.equal(request.status, 201, request.text);
  const accounts = await apiClient(runtime, merchant.live_key).get('/v1/bank-accounts');
  assert.deepEqual(
    accounts.body.bank_accounts.map((a: any) => a.id).sort(),
    [merchant.bank_account_id, account.id].sort(),
  );

  const revoked = await runCli(store, ['keys', 'revoke', key.id, '--json']);
  assert.deepEqual([revoked.status, JSON.parse(revoked.stdout)], [0, { id: key.id, revoked: true }]);
  const limitedApi = apiClient(runtime, limited.key);
  assert.equal((await limitedApi.get('/v1/requests')).status, 200);
  const noRefund = await limitedApi.post('/v1/refunds', { payment_id: 'payment_01JD2Q8Z7M3V4K5N6P7R8S9T0V' });
  assert.deepEqual(
    [noRefund.status, noRefund.body.code, noRefund.body.message],
    [403, 'forbidden.key_scope', 'This key cannot write refunds: it needs refunds:write'],
  );
  const rolledOut = await runCli(store, ['keys', 'roll', limited.id, '--period', '1h', '--json']);
  assert.equal(rolledOut.status, 0, rolledOut.stderr);
  const rolled = JSON.parse(rolledOut.stdout);
  assert.equal(rolled.name, 'Requests only');
  assert.equal(rolled.old.id, limited.id);
  assert.ok(Math.abs(Date.parse(rolled.old.stops_at) - (Date.now() + 3_600_000)) < 60_000, 'stops in an hour');
  assert.equal((await limitedApi.get('/v1/requests')).status, 200, 'the old key works for its hour');
  assert.equal((await apiClient(runtime, rolled.key).get('/v1/requests')).status, 200, 'the new key works');
  assert.equal((await apiClient(runtime, rolled.key).get('/v1/customers')).status, 403, 'with the same restriction');
  const badRoll = await runCli(store, ['keys', 'roll', rolled.id, '--period', '30d']);
  assert.deepEqual(
    [badRoll.status, badRoll.stderr.split('\n')[0]],
    [1, 'error: keys roll needs --period, how long the old key keeps working: now, 1h, 24h, 3d, 7d'],
  );
  const rolledAgain = await runCli(store, ['keys', 'roll', limited.id, '--period', '1h']);
  assert.deepEqual(
    [rolledAgain.status, rolledAgain.stderr],
    [1, 'error: This key was rolled already: it stops at its expiry\n'],
  );
  const readOnlyApi = apiClient(runtime, readOnly.key);
  assert.equal((await readOnlyApi.get('/v1/refunds')).status, 200);
  assert.equal((await readOnlyApi.post('/v1/requests', {})).status, 403);

  const refused = await api.get('/v1/requests');
  assert.deepEqual(
    [refused.status, refused.body],
    [401, { code: 'unauthorized', message: 'Unknown or revoked API key', params: {} }],
  );
  // revoking by the key itself works too, and other keys keep working
  assert.equal((await runCli(store, ['keys', 'revoke', merchant.test_key])).status, 0);
  assert.equal((await apiClient(runtime, merchant.test_key).get('/v1/requests')).status, 401);
  assert.equal((await apiClient(runtime, merchant.live_key).get('/v1/requests')).status, 200);
});

test('backup --to FILE writes an openable SQLite copy with the data', async (t) => {
  // Empty: on SQLite the processes make the key file the backup copies beside the database.
  const store = await processStore(t);
  assert.equal((await runCli(store, ['migrate'])).status, 0);
  const merchant = JSON.parse(
    (
      await runCli(store, [
        'merchant',
        'create',
        '--name',
        'Backed Up',
        '--email',
        'backup@example.com',
        '--bank-account',
        VALID_ACCOUNT,
        '--json',
      ])
    ).stdout,
  );
  const target = path.join(store.dataDir, 'copy', 'backup.db');
  const missingFolder = await runCli(store, ['backup', '--to', target]);
  assert.deepEqual(
    [missingFolder.status, missingFolder.stderr],
    [1, `error: the folder ${path.dirname(target)} does not exist; create it first\n`],
  );
  fs.mkdirSync(path.dirname(target));
  const result = await runCli(store, ['backup', '--to', target, '--json']);
  if (store.engine === 'postgres') {
    assert.deepEqual(
      [result.status, result.stderr],
      [1, 'error: backup --to works on the embedded SQLite database; for PostgreSQL use pg_dump\n'],
    );
    return;
  }
  assert.deepEqual([result.status, JSON.parse(result.stdout)], [0, { backup: target, key: `${target}.key` }]);
  // Owner-only, as the database; its key beside it (the service's key file here, no SECRET_KEY).
  assert.equal(fs.statSync(target).mode & 0o777, 0o600);
  assert.equal(fs.statSync(`${target}.key`).mode & 0o777, 0o600);
  assert.equal(
    fs.readFileSync(`${target}.key`, 'utf8'),
    fs.readFileSync(path.join(store.dataDir, 'secret.key'), 'utf8'),
  );
  const copy = new DatabaseSync(target, { readOnly: true });
  t.after(() => copy.close());
  assert.deepEqual(
    { ...copy.prepare('select id, email from users').get() },
    { id: merchant.user_id, email: 'backup@example.com' },
  );
  assert.equal((copy.prepare('select count(*) as n from api_keys').get() as { n: number }).n, 2);
  assert.equal((copy.prepare('pragma integrity_check').get() as Record<string, string>).integrity_check, 'ok');
  const again = await runCli(store, ['backup', '--to', target]);
  assert.deepEqual([again.status, again.stderr], [1, `error: ${target} already exists\n`]);
  // With SECRET_KEY (here the same key), the backup alone is written, and the key is recalled.
  const key = fs.readFileSync(path.join(store.dataDir, 'secret.key'), 'utf8').trim();
  const other = path.join(path.dirname(target), 'other.db');
  const withKey = await runCli({ ...store, env: { ...store.env, SECRET_KEY: key } }, ['backup', '--to', other]);
  assert.deepEqual(
    [withKey.status, withKey.stdout, withKey.stderr],
    [
      0,
      `backup written to ${other}\n`,
      'the backup is sealed with SECRET_KEY, which it does not hold: keep the key with it\n',
    ],
  );
  assert.equal(fs.statSync(other).mode & 0o777, 0o600);
  assert.equal(fs.existsSync(`${other}.key`), false);
  assert.deepEqual((await runCli(store, ['backup'])).stderr, 'error: backup needs --to FILE\n');
});
