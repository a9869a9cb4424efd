import { DatabaseSync, type StatementSync, type SQLInputValue } from 'node:sqlite';
import { SqliteDialect } from 'kysely';

// Kysely's SqliteDialect expects a better-sqlite3-shaped database. node:sqlite is close: this
// adapter supplies the missing `reader` flag and array-style parameters, and caches statements.

type Params = ReadonlyArray<unknown>;

function bindable(params: Params): SQLInputValue[] {
  return params.map((value) => (typeof value === 'boolean' ? (value ? 1 : 0) : value)) as SQLInputValue[];
}

class CachedStatement {
  readonly reader: boolean;
  private readonly statement: StatementSync;
  constructor(statement: StatementSync) {
    this.statement = statement;
    this.reader = statement.columns().length > 0;
  }
  all(params: Params) {
    return this.statement.all(...bindable(params));
  }
  run(params: Params) {
    const result = this.statement.run(...bindable(params));
    return { changes: result.changes, lastInsertRowid: result.lastInsertRowid };
  }
  iterate(params: Params) {
    return this.statement.iterate(...bindable(params));
  }
}

export function openSqlite(file: string): DatabaseSync {
  const database = new DatabaseSync(file, { timeout: 5000 });
  database.exec('PRAGMA journal_mode = WAL');
  database.exec('PRAGMA synchronous = FULL');
  database.exec('PRAGMA foreign_keys = ON');
  database.exec('PRAGMA busy_timeout = 5000');
  return database;
}

export function nodeSqliteDialect(database: DatabaseSync): SqliteDialect {
  const cache = new Map<string, CachedStatement>();
  return new SqliteDialect({
    database: {
      close: () => database.close(),
      prepare: (sql: string) => {
        let statement = cache.get(sql);
        if (!statement) {
          statement = new CachedStatement(database.prepare(sql));
          if (cache.size > 500) cache.clear();
          cache.set(sql, statement);
        }
        return statement;
      },
    },
  });
}
