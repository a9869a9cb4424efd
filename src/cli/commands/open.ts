import type { Config } from '../../config.ts';
import { openDb, type Db } from '../../store/db.ts';
import { migrateToLatest } from '../../store/migrate.ts';
import { storeOptionsFor } from '../../runtime.ts';

/** Opens (and migrates) the service's database for one command, closing it afterwards. */
export async function withDb<T>(config: Config, work: (db: Db) => Promise<T>): Promise<T> {
  const db = openDb(storeOptionsFor(config));
  try {
    await migrateToLatest(db);
    return await work(db);
  } finally {
    await db.destroy();
  }
}

export function print(value: unknown, json: boolean, text: string): void {
  process.stdout.write(json ? `${JSON.stringify(value)}\n` : `${text}\n`);
}
