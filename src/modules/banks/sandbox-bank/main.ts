import path from 'node:path';
import pino from 'pino';
import { ConfigError, loadConfig } from '../../../config.ts';
import { openDb } from '../../../store/db.ts';
import { buildSandboxBankApp, migrateSandboxBank, SERVICE_CLIENT_ID, SERVICE_CLIENT_SECRET } from './sandbox-bank.app.ts';

// npm run sandbox-bank: the sandbox bank alone, on its own SQLite file under DATA_DIR.
// PORT (default 3001), HOST, DATA_DIR, SERVICE_TIME_ZONE as for the service; the client it
// accepts is SANDBOX_CLIENT_ID / SANDBOX_CLIENT_SECRET with redirect SANDBOX_REDIRECT_URI
// (default: the service on http://127.0.0.1:3000, i.e. http://127.0.0.1:3000/pay/return).

let config;
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
  log: pino({ level: config.logLevel }),
  clients: () => [
    {
      clientId: process.env.SANDBOX_CLIENT_ID || SERVICE_CLIENT_ID,
      clientSecret: process.env.SANDBOX_CLIENT_SECRET || SERVICE_CLIENT_SECRET,
      redirectUris: [redirectUri],
    },
  ],
});
try {
  await app.listen({ port: config.port, host: config.host });
} catch (error) {
  process.stderr.write(`sandbox-bank: cannot listen on ${config.host}:${config.port}: ${(error as Error).message}\n`);
  process.exit(1);
}
process.stdout.write(`Sandbox Bank is running at http://${config.host}:${config.port} (sign in as "sandbox", any password)\n`);

for (const signal of ['SIGTERM', 'SIGINT'] as const) {
  process.on(signal, () => {
    app.close().then(() => db.destroy()).then(() => process.exit(0), () => process.exit(1));
  });
}
