import fs from 'node:fs';
import { Kysely, PostgresAdapter, SqliteAdapter, sql, type QueryResult, type Transaction } from 'kysely';
import type { Database } from './tables.ts';
import type { Db, Engine } from './db.ts';
import { openSqlite, groupCommitDialect } from './sqlite/dialect.ts';
import { GroupCommitDriver, type BatchAppender, type UnitConnection } from './sqlite/group-commit.ts';

export type { BatchAppender, BatchStatements } from './sqlite/group-commit.ts';
import type { Params } from './sqlite/rows.ts';
import type { FileSync } from './sqlite/wal-syncer.ts';
import pg from 'pg';
import {
  clientConfig,
  pipeliningClient,
  postgresPool,
  ServerPreparedStatements,
  StorePostgresDialect,
  UNAWAITED,
  type PostgresOptions,
} from './postgres/dialect.ts';
import { Listener, type ListenHandlers } from './postgres/listener.ts';
import { SharedReads } from './postgres/shared-reads.ts';

// The store: the one object through which the service reaches its database. docs/store.md says
// what a commit promises on each engine and how a repo uses it.

export type Tx = Transaction<Database>;

const ASYNC_COMMIT = `${UNAWAITED}set local synchronous_commit to off`;

/** PostgreSQL: connections, besides the pool's, that carry reads made outside a transaction (readNow). */
const SHARED_READ_CONNECTIONS = 2;

/**
 * `full`: the caller is answered once the transaction's writes, and everything it read, are on
 * disk. `relaxed`: answered at once, with `durable` to wait for before acting on what it read; for
 * writes whose loss in a crash does no harm (a job's lease).
 */
export type Durability = 'full' | 'relaxed';

export type StoreOptions =
  | { engine: 'sqlite'; file: string /** Makes the WAL durable; a test may watch or delay it. */; fsync?: FileSync }
  | ({ engine: 'postgres' } & PostgresOptions);

/** A transaction this store has begun and not yet ended. */
type OpenTransaction = {
  /** SQLite: the unit of work that holds the connection for it. */
  unit: UnitConnection | null;
  /** Work to run once it has committed (afterCommit). */
  hooks: Set<() => void> | null;
};

/**
 * Every query the store's `db` runs, in or out of a transaction, reaches its adapter through
 * Kysely's own interface (`db.getExecutor().adapter`): ours carry the store, so a query can find
 * the transaction it belongs to (storeOf).
 */
class SqliteStoreAdapter extends SqliteAdapter {
  readonly store: Store;
  constructor(store: Store) {
    super();
    this.store = store;
  }
}
class PostgresStoreAdapter extends PostgresAdapter {
  readonly store: Store;
  constructor(store: Store) {
    super();
    this.store = store;
  }
}

export class Store {
  readonly engine: Engine;
  /** Builds and runs queries (Kysely); begin transactions with `transaction`. */
  readonly db: Db;
  private readonly groupCommit: GroupCommitDriver | null = null;
  private readonly serverPrepared: ServerPreparedStatements | null = null;
  private readonly listener: Listener | null = null;
  private readonly sharedReads: SharedReads | null = null;
  private readonly open = new Map<Tx, OpenTransaction>();

  constructor(options: StoreOptions) {
    this.engine = options.engine;
    if (options.engine === 'sqlite') {
      this.groupCommit = new GroupCommitDriver(openSqlite(options.file), options.file, options.fsync ?? fs.fsync);
      this.db = new Kysely<Database>({
        dialect: groupCommitDialect(this.groupCommit, new SqliteStoreAdapter(this)),
      });
    } else {
      if (options.preparedStatements !== false) this.serverPrepared = new ServerPreparedStatements();
      const Client = pipeliningClient(this.serverPrepared);
      const pool = postgresPool(options, Client);
      // A half-open connection would otherwise go unnoticed for hours while nothing is sent on it.
      const ownConnection = {
        ...clientConfig(options),
        keepAlive: true,
        keepAliveInitialDelayMillis: 10_000,
        connectionTimeoutMillis: 10_000,
      };
      const listener = new Listener(() => new pg.Client(ownConnection));
      this.listener = listener;
      const sharedReads = new SharedReads(
        () => new Client({ ...ownConnection, pipeline: true } as pg.ClientConfig),
        SHARED_READ_CONNECTIONS,
      );
      this.sharedReads = sharedReads;
      this.db = new Kysely<Database>({
        dialect: new StorePostgresDialect(pool, new PostgresStoreAdapter(this), async () => {
          await Promise.all([listener.close(), sharedReads.close()]);
        }),
      });
    }
  }

  /**
   * Runs `work` in a transaction. It commits when `work` resolves and rolls back when it throws. With
   * durability `full` (the default) the answer comes once the commit, and everything `work` read, is
   * on disk; with `relaxed`, at once, with `durable` settling then (it rejects if the commit failed;
   * null when nothing was waiting for the disk, and always on PostgreSQL, where a commit is durable).
   */
  transaction<T>(work: (trx: Tx) => Promise<T>, options?: { durability: 'full' }): Promise<T>;
  transaction<T>(
    work: (trx: Tx) => Promise<T>,
    options: { durability: 'relaxed' },
  ): Promise<{ result: T; durable: Promise<void> | null }>;
  async transaction<T>(
    work: (trx: Tx) => Promise<T>,
    options?: { durability: Durability },
  ): Promise<T | { result: T; durable: Promise<void> | null }> {
    const relaxed = options?.durability === 'relaxed';
    const open: OpenTransaction = { unit: null, hooks: null };
    const result = await this.db.transaction().execute(async (trx) => {
      // The work starts as soon as the transaction holds the connection: on SQLite, its unit is the one holding it.
      open.unit = this.groupCommit?.transactionHoldingConnection() ?? null;
      if (relaxed && open.unit) open.unit.relaxed = true;
      // PostgreSQL: the commit does not wait for its WAL to be flushed (the next commit that waits
      // flushes it, or PostgreSQL's WAL writer). Only a crash of PostgreSQL itself could lose it;
      // what it read was committed by others, and so is on disk already. Sent with the BEGIN.
      if (relaxed && this.engine === 'postgres') await sql.raw(ASYNC_COMMIT).execute(trx);
      this.open.set(trx, open);
      try {
        return await work(trx);
      } finally {
        this.open.delete(trx);
      }
    });
    if (open.hooks) for (const hook of open.hooks) hook();
    return relaxed ? { result, durable: open.unit?.durable ?? null } : result;
  }

  /**
   * Runs `hook` once `db`'s transaction has committed (never if it rolls back); outside one, at once.
   * False when the same hook was already to run at that commit.
   */
  afterCommit(db: Kysely<any>, hook: () => void): boolean {
    const open = this.open.get(db as Tx);
    if (!open) {
      queueMicrotask(hook);
      return true;
    }
    open.hooks ??= new Set();
    if (open.hooks.has(hook)) return false;
    open.hooks.add(hook);
    return true;
  }

  /**
   * PostgreSQL: `handlers` hear what other connections send on channel `name` of this store's
   * schema (`notifySql`, src/store/postgres/listener.ts), over one connection of the store's own,
   * until the returned function is called. Null on SQLite, which one process uses.
   */
  listen(name: string, handlers: ListenHandlers): (() => void) | null {
    return this.listener ? this.listener.listen(name, handlers) : null;
  }

  /**
   * SQLite, inside one of this store's transactions: runs the statement straight on its unit of work,
   * with its rows in hand (src/store/prepared.ts). Null anywhere else: run it through Kysely.
   */
  runInTransaction(trx: Kysely<any>, statement: string, parameters: Params): QueryResult<unknown> | null {
    if (!this.groupCommit) return null;
    const unit = this.open.get(trx as Tx)?.unit;
    return unit ? this.groupCommit.runInTransaction(unit, statement, parameters) : null;
  }

  /**
   * SQLite, inside one of this store's transactions: hands `row` to `appender`, written with the
   * rest of the transaction's batch just before its COMMIT (group-commit.ts, BatchAppender). False
   * anywhere else (PostgreSQL, or a transaction not begun through the store): write it yourself.
   */
  appendAtCommit<Row>(trx: Kysely<any>, appender: BatchAppender<Row>, row: Row): boolean {
    if (!this.groupCommit) return false;
    const unit = this.open.get(trx as Tx)?.unit;
    if (!unit) return false;
    this.groupCommit.appendAtCommit(unit, appender, row);
    return true;
  }

  /**
   * A read outside any transaction, sent now. SQLite: run at once when nothing holds the connection,
   * its rows in hand when what they show is already on disk, else once it is. PostgreSQL: sent with
   * the other reads of the same turn of the event loop, in one write, on a connection kept for them
   * (src/store/postgres/shared-reads.ts). Null when it cannot be run so (a unit holds SQLite's
   * connection, or the statement is not a plain read): run it through `db`.
   */
  readNow(statement: string, parameters: Params): Promise<unknown[]> | unknown[] | null {
    if (this.groupCommit) return this.groupCommit.readNow(statement, parameters);
    return this.sharedReads?.read(statement, parameters) ?? null;
  }

  /** PostgreSQL: has each connection parse and plan this statement once, then only bind and run it. */
  keepPreparedOnServer(statement: string): void {
    this.serverPrepared?.keep(statement);
  }

  /**
   * SQLite: a number that changes whenever another process (the CLI, a second service) has
   * committed since it was last read. Null on PostgreSQL, where nothing in this process can tell
   * what other processes changed, so nothing may be cached across calls.
   */
  commitsElsewhere(): number | null {
    return this.groupCommit ? this.groupCommit.commitsElsewhere() : null;
  }

  async check(): Promise<void> {
    await sql`select 1`.execute(this.db);
  }

  /** A consistent copy of the SQLite database (VACUUM INTO); for PostgreSQL use pg_dump. */
  async backupTo(target: string): Promise<void> {
    if (this.engine !== 'sqlite')
      throw new Error('backup --to works on the embedded SQLite database; for PostgreSQL use pg_dump');
    if (fs.existsSync(target)) throw new Error(`${target} already exists`);
    // The copy holds everything the database does: made empty and owner-only (0600) first, which
    // VACUUM INTO takes, rather than with the process umask.
    fs.writeFileSync(target, '', { flag: 'wx', mode: 0o600 });
    try {
      await sql`VACUUM INTO ${sql.lit(target)}`.execute(this.db);
    } catch (error) {
      fs.rmSync(target, { force: true });
      throw error;
    }
    fs.chmodSync(target, 0o600);
  }

  /** Waits for what is committed to reach the disk, then closes the database. */
  close(): Promise<void> {
    return this.db.destroy();
  }
}

export function openStore(options: StoreOptions): Store {
  return new Store(options);
}

/** The query builder of a new store; `storeOf` finds the store again. */
export function openDb(options: StoreOptions): Db {
  return openStore(options).db;
}

/** The store a query builder or transaction belongs to. */
export function storeOf(db: Kysely<any>): Store {
  const store = storeOfOrNull(db);
  if (!store) throw new Error('this query builder was not made by a Store (src/store/store.ts)');
  return store;
}

/** The store of a query builder, or null when it was made elsewhere (a test's own Kysely). */
export function storeOfOrNull(db: Kysely<any>): Store | null {
  const adapter = db.getExecutor().adapter;
  return adapter instanceof SqliteStoreAdapter || adapter instanceof PostgresStoreAdapter ? adapter.store : null;
}

/**
 * `work` inside `db`'s transaction when `db` is one, else in a new transaction of its store (full
 * durability): how a service that may be called inside a caller's transaction joins it.
 */
export function transact<T, DB = Database>(db: Kysely<DB>, work: (trx: Transaction<DB>) => Promise<T>): Promise<T> {
  if (db.isTransaction) return work(db as Transaction<DB>);
  // The sandbox bank's tables are another schema over the same kind of store.
  return storeOf(db).transaction(work as unknown as (trx: Tx) => Promise<T>);
}

/**
 * Runs `hook` once the transaction `db` belongs to has committed; outside one, at once. False when
 * the same hook was already to run at that commit.
 */
export function afterCommit(db: Kysely<any>, hook: () => void): boolean {
  return storeOf(db).afterCommit(db, hook);
}
