import fs from 'node:fs';
import path from 'node:path';

/** The callers of one batch of units, released together once its COMMIT is on disk. */
export type Batch = { promise: Promise<void>; resolve(): void; reject(error: unknown): void };

/** The call that makes a file durable (fs.fsync); a test may watch or delay it. */
export type FileSync = (fd: number, done: (error: Error | null) => void) => void;

export function newBatch(): Batch {
  let resolve!: () => void;
  let reject!: (error: unknown) => void;
  const promise = new Promise<void>((res, rej) => {
    resolve = res;
    reject = rej;
  });
  // A batch nobody waits for (every unit in it relaxed) must not be an unhandled rejection.
  promise.catch(() => {});
  return { promise, resolve, reject };
}

/**
 * Makes committed WAL frames durable: one fsync at a time on the thread pool, each covering every
 * batch committed before it started, and batches released in commit order.
 */
export class WalSyncer {
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
