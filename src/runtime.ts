import type { Logger, LoggerOptions } from 'pino';
import { buildApp, loggerRedactPaths } from './app.ts';
import { createLogger, logFormatFor, secretFreeLog } from './logger.ts';
import { storeOptionsFor, type Config } from './config.ts';
import { Worker } from './jobs/worker.ts';
import { systemClock, type Clock } from './shared/time.ts';
import type { Db } from './store/db.ts';
import { openDb, storeOf } from './store/store.ts';
import { migrateToLatest } from './store/migrate.ts';
import { testClockOffsetsOf } from './modules/merchants/merchants.service.ts';
import { jobKindsOf, runnersOf, sealStoredSecrets, startModules } from './modules/index.ts';
import { OpenBankingRegistry } from './modules/banks/registry.ts';
import { sandboxClientCredentials } from './modules/banks/sandbox-client.ts';
import { createSecretBox, type SecretBox } from './shared/secret-box.ts';
import { loadOrCreateKeyFile } from './store/secret-key.ts';
import { checkSecretKey, secretBoxOf } from './store/key-check.ts';
import type { Deps } from './modules/context.ts';
import type { App } from './http/app-type.ts';

export type Runtime = { deps: Deps; app: App; close(): Promise<void> };

/** The service's log level and redaction, wherever its lines go. */
export function loggerOptionsFor(config: Pick<Config, 'logLevel'>): LoggerOptions {
  return { level: config.logLevel, redact: { paths: loggerRedactPaths, censor: '[redacted]' } };
}

export function makeLogger(config: Pick<Config, 'logLevel' | 'logFormat'>): Logger {
  return createLogger(loggerOptionsFor(config), logFormatFor(process.stdout.isTTY === true, config.logFormat));
}

export type RuntimeOptions = {
  db?: Db;
  log?: Logger;
  clock?: Clock;
  /**
   * False in the processes of a cluster: the primary migrated the store and sealed its secrets
   * before it started them, so they do not queue behind each other on the migration lock.
   */
  prepareStore?: boolean;
};

/**
 * Brings the store up to date: migrations, the check that `secrets` is the database's key (before
 * anything is opened or sealed), then secrets stored before sealing at rest. Once per start.
 */
export async function prepareStore(db: Db, secrets: SecretBox, now: number): Promise<void> {
  await migrateToLatest(db);
  await checkSecretKey(db, secrets, now);
  await sealStoredSecrets(db, secrets, now);
}

/** The key of SECRET_KEY or the key file, with no database at hand: where SECRET_KEY is required (PostgreSQL). */
export function secretBoxFor(config: Config): SecretBox {
  return createSecretBox(config.secretKey ?? loadOrCreateKeyFile(config.dataDir));
}

/** Everything one process runs: store (migrated), deps, HTTP app and worker (started if WORKERS). */
export async function createRuntime(config: Config, options: RuntimeOptions = {}): Promise<Runtime> {
  const log = options.log ?? makeLogger(config);
  const db = options.db ?? openDb(storeOptionsFor(config));
  const clock = options.clock ?? systemClock;
  let secrets: SecretBox;
  try {
    secrets = await secretBoxOf(config, db);
    if (options.prepareStore !== false) await prepareStore(db, secrets, clock.now());
    else await checkSecretKey(db, secrets, clock.now());
  } catch (error) {
    if (!options.db) await db.destroy().catch(() => {});
    throw error;
  }
  const worker = new Worker({
    db,
    log: log.child({ component: 'worker' }),
    kinds: new Map(),
    realClock: clock,
    clockOffsets: testClockOffsetsOf,
  });
  const sandboxCredentials = await sandboxClientCredentials(db, secrets, config, clock.now());
  const banks = new OpenBankingRegistry({
    config,
    now: () => clock.now(),
    log: secretFreeLog(log.child({ component: 'banks' })),
    sandboxCredentials,
  });
  const deps: Deps = { config, store: storeOf(db), db, log, clock, worker, banks, secrets };
  worker.setKinds(jobKindsOf(deps));
  const runners = runnersOf(deps);
  let stopping = false;
  const app = await buildApp(deps, { stopping: () => stopping });
  if (config.workers) {
    await startModules(deps);
    worker.start();
    for (const runner of runners) runner.start();
  }
  return {
    deps,
    app,
    // Stopping (SIGTERM): /readyz answers 503 at once; the server takes no new connection and
    // finishes the calls in flight while the workers finish the jobs they run, side by side. The
    // banks and the database close once neither can use them any more.
    async close() {
      stopping = true;
      const stopWorkers = async () => {
        await worker.stop();
        for (const runner of runners) await runner.stop();
      };
      const stopped = await Promise.allSettled([app.close(), stopWorkers()]);
      await banks.close();
      await db.destroy();
      for (const result of stopped) if (result.status === 'rejected') throw result.reason;
    },
  };
}
