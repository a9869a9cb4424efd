import fs from 'node:fs';
import path from 'node:path';
import { createPublicKey, type KeyObject } from 'node:crypto';
import pino from 'pino';
import { ConfigError, loadConfig } from '../config.ts';
import { openDb } from '../store/store.ts';
import {
  buildSandboxBankApp,
  migrateSandboxBank,
  SERVICE_CLIENT_ID,
  STANDALONE_CLIENT_SECRET,
} from './sandbox-bank.app.ts';

// npm run sandbox-bank: the sandbox bank alone, on its own SQLite file under DATA_DIR.
// PORT (default 3001), HOST, DATA_DIR, SERVICE_TIME_ZONE as for the service; the client it
// accepts is SANDBOX_CLIENT_ID / SANDBOX_CLIENT_SECRET with redirect SANDBOX_REDIRECT_URI
// (default: the service on http://127.0.0.1:3000, i.e. http://127.0.0.1:3000/pay/return).
// As a bank with a FAPI-like profile (docs/banks.md, onboarding a bank):
//   SANDBOX_TLS_CERT_FILE, SANDBOX_TLS_KEY_FILE   serve HTTPS with this certificate
//   SANDBOX_CLIENT_CA_FILE                        mutual TLS: the API and token endpoint need a client certificate from this CA
//   SANDBOX_CLIENT_PUBLIC_KEY_FILE                the client authenticates with private_key_jwt, signed by the matching key
// SANDBOX_ENDURING_TOKEN_SECONDS: how long an enduring consent's access token lasts before its
// refresh token must be used (unset: it never expires).

let config: ReturnType<typeof loadConfig>;
try {
  config = loadConfig({ ...process.env, PORT: process.env.PORT || '3001' });
} catch (error) {
  if (error instanceof ConfigError) {
    process.stderr.write(`sandbox-bank: ${error.message}\n`);
    process.exit(1);
  }
  throw error;
}
const redirectUri = process.env.SANDBOX_REDIRECT_URI || 'http://127.0.0.1:3000/pay/return';
try {
  new URL(redirectUri);
} catch {
  process.stderr.write(`sandbox-bank: SANDBOX_REDIRECT_URI must be a URL, got ${JSON.stringify(redirectUri)}\n`);
  process.exit(1);
}

function readSetting(name: string): string | undefined {
  const file = process.env[name];
  if (!file) return undefined;
  try {
    return fs.readFileSync(file, 'utf8');
  } catch (error) {
    process.stderr.write(
      `sandbox-bank: ${name} cannot be read (${file}): ${(error as NodeJS.ErrnoException).code ?? (error as Error).message}\n`,
    );
    process.exit(1);
  }
}
const tlsCert = readSetting('SANDBOX_TLS_CERT_FILE');
const tlsKey = readSetting('SANDBOX_TLS_KEY_FILE');
const clientCa = readSetting('SANDBOX_CLIENT_CA_FILE');
const clientPublicKeyPem = readSetting('SANDBOX_CLIENT_PUBLIC_KEY_FILE');
if (Boolean(tlsCert) !== Boolean(tlsKey) || (clientCa && !tlsCert)) {
  process.stderr.write(
    'sandbox-bank: HTTPS needs both SANDBOX_TLS_CERT_FILE and SANDBOX_TLS_KEY_FILE (and SANDBOX_CLIENT_CA_FILE needs HTTPS)\n',
  );
  process.exit(1);
}
let clientPublicKey: KeyObject | undefined;
try {
  clientPublicKey = clientPublicKeyPem ? createPublicKey(clientPublicKeyPem) : undefined;
} catch (error) {
  process.stderr.write(
    `sandbox-bank: SANDBOX_CLIENT_PUBLIC_KEY_FILE is not a public key: ${(error as Error).message}\n`,
  );
  process.exit(1);
}

const enduringTokenRaw = process.env.SANDBOX_ENDURING_TOKEN_SECONDS;
const enduringTokenSeconds = enduringTokenRaw ? Number(enduringTokenRaw) : null;
if (enduringTokenSeconds !== null && !(Number.isInteger(enduringTokenSeconds) && enduringTokenSeconds > 0)) {
  process.stderr.write(
    `sandbox-bank: SANDBOX_ENDURING_TOKEN_SECONDS must be a whole number of seconds, got ${JSON.stringify(enduringTokenRaw)}\n`,
  );
  process.exit(1);
}

const db = openDb({ engine: 'sqlite', file: path.join(config.dataDir, 'sandbox-bank.db') });
try {
  await migrateSandboxBank(db);
} catch (error) {
  process.stderr.write(`sandbox-bank: could not prepare the database: ${(error as Error).message}\n`);
  process.exit(1);
}

const app = await buildSandboxBankApp({
  db,
  zone: config.serviceTimeZone,
  enduringTokenSeconds,
  log: pino({ level: config.logLevel }),
  ...(tlsCert && tlsKey && { https: { cert: tlsCert, key: tlsKey, ...(clientCa && { clientCa }) } }),
  clients: () => [
    {
      clientId: process.env.SANDBOX_CLIENT_ID || SERVICE_CLIENT_ID,
      clientSecret: process.env.SANDBOX_CLIENT_SECRET || STANDALONE_CLIENT_SECRET,
      redirectUris: [redirectUri],
      ...(clientPublicKey && { publicKey: clientPublicKey }),
    },
  ],
});
try {
  await app.listen({ port: config.port, host: config.host });
} catch (error) {
  process.stderr.write(`sandbox-bank: cannot listen on ${config.host}:${config.port}: ${(error as Error).message}\n`);
  process.exit(1);
}
process.stdout.write(
  `Sandbox Bank is running at ${tlsCert ? 'https' : 'http'}://${config.host}:${config.port} (sign in as "sandbox", any password)\n`,
);

for (const signal of ['SIGTERM', 'SIGINT'] as const) {
  process.on(signal, () => {
    app
      .close()
      .then(() => db.destroy())
      .then(
        () => process.exit(0),
        () => process.exit(1),
      );
  });
}
