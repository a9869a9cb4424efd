import type { DatabaseSync, StatementSync } from 'node:sqlite';
import type { CompiledQuery, DatabaseConnection, Driver, QueryResult, TransactionSettings } from 'kysely';
import { bindable, rowMakerFor, rowsOf, type Params, type RowMaker } from './rows.ts';
import { newBatch, WalSyncer, type Batch, type FileSync } from './wal-syncer.ts';

// Kysely's driver over node:sqlite with group commit.
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
// only writes the WAL, and the WalSyncer then fsyncs the WAL file on libuv's thread pool. Every
// unit's caller is released only once everything committed before it returned is on disk: a writer
// waits for its own batch's fsync, a reader for the fsync of the last commit it could have seen.
// So, as with synchronous=FULL, nothing is acknowledged, or shown to anyone, before it is durable;
// but HTTP, JSON and bank calls run while the disk syncs, and the next batch's statements too.
// docs/store.md says what this promises the store's callers.

const SELECT = /^\s*select\s/i;
/** A statement that changes rows; with RETURNING it also has columns, and is still a write. */
const WRITE = /^\s*(insert|update|delete|replace)\s/i;
const SCHEMA_CHANGE = /^\s*(create|alter|drop)\s/i;

/**
 * A prepared statement; a reader's rows come back as arrays and are named here (see `rowsOf`).
 * `select` is a plain read; `write` changes rows, and with RETURNING has columns too: it still runs in a unit of work.
 */
type Statement = {
  statement: StatementSync;
  reader: boolean;
  select: boolean;
  write: boolean;
  /** create, alter or drop: after it, statements prepared earlier may name their columns wrong. */
  schemaChange: boolean;
  makeRow: RowMaker;
};

/** Statements run at once on the batch's transaction, for an appender's flush. */
export type BatchStatements = {
  /** The rows of a read (or a write with RETURNING). */
  all(sql: string, parameters: Params): any[];
  run(sql: string, parameters: Params): void;
};

/**
 * Rows a unit of work hands over to be written when its batch commits, all of them at once: for
 * records appended to a log in every transaction (the audit trail), whose own statements, each in
 * its unit's savepoint, cost a write a quarter more. `flush` runs inside the batch's transaction,
 * just before its COMMIT, with the rows of every unit that committed into the batch, in the order
 * they did; a unit that rolls back hands over nothing. If it throws, the whole batch rolls back and
 * every unit in it fails, so no change is kept without its rows.
 */
export type BatchAppender<Row> = { readonly name: string; flush(statements: BatchStatements, rows: Row[]): void };

/** Every row a reader (or a write with RETURNING) answers, as objects. */
function allRows({ statement, makeRow }: Statement, parameters: Params): any[] {
  return rowsOf(statement.all(...bindable(parameters)) as unknown as unknown[][], makeRow);
}

export class GroupCommitDriver implements Driver {
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
  private dataVersion: StatementSync | null = null;
  /** What the units committed into the open batch handed over (appendAtCommit), by appender. */
  private appended = new Map<BatchAppender<any>, unknown[]>();
  private readonly batchStatements: BatchStatements = {
    all: (sql, parameters) => allRows(this.prepare(sql), parameters),
    run: (sql, parameters) => {
      this.prepare(sql).statement.run(...bindable(parameters));
    },
  };

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
        schemaChange: SCHEMA_CHANGE.test(sql),
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
    this.batch = newBatch();
  }

  run(sql: string, parameters: Params, connection: UnitConnection): QueryResult<any> {
    const entry = this.prepare(sql);
    // SQLite re-prepares a statement after a schema change, and `select *` may then return its
    // columns in another order than the names its row maker was built with: forget them all.
    if (entry.schemaChange) this.statements.clear();
    const { statement, reader, write } = entry;
    if (reader && !write) return { rows: allRows(entry, parameters) };
    if (/^\s*vacuum/i.test(sql)) {
      // VACUUM (INTO) cannot run inside a transaction: make what is pending durable first.
      this.commitNow();
      statement.run(...bindable(parameters));
      return { rows: [] };
    }
    this.becomeDirty(connection);
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
    if (SCHEMA_CHANGE.test(sql)) this.statements.clear();
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
    const seen = this.durableSoFar();
    if (!seen) return rows;
    if (this.outerOpen) this.scheduleCommit();
    return seen.then(() => rows);
  }

  /** Settles once everything committed so far, and the batch still open, is on disk; null if nothing is pending. */
  private durableSoFar(): Promise<void> | null {
    return this.outerOpen && this.batch ? this.batch.promise : this.syncer.settled();
  }

  /**
   * A unit's first write joins the open batch. A relaxed unit's caller will wait only for what it
   * read before (other units' writes still waiting for their fsync: a job queued a moment ago),
   * not for its own writes; after this it holds the connection, so it reads nothing else of others'.
   */
  private becomeDirty(unit: UnitConnection): void {
    if (unit.relaxed && !unit.dirty) unit.durable = this.durableSoFar();
    this.openOuter();
    unit.dirty = true;
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

  /** The transaction holding the connection now (asked as its work starts), or null. */
  transactionHoldingConnection(): UnitConnection | null {
    return this.holder?.inTransaction ? this.holder : null;
  }

  /**
   * Runs a statement straight on `unit`, a transaction holding the connection, without Kysely's
   * executor around it. Through Kysely each statement of a transaction passes half a dozen nested
   * async functions and a new executor (a kilobyte or more of garbage each); an execution's dozen
   * statements made a quarter of everything it allocated.
   */
  runInTransaction(unit: UnitConnection, sql: string, parameters: Params): QueryResult<unknown> {
    if (this.holder !== unit || !unit.inTransaction)
      throw new Error('the transaction has already committed or rolled back');
    return this.run(sql, parameters, unit);
  }

  /**
   * Hands `row` to `appender`, to be written with the rest of its batch just before the COMMIT
   * (BatchAppender); the unit joins the open batch as a write does.
   */
  appendAtCommit<Row>(unit: UnitConnection, appender: BatchAppender<Row>, row: Row): void {
    if (this.holder !== unit || !unit.inTransaction)
      throw new Error('the transaction has already committed or rolled back');
    this.becomeDirty(unit);
    (unit.appended ??= []).push([appender, row]);
  }

  /**
   * A number that changes whenever another connection (another process: the CLI, a second
   * service) has committed to the database since it was last read; commits of this connection
   * leave it as it is. SQLite's `PRAGMA data_version`: about as dear as a primary-key read, so a
   * cache of rows checks it now and then rather than on every use.
   */
  commitsElsewhere(): number {
    if (!this.dataVersion) {
      this.dataVersion = this.database.prepare('PRAGMA data_version');
      this.dataVersion.setReturnArrays(true);
    }
    return Number((this.dataVersion.get() as unknown as [number])[0]);
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
    if (unit.appended) {
      for (const [appender, row] of unit.appended) {
        const rows = this.appended.get(appender);
        if (rows) rows.push(row);
        else this.appended.set(appender, [row]);
      }
      unit.appended = null;
    }
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
    unit.appended = null;
  }

  async savepoint(connection: DatabaseConnection, name: string): Promise<void> {
    this.becomeDirty(connection as UnitConnection);
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
    const seen = batch ? null : this.durableSoFar();
    if (seen && this.outerOpen) this.scheduleCommit();
    this.unlock();
    if (unit.relaxed) {
      if (batch) this.scheduleCommit();
      if (!unit.dirty) unit.durable = seen;
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
    const appended = this.appended;
    this.outerOpen = false;
    this.batch = null;
    this.appended = new Map();
    try {
      for (const [appender, rows] of appended) appender.flush(this.batchStatements, rows);
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

export class UnitConnection implements DatabaseConnection {
  dirty = false;
  /**
   * The unit's own writes may be lost in a crash (a job lease): its caller is answered without
   * waiting for their fsync, and waits itself for `durable` (Store.transaction, durability 'relaxed').
   */
  relaxed = false;
  /** A relaxed unit's: settles once everything it read is on disk (null: nothing to wait for). */
  durable: Promise<void> | null = null;
  inTransaction = false;
  savepoint: string | null = null;
  /** Rows handed to appenders (GroupCommitDriver.appendAtCommit), until the unit commits or rolls back. */
  appended: Array<[BatchAppender<any>, unknown]> | null = null;
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
