import fs from 'node:fs';
import path from 'node:path';
import { DatabaseSync, type StatementSync, type SQLInputValue } from 'node:sqlite';
import {
  type CompiledQuery,
  SqliteAdapter,
  SqliteIntrospector,
  SqliteQueryCompiler,
  type DatabaseConnection,
  type Dialect,
  type Driver,
  type Kysely,
  type QueryResult,
  type TransactionSettings,
} from 'kysely';

// Kysely over node:sqlite with group commit.
//
// SQLite has one writer, and with synchronous=FULL every COMMIT waits for an fsync (~0.2 ms here),
// which alone capped writes near 5,000 transactions/s and made every API write wait its turn.
// This driver keeps the one connection behind a FIFO lock, as Kysely's own SQLite driver does,
// but runs each unit of work (a transaction, or a lone write) inside a SAVEPOINT of a shared outer
// transaction. A unit that rolls back undoes only its savepoint. The outer transaction commits on
// the next turn of the event loop, once for every unit that joined it; while an fsync is under way
// it stays open until that fsync ends (see GroupCommitDriver.commit).
//
// The fsync itself is taken off the event loop: SQLite runs with synchronous=NORMAL, so a COMMIT
// only writes the WAL, and the driver then fsyncs the WAL file on libuv's thread pool. Every unit's
// caller is released only once everything committed before it returned is on disk: a writer waits
// for its own batch's fsync, a reader for the fsync of the last commit it could have seen. So, as
// with synchronous=FULL, nothing is acknowledged, or shown to anyone, before it is durable; but
// HTTP, JSON and bank calls run while the disk syncs, and the next batch's statements too.

type Params = ReadonlyArray<unknown>;

const SELECT = /^\s*select\s/i;
/** A statement that changes rows; with RETURNING it also has columns, and is still a write. */
const WRITE = /^\s*(insert|update|delete|replace)\s/i;

/**
 * Sent as a query inside a unit of work, tells the driver that the unit's caller need not wait for
 * its COMMIT to reach the disk (it still commits with its batch). For writes that are safe to lose
 * in a crash, such as taking a job's lease: a lost lease only lets the job be claimed again.
 */
export const RELAXED_DURABILITY_MARKER = "select 'tono: relaxed durability'";

/**
 * Rows as objects, built from the arrays node:sqlite returns. node:sqlite builds each row object
 * with a null prototype one property at a time, which V8 keeps as a slow dictionary; built here
 * they share one shape. Each statement gets a function that makes its row as one object literal
 * (V8 copies a prepared template), a tenth of the cost of adding 36 columns one at a time. As with
 * SQLite's own objects, a later column of the same name wins.
 */
type RowMaker = (values: unknown[]) => Record<string, unknown>;

function rowMakerFor(columns: string[]): RowMaker {
  if (columns.length === 0) return () => ({});
  // Names are quoted as JSON string literals, so any name is a key and nothing else; `__proto__`
  // as a computed key, since a literal's plain `__proto__:` would set the prototype instead.
  const keys = columns.map((column) => (column === '__proto__' ? '["__proto__"]' : JSON.stringify(column)));
  return new Function('values', `return { ${keys.map((key, i) => `${key}: values[${i}]`).join(', ')} };`) as RowMaker;
}

function rowsOf(arrays: unknown[][], makeRow: RowMaker): any[] {
  const rows = new Array(arrays.length);
  for (let r = 0; r < arrays.length; r++) rows[r] = makeRow(arrays[r]!);
  return rows;
}

function bindable(params: Params): SQLInputValue[] {
  return params.map((value) => (typeof value === 'boolean' ? (value ? 1 : 0) : value)) as SQLInputValue[];
}

export function openSqlite(file: string): DatabaseSync {
  const database = new DatabaseSync(file, { timeout: 5000 });
  database.exec('PRAGMA journal_mode = WAL');
  // The driver fsyncs the WAL after each commit itself (see above); checkpoints still sync.
  database.exec('PRAGMA synchronous = NORMAL');
  database.exec('PRAGMA foreign_keys = ON');
  database.exec('PRAGMA busy_timeout = 5000');
  // Each unit of work is a SAVEPOINT, and SQLite keeps the pages a savepoint changed in a
  // statement journal so it can roll back to it. By default that journal moves to a temporary
  // file once it passes 64 KiB, which an execution's dozen statements do: every statement then
  // paid write and read system calls (an event insert took 55 µs rather than 15). In memory, the
  // journal is emptied when each unit's savepoint is released, so it holds one unit's pages.
  // This also keeps the temporary b-trees of sorts and DISTINCT in memory (docs/performance.md).
  database.exec('PRAGMA temp_store = MEMORY');
  return database;
}

/**
 * A prepared statement; a reader's rows come back as arrays and are named here (see `rowsOf`).
 * `select` is a plain read; `write` changes rows, and with RETURNING has columns too: it still runs in a unit of work.
 */
type Statement = { statement: StatementSync; reader: boolean; select: boolean; write: boolean; makeRow: RowMaker };

/** Every row a reader (or a write with RETURNING) answers, as objects. */
function allRows({ statement, makeRow }: Statement, parameters: Params): any[] {
  return rowsOf(statement.all(...bindable(parameters)) as unknown as unknown[][], makeRow);
}
type Batch = { promise: Promise<void>; resolve(): void; reject(error: unknown): void };
export type FileSync = (fd: number, done: (error: Error | null) => void) => void;

/**
 * Makes committed WAL frames durable: one fsync at a time on the thread pool, each covering every
 * batch committed before it started, and batches released in commit order.
 */
class WalSyncer {
  private readonly walFile: string;
  private readonly fsync: FileSync;
  private fd: number | null = null;
  private inode = -1;
  private syncing = false;
  /** Committed, waiting for the next fsync. */
  private waiting: Batch[] = [];
  /** The last committed batch that is not known to be durable yet. */
  private last: Batch | null = null;
  /** Called once the fsync under way has ended and nothing else is waiting for one. */
  private onIdle: (() => void) | null = null;

  constructor(databaseFile: string, fsync: FileSync) {
    this.walFile = `${databaseFile}-wal`;
    this.fsync = fsync;
  }

  /** While an fsync is under way, keeps `then` for when it ends and says true; otherwise false. */
  afterSync(then: () => void): boolean {
    if (!this.syncing) return false;
    this.onIdle = then;
    return true;
  }

  committed(batch: Batch): void {
    this.waiting.push(batch);
    this.last = batch;
    if (!this.syncing) this.syncNext();
  }

  /** Resolves once everything committed so far is on disk. */
  settled(): Promise<void> | null {
    return this.last?.promise ?? null;
  }

  private syncNext(): void {
    const batches = this.waiting;
    this.waiting = [];
    this.syncing = true;
    let fd: number;
    try {
      fd = this.walFd();
    } catch (error) {
      return this.done(batches, error as Error);
    }
    this.fsync(fd, (error) => this.done(batches, error));
  }

  private done(batches: Batch[], error: Error | null): void {
    for (const batch of batches) {
      if (error) batch.reject(error);
      else batch.resolve();
    }
    if (this.last === batches[batches.length - 1]) this.last = null;
    this.syncing = false;
    if (this.waiting.length > 0) return this.syncNext();
    const idle = this.onIdle;
    this.onIdle = null;
    idle?.();
  }

  /** The WAL file, opened once; again if SQLite has replaced it (after every connection closed). */
  private walFd(): number {
    const inode = fs.statSync(this.walFile).ino;
    if (this.fd !== null && inode === this.inode) return this.fd;
    if (this.fd !== null) fs.closeSync(this.fd);
    this.fd = fs.openSync(this.walFile, 'r');
    this.inode = inode;
    // The WAL's directory entry must be durable too, once per file.
    const directory = fs.openSync(path.dirname(this.walFile), 'r');
    try {
      fs.fsyncSync(directory);
    } finally {
      fs.closeSync(directory);
    }
    return this.fd;
  }

  close(): void {
    if (this.fd !== null) fs.closeSync(this.fd);
    this.fd = null;
  }
}

class GroupCommitDriver implements Driver {
  private readonly database: DatabaseSync;
  private readonly syncer: WalSyncer;
  private readonly statements = new Map<string, Statement>();
  private locked = false;
  private readonly waiting: Array<() => void> = [];
  /** The unit of work holding the connection, from its acquisition to its release. */
  private holder: UnitConnection | null = null;
  private outerOpen = false;
  private batch: Batch | null = null;
  private commitScheduled = false;
  private savepointCounter = 0;

  constructor(database: DatabaseSync, file: string, fsync: FileSync) {
    this.database = database;
    this.syncer = new WalSyncer(file, fsync);
  }

  async init(): Promise<void> {}

  private lock(): Promise<void> {
    if (!this.locked) {
      this.locked = true;
      return Promise.resolve();
    }
    return new Promise((resolve) => this.waiting.push(resolve));
  }

  private unlock(): void {
    const next = this.waiting.shift();
    if (next) next();
    else this.locked = false;
  }

  private prepare(sql: string): Statement {
    let entry = this.statements.get(sql);
    if (!entry) {
      const statement = this.database.prepare(sql);
      const columns = statement.columns().map((column) => column.name);
      if (columns.length > 0) statement.setReturnArrays(true);
      entry = {
        statement,
        reader: columns.length > 0,
        select: columns.length > 0 && SELECT.test(sql),
        write: WRITE.test(sql),
        makeRow: rowMakerFor(columns),
      };
      if (this.statements.size > 1000) this.statements.clear();
      this.statements.set(sql, entry);
    }
    return entry;
  }

  /** Opens the shared outer transaction on the first write of a batch. */
  openOuter(): void {
    if (this.outerOpen) return;
    this.database.exec('BEGIN IMMEDIATE');
    this.outerOpen = true;
    let resolve!: () => void;
    let reject!: (error: unknown) => void;
    const promise = new Promise<void>((res, rej) => {
      resolve = res;
      reject = rej;
    });
    promise.catch(() => {});
    this.batch = { promise, resolve, reject };
  }

  run(sql: string, parameters: Params, connection: UnitConnection): QueryResult<any> {
    if (sql === RELAXED_DURABILITY_MARKER) {
      connection.relaxed = true;
      // What the unit has read so far may be other units' writes still waiting for their fsync (a
      // job queued a moment ago): handed to the caller, which must not act on them before then.
      const ready = this.outerOpen && this.batch ? this.batch.promise : this.syncer.settled();
      if (ready && this.outerOpen) this.scheduleCommit();
      return { rows: [{ ready }] };
    }
    const entry = this.prepare(sql);
    const { statement, reader, write } = entry;
    if (reader && !write) return { rows: allRows(entry, parameters) };
    if (/^\s*vacuum/i.test(sql)) {
      // VACUUM (INTO) cannot run inside a transaction: make what is pending durable first.
      this.commitNow();
      statement.run(...bindable(parameters));
      return { rows: [] };
    }
    this.openOuter();
    connection.dirty = true;
    if (connection.inTransaction && !connection.savepoint) {
      connection.savepoint = this.nextSavepoint();
      this.database.exec(`SAVEPOINT ${connection.savepoint}`);
    }
    // A write with RETURNING is part of its unit like any other: inside its savepoint, and its
    // caller answered once the batch is durable.
    if (reader) return { rows: allRows(entry, parameters) };
    const { changes, lastInsertRowid } = statement.run(...bindable(parameters));
    return { numAffectedRows: BigInt(changes), insertId: BigInt(lastInsertRowid), rows: [] };
  }

  exec(sql: string): void {
    this.database.exec(sql);
  }

  /**
   * A read outside any unit of work, run at once when nothing holds the connection: the same rows,
   * and the same wait for the durability of what it saw, as the read through Kysely, without the
   * lock and the connection's promises around it. Null when the connection is taken (a unit is
   * between its statements, and its writes must not be seen), or the statement is not a read.
   */
  readNow(sql: string, parameters: Params): Promise<unknown[]> | unknown[] | null {
    if (this.locked) return null;
    const entry = this.prepare(sql);
    if (!entry.select) return null;
    const rows = allRows(entry, parameters);
    const seen = this.outerOpen && this.batch ? this.batch.promise : this.syncer.settled();
    if (!seen) return rows;
    if (this.outerOpen) this.scheduleCommit();
    return seen.then(() => rows);
  }

  nextSavepoint(): string {
    this.savepointCounter = (this.savepointCounter + 1) % 1_000_000;
    return `unit_${this.savepointCounter}`;
  }

  async acquireConnection(): Promise<DatabaseConnection> {
    await this.lock();
    this.holder = new UnitConnection(this);
    return this.holder;
  }

  /**
   * Runs statements straight on the unit of work that holds the connection now (a transaction, as
   * its work starts), without Kysely's executor around each one: see UnitRunner.
   */
  unitRunner(): UnitRunner | null {
    const unit = this.holder;
    if (!unit?.inTransaction) return null;
    return (sql, parameters) => {
      if (this.holder !== unit || !unit.inTransaction)
        throw new Error('the transaction has already committed or rolled back');
      return this.run(sql, parameters, unit);
    };
  }

  // A transaction takes the write lock (and its savepoint) only at its first write, so read-only
  // transactions, such as an idle worker's poll, never block other processes' writers.
  async beginTransaction(connection: DatabaseConnection, _settings: TransactionSettings): Promise<void> {
    (connection as UnitConnection).inTransaction = true;
  }

  async commitTransaction(connection: DatabaseConnection): Promise<void> {
    const unit = connection as UnitConnection;
    if (unit.savepoint) this.database.exec(`RELEASE ${unit.savepoint}`);
    unit.savepoint = null;
    unit.inTransaction = false;
  }

  async rollbackTransaction(connection: DatabaseConnection): Promise<void> {
    const unit = connection as UnitConnection;
    if (unit.savepoint) {
      this.database.exec(`ROLLBACK TO ${unit.savepoint}`);
      this.database.exec(`RELEASE ${unit.savepoint}`);
      unit.savepoint = null;
    }
    unit.inTransaction = false;
    unit.dirty = false;
  }

  async savepoint(connection: DatabaseConnection, name: string): Promise<void> {
    (connection as UnitConnection).dirty = true;
    this.openOuter();
    this.database.exec(`SAVEPOINT "${name.replace(/"/g, '')}"`);
  }

  async rollbackToSavepoint(_connection: DatabaseConnection, name: string): Promise<void> {
    this.database.exec(`ROLLBACK TO "${name.replace(/"/g, '')}"`);
  }

  async releaseSavepoint(_connection: DatabaseConnection, name: string): Promise<void> {
    this.database.exec(`RELEASE "${name.replace(/"/g, '')}"`);
  }

  async releaseConnection(connection: DatabaseConnection): Promise<void> {
    const unit = connection as UnitConnection;
    if (this.holder === unit) this.holder = null;
    const batch = unit.dirty ? this.batch : null;
    // What this unit read may include the open batch (written by units that have finished, not yet
    // committed) or commits whose fsync has not finished: it is answered once those are durable.
    const seen = batch ? null : this.outerOpen && this.batch ? this.batch.promise : this.syncer.settled();
    if (seen && this.outerOpen) this.scheduleCommit();
    this.unlock();
    if (unit.relaxed) {
      if (batch) this.scheduleCommit();
      return;
    }
    if (batch) {
      this.scheduleCommit();
      await batch.promise;
    } else if (seen) {
      await seen;
    }
  }

  private scheduleCommit(): void {
    if (this.commitScheduled) return;
    this.commitScheduled = true;
    setImmediate(() => {
      void this.commit();
    });
  }

  /**
   * Commits the open batch, unless an fsync is under way: then the batch stays open, and is
   * committed when that fsync ends. Its units wait for the next fsync either way (an fsync covers
   * only what was committed before it began); what they wait longer is the COMMIT itself, which
   * now runs after that fsync rather than during it. Units that finish in the meantime join the
   * batch instead of committing another, so the pages they share (an index's, a table's last)
   * are written to the WAL once.
   */
  private async commit(): Promise<void> {
    await this.lock();
    try {
      if (this.syncer.afterSync(() => void this.commit())) return;
      this.commitScheduled = false;
      this.commitNow();
    } finally {
      this.unlock();
    }
  }

  /** COMMITs the open batch (the caller holds the lock) and releases every unit waiting on it. */
  private commitNow(): void {
    if (!this.outerOpen) return;
    const batch = this.batch;
    this.outerOpen = false;
    this.batch = null;
    try {
      this.database.exec('COMMIT');
      if (batch) this.syncer.committed(batch);
    } catch (error) {
      try {
        this.database.exec('ROLLBACK');
      } catch {
        // the failed COMMIT may already have ended the transaction
      }
      batch?.reject(error);
    }
  }

  async destroy(): Promise<void> {
    await this.lock();
    this.commitNow();
    await this.syncer.settled()?.catch(() => {});
    this.statements.clear();
    this.database.close();
    this.syncer.close();
  }
}

class UnitConnection implements DatabaseConnection {
  dirty = false;
  /**
   * The unit's own writes may be lost in a crash (a job lease): its caller is answered without
   * waiting for their fsync, and waits itself for what the unit read (store/db.ts, relaxDurability).
   */
  relaxed = false;
  inTransaction = false;
  savepoint: string | null = null;
  private readonly driver: GroupCommitDriver;
  constructor(driver: GroupCommitDriver) {
    this.driver = driver;
  }
  async executeQuery<R>(compiledQuery: CompiledQuery): Promise<QueryResult<R>> {
    return this.driver.run(compiledQuery.sql, compiledQuery.parameters, this) as QueryResult<R>;
  }
  // biome-ignore lint/correctness/useYield: Kysely's driver interface asks for a generator; this one only refuses
  async *streamQuery<R>(): AsyncIterableIterator<QueryResult<R>> {
    throw new Error('streaming is not supported on SQLite here');
  }
}

/** Reads that skip Kysely's connection handling (see GroupCommitDriver.readNow). */
export type DirectReader = (sql: string, parameters: Params) => Promise<unknown[]> | unknown[] | null;

/**
 * A statement run synchronously inside one transaction. Through Kysely each statement of a
 * transaction passes half a dozen nested async functions and a new executor (a kilobyte or more of
 * garbage each); an execution's dozen statements made a quarter of everything it allocated.
 */
export type UnitRunner = (sql: string, parameters: Params) => QueryResult<unknown>;

/** What the driver gives the Kysely instance built on it, outside Kysely's own interface. */
export type DriverAccess = {
  readNow: DirectReader;
  unitRunner: () => UnitRunner | null;
  commitsElsewhere: CommitsElsewhere;
};

/**
 * A number that changes whenever another connection (another process: the CLI, a second service)
 * has committed to the database since it was last read; commits of this connection leave it as it
 * is. SQLite's `PRAGMA data_version`: about as dear as a primary-key read, so a cache of rows
 * checks it now and then rather than on every use.
 */
export type CommitsElsewhere = () => number;

function dataVersionOf(database: DatabaseSync): CommitsElsewhere {
  const statement = database.prepare('PRAGMA data_version');
  statement.setReturnArrays(true);
  return () => Number((statement.get() as unknown as [number])[0]);
}

/**
 * `fsync` is the call that makes the WAL durable (fs.fsync); a test may watch it. `onDriver`
 * receives the driver's direct read and unit runner, for the Kysely instance built on this
 * dialect.
 */
export function nodeSqliteDialect(
  database: DatabaseSync,
  file: string,
  fsync: FileSync = fs.fsync,
  onDriver?: (access: DriverAccess) => void,
): Dialect {
  return {
    createAdapter: () => new SqliteAdapter(),
    createDriver: () => {
      const driver = new GroupCommitDriver(database, file, fsync);
      onDriver?.({
        readNow: (sql, parameters) => driver.readNow(sql, parameters),
        unitRunner: () => driver.unitRunner(),
        commitsElsewhere: dataVersionOf(database),
      });
      return driver;
    },
    createIntrospector: (db: Kysely<any>) => new SqliteIntrospector(db),
    createQueryCompiler: () => new SqliteQueryCompiler(),
  };
}
