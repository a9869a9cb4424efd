import net from 'node:net';
import { ConfigError, loadConfig, type Config } from './config.ts';
import { createRuntime } from './runtime.ts';
import { SecretKeyError } from './store/secret-key.ts';
import { ensureDemoMerchant, DEMO_EMAIL } from './modules/merchants/demo.ts';

let config: Config;
try {
  config = loadConfig();
} catch (error) {
  if (error instanceof ConfigError) {
    process.stderr.write(`tono: ${error.message}\n`);
    process.exit(1);
  }
  throw error;
}

/** Binds and releases the port, so a busy one fails the start before anything is created or printed. */
function portProblem(host: string, port: number): Promise<string | null> {
  return new Promise((resolve) => {
    const probe = net.createServer();
    probe.once('error', (error: NodeJS.ErrnoException) =>
      resolve(error.code === 'EADDRINUSE'
        ? `port ${port} on ${host} is already in use: stop what is using it, or start on another port with PORT (e.g. PORT=${port + 1} npm start)`
        : `cannot listen on ${host}:${port} (${error.code ?? error.message}): set PORT and HOST`));
    probe.listen({ port, host, exclusive: true }, () => probe.close(() => resolve(null)));
  });
}

if (config.port !== 0) {
  const problem = await portProblem(config.host, config.port);
  if (problem) {
    process.stderr.write(`tono: ${problem}\n`);
    process.exit(1);
  }
}

const runtime = await createRuntime(config).catch((error: Error) => {
  process.stderr.write(error instanceof SecretKeyError ? `tono: ${error.message}\n` : `tono: could not open the database: ${error.message}\n`);
  process.exit(1);
});
const { app, deps } = runtime;

if (config.demoMerchant) {
  const demo = await ensureDemoMerchant(deps);
  if (demo === 'exists') {
    process.stdout.write(
      `Demo merchant ${DEMO_EMAIL} (its keys were shown on the first start). New keys: npm run --silent cli -- keys create --merchant ${DEMO_EMAIL} --mode test\n`,
    );
  } else if (demo) {
    process.stdout.write(
      [
        '',
        'Demo merchant created (shown once; keep these):',
        `  login       email ${DEMO_EMAIL}  password ${demo.dashboard_password}  (for the merchant dashboard at /dashboard)`,
        `  live key    ${demo.live_key}`,
        `  test key    ${demo.test_key}`,
        `  bank account ${demo.bank_account_id}`,
        '',
        'Try it:',
        `  curl -s ${config.publicBaseUrl}/v1/requests -H "Authorization: Bearer ${demo.test_key}" \\`,
        `    -H 'Content-Type: application/json' \\`,
        `    -d '{"bank_account_id":"${demo.bank_account_id}","amount":"12.50 NZD","message":"Coffee beans"}'`,
        '',
        'then open the "url" it returns and pay at the Sandbox Bank (username sandbox, any password).',
        '',
      ].join('\n') + '\n',
    );
  }
}

// Installed before listening, so a stop signal at any point after start-up closes cleanly.
let stopping = false;
for (const signal of ['SIGTERM', 'SIGINT'] as const) {
  process.on(signal, () => {
    if (stopping) return;
    stopping = true;
    app.log.info({ signal }, 'stopping');
    runtime.close().then(() => process.exit(0), () => process.exit(1));
  });
}

try {
  await app.listen({ port: config.port, host: config.host });
} catch (error) {
  process.stderr.write(`tono: cannot listen on ${config.host}:${config.port}: ${(error as Error).message}\n`);
  await runtime.close().catch(() => {});
  process.exit(1);
}
process.stdout.write(`Tono is running at ${config.publicBaseUrl} (API reference ${config.publicBaseUrl}/docs)\n`);
