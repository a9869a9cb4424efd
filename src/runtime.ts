import path from 'node:path';
import pino, { type Logger } from 'pino';
import { buildApp, loggerRedactPaths, type App } from './app.ts';
import type { Config } from './config.ts';
import type { Deps } from './http/context.ts';
import { jobHandlers } from './jobs/registry.ts';
import { Worker } from './jobs/worker.ts';
import { systemClock, type Clock } from './shared/time.ts';
import { openDb, type Db, type StoreOptions } from './store/db.ts';
import { migrateToLatest } from './store/migrate.ts';
import { OpenBankingRegistry } from './modules/banks/registry.ts';

export type Runtime = { deps: Deps; app: App; close(): Promise<void> };

export function storeOptionsFor(config: Config): StoreOptions {
  return config.databaseUrl
    ? { engine: 'postgres', url: config.databaseUrl }
    : { engine: 'sqlite', file: path.join(config.dataDir, 'tono.db') };
}

export function makeLogger(config: Pick<Config, 'logLevel'>): Logger {
  return pino({ level: config.logLevel, redact: { paths: loggerRedactPaths, censor: '[redacted]' } });
}

/** Everything one process runs: store (migrated), deps, HTTP app and worker (started if WORKERS). */
export async function createRuntime(config: Config, options: { db?: Db; log?: Logger; clock?: Clock } = {}): Promise<Runtime> {
  const log = options.log ?? makeLogger(config);
  const db = options.db ?? openDb(storeOptionsFor(config));
  await migrateToLatest(db);
  const clock = options.clock ?? systemClock;
  const worker = new Worker({ db, log: log.child({ component: 'worker' }), handlers: jobHandlers(), realClock: clock });
  const banks = new OpenBankingRegistry({ config, now: () => clock.now() });
  const deps: Deps = { config, db, log, clock, worker, banks };
  const app = await buildApp(deps);
  if (config.workers) worker.start();
  return {
    deps,
    app,
    async close() {
      await worker.stop();
      await banks.close();
      await app.close();
      await db.destroy();
    },
  };
}
