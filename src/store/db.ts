import fs from 'node:fs';
import path from 'node:path';
import {
  Kysely,
  PostgresAdapter,
  PostgresDialect,
  PostgresIntrospector,
  sql,
  type DatabaseIntrospector,
  type RawBuilder,
  type SelectQueryBuilder,
  type TableMetadata,
  type Transaction,
} from 'kysely';
import pg from 'pg';
import type { Database } from './tables.ts';
import {
  nodeSqliteDialect,
  openSqlite,
  RELAXED_DURABILITY_MARKER,
  type CommitsElsewhere,
  type DirectReader,
  type UnitRunner,
} from './sqlite-dialect.ts';

// Dialect differences live in this file and nowhere else.

export type Db = Kysely<Database>;
export type Engine = 'sqlite' | 'postgres';

// int8 (counts, sums, epoch milliseconds) as numbers: every value we store fits in 2^53.
pg.types.setTypeParser(20, (value) => Number(value));
pg.types.setTypeParser(1700, (value) => Number(value));

export type StoreOptions =
  | { engine: 'sqlite'; file: string }
  | { engine: 'postgres'; url: string; schema?: string; poolSize?: number; preparedStatements?: boolean };

const directReaders = new WeakMap<object, DirectReader>();

/**
 * The direct read of a SQLite database opened by openDb, or undefined (PostgreSQL, a transaction,
 * another Kysely instance): prepared reads use it when it answers.
 */
export function directReaderOf(db: object): DirectReader | undefined {
  return directReaders.get(db);
}

export type { CommitsElsewhere };

const commitCounters = new WeakMap<object, CommitsElsewhere>();

/**
 * For a SQLite database opened by openDb, a number that changes when another process commits to
 * it (see CommitsElsewhere); undefined otherwise (PostgreSQL, a transaction), where nothing in
 * this process can tell what other processes changed, so nothing may be cached across calls.
 */
export function commitsElsewhereOf(db: object): CommitsElsewhere | undefined {
  return commitCounters.get(db);
}

const unitRunnerSources = new WeakMap<object, () => UnitRunner | null>();
const unitRunners = new WeakMap<object, UnitRunner>();

/**
 * The way to run a statement straight inside this transaction (SQLite, a transaction begun by
 * `transaction` below), or undefined: prepared queries use it, anything else goes through Kysely.
 */
export function unitRunnerOf(db: object): UnitRunner | undefined {
  return unitRunners.get(db);
}

/**
 * `work` in a transaction of `db`, as `db.transaction().execute(work)`; on SQLite its prepared
 * queries then run without Kysely's executor around each statement (unitRunnerOf).
 */
export function transaction<DB, T>(db: Kysely<DB>, work: (trx: Transaction<DB>) => Promise<T>): Promise<T> {
  const source = unitRunnerSources.get(db);
  if (!source) return db.transaction().execute(work);
  return db.transaction().execute((trx) => {
    // The work starts as soon as the transaction holds the connection, so the unit holding it is this one.
    const runner = source();
    if (runner) unitRunners.set(trx, runner);
    return work(trx);
  });
}

export function openDb(options: StoreOptions): Db {
  if (options.engine === 'sqlite') {
    fs.mkdirSync(path.dirname(options.file), { recursive: true });
    let reader: DirectReader | undefined;
    let runnerSource: (() => UnitRunner | null) | undefined;
    let commitsElsewhere: CommitsElsewhere | undefined;
    const db = new Kysely<Database>({
      dialect: nodeSqliteDialect(openSqlite(options.file), options.file, undefined, (access) => {
        reader = access.readNow;
        runnerSource = access.unitRunner;
        commitsElsewhere = access.commitsElsewhere;
      }),
    });
    directReaders.set(db, (sql, parameters) => reader?.(sql, parameters) ?? null);
    unitRunnerSources.set(db, () => runnerSource?.() ?? null);
    // Kysely makes its driver in its constructor, so the driver's access is here by now.
    if (commitsElsewhere) commitCounters.set(db, commitsElsewhere);
    return db;
  }
  const pool = new pg.Pool({
    connectionString: options.url,
    max: options.poolSize ?? 10,
    options: options.schema ? `-c search_path=${options.schema}` : undefined,
  });
  if (options.preparedStatements !== false) pool.on('connect', useServerPrepared);
  return new Kysely<Database>({ dialect: new CurrentSchemaPostgresDialect({ pool }) });
}

/** SQL text of the statements PostgreSQL should keep parsed and planned, by the name they run under. */
const serverPrepared = new Map<string, string>();
let statementNames = 0;
const nextStatementName = () => `tono_${statementNames++}`;

/**
 * Marks a statement's SQL, built once and run many times (src/store/prepared.ts), to be prepared
 * on each PostgreSQL connection the first time it runs there and only bound and executed after:
 * PostgreSQL then skips parsing and planning it on every call. Text of other dialects is never
 * sent to PostgreSQL, so marking it is harmless.
 */
export function prepareOnServer(text: string): void {
  if (!serverPrepared.has(text)) serverPrepared.set(text, nextStatementName());
}

/** PostgreSQL refuses a prepared statement whose result columns a migration changed (`select *` after ADD COLUMN). */
function isStalePlan(error: unknown): boolean {
  const e = error as { code?: string; message?: string } | null;
  return e?.code === '0A000' && /cached plan must not change result type/.test(e.message ?? '');
}

/**
 * Sends marked statements as named ones on this connection; everything else as given. A statement
 * whose prepared form a migration made stale (one run while an older version of the service still
 * runs: `npm run cli -- migrate`, another machine) gets a new name, so every connection prepares
 * it again; the call that found it is run again at once when it was on its own, and fails (its
 * transaction rolled back) when it was inside a transaction, which PostgreSQL has aborted.
 */
function useServerPrepared(client: pg.PoolClient): void {
  const query = client.query.bind(client) as (...args: unknown[]) => Promise<unknown>;
  const transactionStatus = () =>
    (client as pg.PoolClient & { getTransactionStatus(): string | null }).getTransactionStatus();
  client.query = ((...args: unknown[]) => {
    const [text, values] = args;
    const name = typeof text === 'string' && args.length === 2 ? serverPrepared.get(text) : undefined;
    if (name === undefined) return query(...args);
    return query({ name, text, values }).catch((error: unknown) => {
      if (!isStalePlan(error)) throw error;
      if (serverPrepared.get(text as string) === name) serverPrepared.set(text as string, nextStatementName());
      if (transactionStatus() !== 'I') throw error;
      return query({ name: serverPrepared.get(text as string), text, values });
    });
  }) as typeof client.query;
}

/**
 * Kysely's own PostgreSQL introspector reads every column of every schema in the database and
 * resolves each by name, so any DROP COLUMN or DROP SCHEMA committed meanwhile elsewhere in the
 * database (another application, another test's schema) fails our migrator's "does the migration
 * table exist" check. The migrator only needs our schema's table names, so that is all this lists.
 */
class CurrentSchemaPostgresDialect extends PostgresDialect {
  override createIntrospector(db: Kysely<any>): DatabaseIntrospector {
    const schemas = new PostgresIntrospector(db);
    return {
      getSchemas: () => schemas.getSchemas(),
      async getTables(): Promise<TableMetadata[]> {
        const { rows } = await sql<{ schema: string; name: string; kind: string }>`
          select n.nspname as schema, c.relname as name, c.relkind as kind
          from pg_catalog.pg_class c join pg_catalog.pg_namespace n on n.oid = c.relnamespace
          where n.nspname = current_schema() and c.relkind in ('r', 'v', 'p')
          order by c.relname`.execute(db);
        // Columns are not described: nothing of ours reads them.
        return rows.map((row) => ({ schema: row.schema, name: row.name, isView: row.kind === 'v', columns: [] }));
      },
      async getMetadata(options) {
        return { tables: await this.getTables(options) };
      },
    };
  }
}

export function engineOf(db: Kysely<any>): Engine {
  return db.getExecutor().adapter instanceof PostgresAdapter ? 'postgres' : 'sqlite';
}

/**
 * Row lock for read-modify-write inside a transaction. PostgreSQL needs FOR UPDATE; SQLite
 * serialises writers already (one connection in this process, busy_timeout across processes).
 */
export function lockForUpdate<QB extends SelectQueryBuilder<any, any, any>>(db: Kysely<any>, query: QB): QB {
  return engineOf(db) === 'postgres' ? (query.forUpdate() as QB) : query;
}

/** FOR UPDATE SKIP LOCKED where several processes may claim the same rows (PostgreSQL). */
export function lockSkipLocked<QB extends SelectQueryBuilder<any, any, any>>(db: Kysely<any>, query: QB): QB {
  return engineOf(db) === 'postgres' ? (query.forUpdate().skipLocked() as QB) : query;
}

/**
 * `column in (…)` with the values as one JSON array (`JSON.stringify(ids)`): the statement's text is
 * the same for any number of values, so it can be a prepared query (store/prepared.ts), where an
 * `in (?, ?, …)` list is compiled, and on SQLite prepared, again for every length it comes in.
 */
export function inJsonArray(db: Kysely<any>, column: string, valuesJson: string): RawBuilder<boolean> {
  return engineOf(db) === 'postgres'
    ? sql<boolean>`${sql.ref(column)} in (select jsonb_array_elements_text(cast(${valuesJson} as jsonb)))`
    : sql<boolean>`${sql.ref(column)} in (select value from json_each(${valuesJson}))`;
}

/**
 * Inside a transaction whose own writes may be lost in a crash without harm (claiming a job's
 * lease), lets the transaction's caller go on before those writes reach the disk. What the
 * transaction read before this call (the jobs it claims, which other transactions may have queued
 * a moment ago) may not be on disk yet: `ready` settles once it is, and the caller must wait for it
 * before acting on what it read (running a job, sending its webhook or email). It rejects if that
 * commit failed. Null when nothing needs waiting for, and always on PostgreSQL, where a commit is a
 * round trip with its own fsync.
 */
export async function relaxDurability(trx: Kysely<any>): Promise<{ ready: Promise<void> | null }> {
  if (engineOf(trx) !== 'sqlite') return { ready: null };
  const runner = unitRunnerOf(trx);
  const result = runner ? runner(RELAXED_DURABILITY_MARKER, []) : await sql.raw(RELAXED_DURABILITY_MARKER).execute(trx);
  return { ready: (result.rows[0] as { ready?: Promise<void> | null } | undefined)?.ready ?? null };
}

export async function checkDb(db: Db): Promise<void> {
  await sql`select 1`.execute(db);
}

/** A consistent copy of the database. SQLite: VACUUM INTO; PostgreSQL: use pg_dump. */
export async function backupSqlite(db: Db, target: string): Promise<void> {
  if (engineOf(db) !== 'sqlite')
    throw new Error('backup --to works on the embedded SQLite database; for PostgreSQL use pg_dump');
  if (fs.existsSync(target)) throw new Error(`${target} already exists`);
  await sql`VACUUM INTO ${sql.lit(target)}`.execute(db);
}
