import path from 'node:path';
import type { Logger } from 'pino';
import { buildApp, loggerRedactPaths, type App } from './app.ts';
import { createLogger } from './logger.ts';
import type { Config } from './config.ts';
import type { Deps } from './http/context.ts';
import { DISPATCHED_JOB_KINDS, jobHandlers } from './jobs/registry.ts';
import { Worker } from './jobs/worker.ts';
import { systemClock, type Clock } from './shared/time.ts';
import { openDb, type Db, type StoreOptions } from './store/db.ts';
import { migrateToLatest } from './store/migrate.ts';
import { WebhookDispatcher } from './modules/webhooks/webhooks.dispatcher.ts';
import { installWebhookFanOut } from './modules/webhooks/webhooks.fanout.ts';
import { OpenBankingRegistry } from './modules/banks/registry.ts';
import { createSecretBox } from './shared/secret-box.ts';
import { loadOrCreateKeyFile } from './store/secret-key.ts';
import { sealStoredSecrets } from './store/seal-at-rest.ts';
import { scheduleWebhookHealth } from './modules/webhooks/webhooks.health.ts';

export type Runtime = { deps: Deps; app: App; close(): Promise<void> };

export function storeOptionsFor(config: Config): StoreOptions {
  return config.databaseUrl
    ? { engine: 'postgres', url: config.databaseUrl }
    : { engine: 'sqlite', file: path.join(config.dataDir, 'tono.db') };
}

export function makeLogger(config: Pick<Config, 'logLevel'>): Logger {
  return createLogger({ level: config.logLevel, redact: { paths: loggerRedactPaths, censor: '[redacted]' } });
}

/** Everything one process runs: store (migrated), deps, HTTP app and worker (started if WORKERS). */
export async function createRuntime(config: Config, options: { db?: Db; log?: Logger; clock?: Clock } = {}): Promise<Runtime> {
  const log = options.log ?? makeLogger(config);
  const secrets = createSecretBox(config.secretKey ?? loadOrCreateKeyFile(config.dataDir));
  const db = options.db ?? openDb(storeOptionsFor(config));
  await migrateToLatest(db);
  const clock = options.clock ?? systemClock;
  await sealStoredSecrets(db, secrets, clock.now());
  installWebhookFanOut();
  const worker = new Worker({ db, log: log.child({ component: 'worker' }), handlers: {}, realClock: clock, excludeKinds: DISPATCHED_JOB_KINDS });
  const webhooks = new WebhookDispatcher({ db, log: log.child({ component: 'webhooks' }), allowPrivate: config.allowPrivateTargets, secrets });
  const banks = new OpenBankingRegistry({ config, now: () => clock.now(), log: log.child({ component: 'banks' }) });
  const deps: Deps = { config, db, log, clock, worker, banks, secrets };
  worker.setHandlers(jobHandlers(deps));
  const app = await buildApp(deps);
  if (config.workers) {
    await scheduleWebhookHealth(deps);
    worker.start();
    webhooks.start();
  }
  return {
    deps,
    app,
    async close() {
      await worker.stop();
      await webhooks.stop();
      await banks.close();
      await app.close();
      await db.destroy();
    },
  };
}
