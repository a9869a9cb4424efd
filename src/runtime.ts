import type { Logger, LoggerOptions } from 'pino';
import { buildApp, loggerRedactPaths } from './app.ts';
import { createLogger, secretFreeLog } from './logger.ts';
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
import type { Deps } from './modules/context.ts';
import type { App } from './http/app-type.ts';

export type Runtime = { deps: Deps; app: App; close(): Promise<void> };

/** The service's log level and redaction, wherever its lines go. */
export function loggerOptionsFor(config: Pick<Config, 'logLevel'>): LoggerOptions {
  return { level: config.logLevel, redact: { paths: loggerRedactPaths, censor: '[redacted]' } };
}

export function makeLogger(config: Pick<Config, 'logLevel'>): Logger {
  return createLogger(loggerOptionsFor(config));
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

/** Brings the store up to date: migrations, then secrets stored before sealing at rest. Once per start. */
export async function prepareStore(db: Db, secrets: SecretBox, now: number): Promise<void> {
  await migrateToLatest(db);
  await sealStoredSecrets(db, secrets, now);
}

export function secretBoxFor(config: Config): SecretBox {
  return createSecretBox(config.secretKey ?? loadOrCreateKeyFile(config.dataDir));
}

/** Everything one process runs: store (migrated), deps, HTTP app and worker (started if WORKERS). */
export async function createRuntime(config: Config, options: RuntimeOptions = {}): Promise<Runtime> {
  const log = options.log ?? makeLogger(config);
  const secrets = secretBoxFor(config);
  const db = options.db ?? openDb(storeOptionsFor(config));
  const clock = options.clock ?? systemClock;
  if (options.prepareStore !== false) await prepareStore(db, secrets, clock.now());
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
  const app = await buildApp(deps);
  if (config.workers) {
    await startModules(deps);
    worker.start();
    for (const runner of runners) runner.start();
  }
  return {
    deps,
    app,
    async close() {
      await worker.stop();
      for (const runner of runners) await runner.stop();
      await banks.close();
      await app.close();
      await db.destroy();
    },
  };
}
