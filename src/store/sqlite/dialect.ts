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

export function openSqlite(file: string): DatabaseSync {
  fs.mkdirSync(path.dirname(file), { recursive: true });
  const database = new DatabaseSync(file, { timeout: 5000 });
  database.exec('PRAGMA journal_mode = WAL');
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
