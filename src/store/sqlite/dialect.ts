import fs from 'node:fs';
import path from 'node:path';
import { DatabaseSync } from 'node:sqlite';
import {
  SqliteIntrospector,
  SqliteQueryCompiler,
  type DatabaseIntrospector,
  type Dialect,
  type DialectAdapter,
  type Kysely,
} from 'kysely';
import type { GroupCommitDriver } from './group-commit.ts';

/** Makes a file its owner's only (0600), when it exists and this process owns it. */
export function ownerOnly(file: string): void {
  try {
    fs.chmodSync(file, 0o600);
  } catch (error) {
    const code = (error as NodeJS.ErrnoException).code;
    if (code !== 'ENOENT' && code !== 'EPERM') throw error;
  }
}

/**
 * Opens the database, its folder (DATA_DIR) made 0700 when it does not exist yet, and the database
 * with its -wal and -shm made 0600: they hold everything the service stores, which the process
 * umask (often 022) would leave readable by every account on the machine. SQLite creates the
 * database with 0644 less the umask, and its -wal and -shm with the mode the database has when it
 * creates them: so the database is made 0600 right after the open, before WAL mode makes them, and
 * the -wal and -shm a database opened before had are made 0600 after.
 */
export function openSqlite(file: string): DatabaseSync {
  fs.mkdirSync(path.dirname(file), { recursive: true, mode: 0o700 });
  const database = new DatabaseSync(file, { timeout: 5000 });
  ownerOnly(file);
  database.exec('PRAGMA journal_mode = WAL');
  ownerOnly(`${file}-wal`);
  ownerOnly(`${file}-shm`);
  // The driver fsyncs the WAL after each commit itself (group-commit.ts); checkpoints still sync.
  database.exec('PRAGMA synchronous = NORMAL');
  database.exec('PRAGMA foreign_keys = ON');
  database.exec('PRAGMA busy_timeout = 5000');
  // Each unit of work is a SAVEPOINT, and SQLite keeps the pages a savepoint changed in a
  // statement journal so it can roll back to it. By default that journal moves to a temporary
  // file once it passes 64 KiB, which an execution's dozen statements do, and every statement then
  // pays write and read system calls. In memory, the journal is emptied when each unit's savepoint
  // is released, so it holds one unit's pages. This also keeps the temporary b-trees of sorts and
  // DISTINCT in memory (docs/performance.md).
  database.exec('PRAGMA temp_store = MEMORY');
  return database;
}

/** Kysely over the group-commit driver; the adapter is the store's, so every query can find it. */
export function groupCommitDialect(driver: GroupCommitDriver, adapter: DialectAdapter): Dialect {
  return {
    createAdapter: () => adapter,
    createDriver: () => driver,
    createIntrospector: (db: Kysely<any>): DatabaseIntrospector => new SqliteIntrospector(db),
    createQueryCompiler: () => new SqliteQueryCompiler(),
  };
}
