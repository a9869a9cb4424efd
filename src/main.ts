import cluster from 'node:cluster';
import net from 'node:net';
import { ConfigError, loadConfig, type Config } from './config.ts';
import { LISTENING_MESSAGE, runCluster } from './cluster.ts';
import { makeLogger, prepareStore, secretBoxFor } from './runtime.ts';
import { closeOnStop, exitOnStartFailure, listenOrExit, openRuntime } from './serve.ts';
import { systemClock } from './shared/time.ts';
import { isLoopbackHost } from './shared/network.ts';
import { openDb } from './store/store.ts';
import { ensureDemoMerchant, DEMO_EMAIL } from './modules/merchants/demo.ts';
import type { CreatedMerchant } from './modules/merchants/merchants.service.ts';
import type { Logger } from 'pino';

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
      resolve(
        error.code === 'EADDRINUSE'
          ? `port ${port} on ${host} is already in use: stop what is using it, or start on another port with PORT (e.g. PORT=${port + 1} npm start)`
          : `cannot listen on ${host}:${port} (${error.code ?? error.message}): set PORT and HOST`,
      ),
    );
    probe.listen({ port, host, exclusive: true }, () => probe.close(() => resolve(null)));
  });
}

function printDemo(demo: CreatedMerchant | 'exists' | null): void {
  if (demo === 'exists') {
    process.stdout.write(
      `Demo merchant ${DEMO_EMAIL} (its keys were shown on the first start). New keys: npm run --silent cli -- keys create --merchant ${DEMO_EMAIL} --mode test --name "Shop server"\n`,
    );
  } else if (demo) {
    process.stdout.write(
      `${[
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
      ].join('\n')}\n`,
    );
  }
}

/**
 * A service on loopback whose public address is elsewhere is behind a reverse proxy on this
 * machine; without TRUST_PROXY every client would have the proxy's address, and each per-address
 * limit would hold them all. (One whose public address is loopback too is a laptop: no warning.)
 */
function warnOfProxy(log: Logger): void {
  const publicHost = new URL(config.publicBaseUrl).hostname;
  if (isLoopbackHost(config.host) && !isLoopbackHost(publicHost) && !process.env.TRUST_PROXY)
    log.warn(
      `listening on loopback (${config.host}) without TRUST_PROXY: behind a reverse proxy, per-address limits and audit records see the proxy's address; set TRUST_PROXY to the number of proxies or their addresses`,
    );
}

const running = (processes: number) =>
  `Tono is running at ${config.publicBaseUrl} (API reference ${config.publicBaseUrl}/docs)${processes > 1 ? ` (${processes} processes)` : ''}\n` +
  `Webhooks and merchant images reach: ${describeReach(config)}\n`;

/** The outbound policy in force, in words (docs/security.md, "Outbound connections"). */
function describeReach({ targetReach }: Config): string {
  const words = {
    global: 'public addresses only',
    loopback: 'public addresses and this machine',
    any: 'any address (ALLOW_PRIVATE_TARGETS=true)',
  } as const;
  return targetReach.live === targetReach.test
    ? `${words[targetReach.live]}, in both modes`
    : `live ${words[targetReach.live]}; test ${words[targetReach.test]}`;
}

if (cluster.isWorker) {
  // One process of a cluster: the primary checked the port, migrated, made the demo merchant and
  // prints the banner once every process listens.
  const stopper = closeOnStop({ inCluster: true });
  const runtime = await openRuntime(config, { prepareStore: false });
  stopper.attach(runtime);
  await listenOrExit(runtime, config);
  process.send!(LISTENING_MESSAGE);
} else {
  // SQLite allows one writing process; PostgreSQL is what several processes share.
  const processes = config.databaseUrl ? config.webConcurrency : 1;
  if (config.webConcurrency > 1 && !config.databaseUrl) {
    process.stderr.write(
      `tono: WEB_CONCURRENCY=${config.webConcurrency} is ignored: SQLite runs in a single process; set DATABASE_URL (PostgreSQL) to run several\n`,
    );
  }

  if (config.port !== 0) {
    const problem = await portProblem(config.host, config.port);
    if (problem) {
      process.stderr.write(`tono: ${problem}\n`);
      process.exit(1);
    }
  }

  if (processes === 1) {
    const stopper = closeOnStop({ inCluster: false });
    const runtime = await openRuntime(config, { prepareStore: true });
    stopper.attach(runtime);
    warnOfProxy(runtime.deps.log);
    if (config.demoMerchant) printDemo(await ensureDemoMerchant(runtime.deps));
    await listenOrExit(runtime, config);
    process.stdout.write(running(1));
  } else {
    // Migrations and the demo merchant happen here, once, before any process that could race them exists.
    const db = openDb({ engine: 'postgres', url: config.databaseUrl!, poolSize: 1 });
    try {
      await prepareStore(db, secretBoxFor(config), systemClock.now());
      if (config.demoMerchant) printDemo(await ensureDemoMerchant({ db, clock: systemClock }));
    } catch (error) {
      exitOnStartFailure(error as Error);
    } finally {
      await db.destroy();
    }
    const log = makeLogger(config);
    warnOfProxy(log);
    runCluster({ processes, log, onListening: () => process.stdout.write(running(processes)) });
  }
}
