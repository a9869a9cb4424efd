import { test } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import http from 'node:http';
import { ConfigError, loadConfig } from '../../config.ts';
import { AppError } from '../../shared/errors.ts';
import { OpenBankingRegistry } from './registry.ts';

const sandboxCredentials = { clientId: 'tono', clientSecret: 'made-at-first-start' };

const env = { PORT: '0', LOG_LEVEL: 'silent' };

test('test mode lists the sandbox bank and the major NZ banks, all routed to the sandbox bank', async (t) => {
  const registry = new OpenBankingRegistry({ config: loadConfig(env), sandboxCredentials });
  t.after(() => registry.close());
  assert.deepEqual(
    registry.list('test').map((bank) => bank.name),
    ['Sandbox Bank', 'ANZ', 'ASB', 'BNZ', 'Westpac', 'Kiwibank', 'TSB', 'Co-operative Bank', 'Heartland Bank'],
  );
  for (const bank of registry.list('test')) {
    const connector = registry.connectorFor(bank.id, 'test')!;
    assert.equal(connector.bankId, bank.id);
    assert.ok(
      connector
        .authoriseUrl({ consentId: 'c', redirectUri: 'r', state: 's' })
        .startsWith('http://127.0.0.1:0/sandbox-bank/authorize?'),
    );
  }
  assert.equal(registry.connectorFor('nosuchbank', 'test'), null);
  assert.deepEqual(registry.list('live'), []);
  assert.equal(registry.connectorFor('anz', 'live'), null);
});

test('the mounted sandbox URL follows PUBLIC_BASE_URL set after listening; SANDBOX_BANK_URL wins when set', async (t) => {
  const config = loadConfig(env);
  const registry = new OpenBankingRegistry({ config, sandboxCredentials });
  t.after(() => registry.close());
  config.publicBaseUrl = 'http://127.0.0.1:4567';
  assert.equal(registry.sandboxUrl(), 'http://127.0.0.1:4567/sandbox-bank');
  const explicit = new OpenBankingRegistry({
    config: loadConfig({ ...env, SANDBOX_BANK_URL: 'http://127.0.0.1:3001' }),
    sandboxCredentials,
  });
  t.after(() => explicit.close());
  assert.equal(explicit.sandboxUrl(), 'http://127.0.0.1:3001');
});

test("a test hook the bank refuses is 409 with the bank's message; the bank failing or out of reach is 503", async (t) => {
  const answers: Array<[number, string]> = [
    [
      400,
      JSON.stringify({
        Code: '400',
        Message: 'Bad request',
        Errors: [{ ErrorCode: 'U.Field.Invalid', Message: 'No such consent' }],
      }),
    ],
    [500, 'boom'],
  ];
  const server = http.createServer((_request, response) => {
    const [status, body] = answers.shift()!;
    response.writeHead(status, { 'content-type': 'application/json' }).end(body);
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  t.after(() => server.close());
  const port = (server.address() as { port: number }).port;
  const registry = new OpenBankingRegistry({
    config: loadConfig({ ...env, SANDBOX_BANK_URL: `http://127.0.0.1:${port}` }),
    sandboxCredentials,
  });
  t.after(() => registry.close());
  const refusal = (code: string, status: number, message: RegExp) => (error: unknown) =>
    error instanceof AppError && error.code === code && error.status === status && message.test(error.message);
  await assert.rejects(
    registry.sandboxTestHook('/consents/c-1/decline-next', {}),
    refusal('conflict.invalid_state', 409, /refused the test hook: No such consent$/),
  );
  await assert.rejects(
    registry.sandboxTestHook('/consents/c-1/decline-next', {}),
    refusal('service_unavailable', 503, /failed the test hook \(500\): boom$/),
  );
  server.close();
  await assert.rejects(
    registry.sandboxTestHook('/consents/c-1/decline-next', {}),
    refusal('service_unavailable', 503, /could not be reached/),
  );
});

function banksFile(t: import('node:test').TestContext, content: string): string {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'tono-banks-'));
  t.after(() => fs.rmSync(dir, { recursive: true, force: true }));
  const file = path.join(dir, 'banks.json');
  fs.writeFileSync(file, content);
  return file;
}

test('live mode uses the banks in BANKS_FILE', async (t) => {
  const file = banksFile(
    t,
    JSON.stringify({
      banks: [
        {
          id: 'anz',
          name: 'ANZ',
          base_url: 'https://api.anz.example/open-banking/',
          client_id: 'cid',
          client_secret: 'sec',
        },
      ],
    }),
  );
  const registry = new OpenBankingRegistry({ config: loadConfig({ ...env, BANKS_FILE: file }), sandboxCredentials });
  t.after(() => registry.close());
  assert.deepEqual(registry.list('live'), [{ id: 'anz', name: 'ANZ' }]);
  const connector = registry.connectorFor('anz', 'live')!;
  assert.equal(
    connector.authoriseUrl({ consentId: 'c1', redirectUri: 'https://tono.example/pay/return', state: 's' }),
    'https://api.anz.example/open-banking/authorize?consent_id=c1&redirect_uri=https%3A%2F%2Ftono.example%2Fpay%2Freturn&state=s&client_id=cid',
  );
  assert.equal(registry.connectorFor('bnz', 'live'), null);
});

test('a bad BANKS_FILE stops start-up with one line naming BANKS_FILE', (t) => {
  const cases: Array<[string, RegExp]> = [
    ['{ not json', /^BANKS_FILE is not valid JSON \(/],
    ['{"banks": {}}', /^BANKS_FILE must hold a JSON array of banks/],
    [
      '[{"id":"anz","name":"ANZ","base_url":"http://bank.example","client_id":"a","client_secret":"b"}]',
      /^BANKS_FILE entry 1 .*"base_url" must use https/,
    ],
    ['[{"id":"anz","name":"ANZ","base_url":"https://bank.example"}]', /^BANKS_FILE entry 1 .*needs "client_id"/],
    [
      '[{"id":"anz","name":"ANZ","base_url":"https://bank.example","client_id":"a","token_endpoint_auth_method":"private_key_jwt"}]',
      /^BANKS_FILE entry 1 .*private_key_jwt needs "private_key_file"/,
    ],
    [
      '[{"id":"anz","name":"ANZ","base_url":"https://bank.example","client_id":"a","token_endpoint_auth_method":"tls_client_auth"}]',
      /^BANKS_FILE entry 1 .*"token_endpoint_auth_method" must be client_secret_basic or private_key_jwt/,
    ],
    [
      '[{"id":"anz","name":"ANZ","base_url":"https://bank.example","client_id":"a","client_secret":"b","tls_cert_file":"banks.json"}]',
      /^BANKS_FILE entry 1 .*needs both "tls_cert_file" and "tls_key_file"/,
    ],
    [
      '[{"id":"anz","name":"ANZ","base_url":"https://bank.example","client_id":"a","client_secret":"b","ca_file":"missing.pem"}]',
      /^BANKS_FILE entry 1 .*"ca_file" cannot be read \(.*missing\.pem\): ENOENT/,
    ],
  ];
  for (const [content, expected] of cases) {
    const file = banksFile(t, content);
    assert.throws(
      () => loadConfig({ ...env, BANKS_FILE: file }),
      (error: Error) => error instanceof ConfigError && expected.test(error.message) && !error.message.includes('\n'),
    );
  }
  assert.throws(
    () => loadConfig({ ...env, BANKS_FILE: '/nonexistent/banks.json' }),
    (error: Error) =>
      error instanceof ConfigError && error.message === 'BANKS_FILE cannot be read (/nonexistent/banks.json): ENOENT',
  );
});
