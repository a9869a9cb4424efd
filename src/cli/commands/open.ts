import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { storeOptionsFor, type Config } from '../../config.ts';
import type { Db } from '../../store/db.ts';
import { openDb, type StoreOptions } from '../../store/store.ts';
import { migrateToLatest, pendingMigrations } from '../../store/migrate.ts';
import { checkSecretKey, secretBoxOf } from '../../store/key-check.ts';
import { systemClock } from '../../shared/time.ts';
import type { AuditBy } from '../../modules/audit/audit.service.ts';

function describe(store: StoreOptions): string {
  return store.engine === 'sqlite'
    ? `the SQLite database ${store.file} (DATA_DIR=${path.dirname(store.file)})`
    : 'the PostgreSQL database of DATABASE_URL';
}

/**
 * Opens the service's database for one command, closing it afterwards. Only `migrate` creates or
 * migrates it: any other command against a database the service never ran on (a wrong DATA_DIR or
 * DATABASE_URL) would write keys and merchants that the running service never sees.
 */
export async function withDb<T>(
  config: Config,
  work: (db: Db) => Promise<T>,
  options: { migrate?: boolean } = {},
): Promise<T> {
  const store = storeOptionsFor(config);
  if (!options.migrate && store.engine === 'sqlite' && !fs.existsSync(store.file)) {
    throw new Error(
      `${describe(store)} does not exist: set DATA_DIR (or DATABASE_URL) to the service's, or create it with \`npm run --silent cli -- migrate\``,
    );
  }
  const db = openDb(store);
  try {
    // The key before the migrations: a database that holds data must not get a new key file.
    const secrets = await secretBoxOf(config, db);
    if (options.migrate) {
      await migrateToLatest(db);
    } else {
      const pending = await pendingMigrations(db);
      if (pending.length > 0) {
        throw new Error(
          `${describe(store)} is not migrated (${pending.length} pending, from ${pending[0]}): start the service once, or run \`npm run --silent cli -- migrate\``,
        );
      }
    }
    // Like the service, refuses another key than the database's before anything is written.
    await checkSecretKey(db, secrets, systemClock.now());
    return await work(db);
  } finally {
    await db.destroy();
  }
}

/**
 * Who runs a command, as the audit trail records it: TONO_OPERATOR, or the login name of the
 * account running the CLI.
 */
export function operator(): AuditBy {
  const name = process.env.TONO_OPERATOR?.trim() || os.userInfo().username || 'operator';
  return { actor: { kind: 'operator', name: name.slice(0, 100) } };
}

export function print(value: unknown, json: boolean, text: string): void {
  process.stdout.write(json ? `${JSON.stringify(value)}\n` : `${text}\n`);
}
