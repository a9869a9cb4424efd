import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawn, execFileSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { Agent, getGlobalDispatcher, setGlobalDispatcher } from 'undici';
import { authoriseAtBank } from '../../src/modules/test-helpers/pay.bank-driver.ts';
import { apiClient, buildTestApp, createTestMerchant } from '../helpers.ts';
import { freePort } from '../process.ts';
import { returnToService, submitPage } from './checkout.fixtures.ts';

// Live mode against a bank that implements the standard with a FAPI-like profile: the sandbox
// bank run on its own (npm run sandbox-bank) over HTTPS, asking for mutual TLS on its API and
// private_key_jwt at its token endpoint, named in BANKS_FILE as a live bank.

const root = path.resolve(import.meta.dirname, '..', '..');
const nodeBin = process.execPath;

function openssl(dir: string, ...args: string[]) {
  execFileSync('openssl', args, { cwd: dir, stdio: 'pipe' });
}

/** A CA, a server certificate for 127.0.0.1, a client certificate, and the client's signing key pair. */
function makeKeys(dir: string) {
  openssl(
    dir,
    'req',
    '-x509',
    '-newkey',
    'rsa:2048',
    '-nodes',
    '-keyout',
    'ca.key',
    '-out',
    'ca.pem',
    '-days',
    '2',
    '-subj',
    '/CN=Test Bank CA',
  );
  for (const [name, subject, ext] of [
    ['server', '/CN=127.0.0.1', 'subjectAltName=IP:127.0.0.1\nextendedKeyUsage=serverAuth'],
    ['client', '/CN=tono', 'extendedKeyUsage=clientAuth'],
  ] as const) {
    fs.writeFileSync(path.join(dir, `${name}.ext`), `${ext}\n`);
    openssl(
      dir,
      'req',
      '-newkey',
      'rsa:2048',
      '-nodes',
      '-keyout',
      `${name}.key`,
      '-out',
      `${name}.csr`,
      '-subj',
      subject,
    );
    openssl(
      dir,
      'x509',
      '-req',
      '-in',
      `${name}.csr`,
      '-CA',
      'ca.pem',
      '-CAkey',
      'ca.key',
      '-CAcreateserial',
      '-out',
      `${name}.pem`,
      '-days',
      '2',
      '-extfile',
      `${name}.ext`,
    );
  }
  openssl(dir, 'genpkey', '-algorithm', 'EC', '-pkeyopt', 'ec_paramgen_curve:P-256', '-out', 'jwt.key');
  openssl(dir, 'pkey', '-in', 'jwt.key', '-pubout', '-out', 'jwt.pub');
}

async function startBank(
  t: import('node:test').TestContext,
  dir: string,
  port: number,
  redirectUri: string,
): Promise<void> {
  const child = spawn(nodeBin, ['src/sandbox-bank/main.ts'], {
    cwd: root,
    env: {
      PATH: process.env.PATH ?? '',
      PORT: String(port),
      HOST: '127.0.0.1',
      DATA_DIR: path.join(dir, 'bank-data'),
      LOG_LEVEL: 'silent',
      SANDBOX_REDIRECT_URI: redirectUri,
      SANDBOX_TLS_CERT_FILE: path.join(dir, 'server.pem'),
      SANDBOX_TLS_KEY_FILE: path.join(dir, 'server.key'),
      SANDBOX_CLIENT_CA_FILE: path.join(dir, 'ca.pem'),
      SANDBOX_CLIENT_PUBLIC_KEY_FILE: path.join(dir, 'jwt.pub'),
    },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  t.after(() => {
    child.kill('SIGTERM');
  });
  let output = '';
  await new Promise<void>((resolve, reject) => {
    child.stdout!.on('data', (chunk) => {
      output += chunk;
      if (output.includes('Sandbox Bank is running at https://')) resolve();
    });
    child.stderr!.on('data', (chunk) => {
      output += chunk;
    });
    child.on('exit', (code) => reject(new Error(`the sandbox bank exited (${code}): ${output}`)));
  });
}

test('a live payment through a standalone bank with mutual TLS and private_key_jwt', async (t) => {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'tono-live-bank-'));
  t.after(() => fs.rmSync(dir, { recursive: true, force: true }));
  fs.mkdirSync(path.join(dir, 'bank-data'));
  makeKeys(dir);
  const [appPort, bankPort] = [await freePort(), await freePort()];
  const baseUrl = `http://127.0.0.1:${appPort}`;
  const bankUrl = `https://127.0.0.1:${bankPort}`;
  await startBank(t, dir, bankPort, `${baseUrl}/pay/return`);

  // Paths in BANKS_FILE are relative to its folder.
  const banksFile = path.join(dir, 'banks.json');
  fs.writeFileSync(
    banksFile,
    JSON.stringify({
      banks: [
        {
          id: 'kiwi',
          name: 'Kiwi Test Bank',
          base_url: bankUrl,
          client_id: 'tono',
          token_endpoint_auth_method: 'private_key_jwt',
          private_key_file: 'jwt.key',
          key_id: 'tono-1',
          tls_cert_file: 'client.pem',
          tls_key_file: 'client.key',
          ca_file: 'ca.pem',
        },
      ],
    }),
  );
  const app = await buildTestApp(t, { banksFile });
  await app.app.listen({ port: appPort, host: '127.0.0.1' });
  app.deps.config.publicBaseUrl = baseUrl;

  // The payer's browser trusts the bank's certificate, and has no client certificate.
  const ca = fs.readFileSync(path.join(dir, 'ca.pem'), 'utf8');
  const previous = getGlobalDispatcher();
  const browser = new Agent({ connect: { ca } });
  setGlobalDispatcher(browser);
  t.after(async () => {
    setGlobalDispatcher(previous);
    await browser.close();
  });

  assert.deepEqual(app.deps.banks.list('live'), [{ id: 'kiwi', name: 'Kiwi Test Bank' }]);
  const merchant = await createTestMerchant(app);
  const live = apiClient(app, merchant.liveKey);
  const created = await live.post('/v1/requests', {
    bank_account_id: merchant.bankAccountId,
    amount: '23.40 NZD',
    message: 'Live order',
  });
  assert.equal(created.status, 201, created.text);
  const request = created.body.request;

  const submitted = await submitPage(baseUrl, request.id, { bank: 'kiwi' });
  assert.equal(submitted.status, 303, submitted.body.slice(0, 500));
  assert.ok(submitted.location!.startsWith(`${bankUrl}/authorize?`), submitted.location!);
  const back = await authoriseAtBank(submitted.location!, 'approve', `${baseUrl}/pay/return`);
  await returnToService(back);

  const [payment] = (await live.get(`/v1/requests/${request.id}/payments`)).body.payments;
  assert.equal(payment.status, 'successful', JSON.stringify(payment));
  assert.equal(payment.provider, 'kiwi');
  assert.deepEqual(payment.amount, { value: '23.40 NZD', formatted: '$23.40' });

  // Without a client certificate, the bank's token endpoint and API refuse.
  const token = await fetch(`${bankUrl}/token`, {
    method: 'POST',
    headers: { 'content-type': 'application/x-www-form-urlencoded' },
    body: 'grant_type=client_credentials',
  });
  assert.equal(token.status, 401);
  assert.equal(((await token.json()) as { error: string }).error, 'invalid_client');
  const api = await fetch(`${bankUrl}/domestic-payments/${payment.id}`, {
    headers: { authorization: 'Bearer abcdefghijklmnopqrstuvwxyz' },
  });
  assert.equal(api.status, 401);
  assert.equal(((await api.json()) as { Errors: Array<{ ErrorCode: string }> }).Errors[0].ErrorCode, 'Header.Invalid');
});
