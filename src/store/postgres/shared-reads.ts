import type pg from 'pg';

// Reads outside a transaction, sent together. Through the pool each read takes a connection of its
// own, and costs the service a write to its socket (some 50 µs of CPU on the development machine,
// the largest single cost of a read request) and a read of the answer. Here the reads the service
// makes in the same turn of its event loop (every request that arrived together looks up its API
// key) go to one of a few connections kept for them, in pipeline mode, in one write; PostgreSQL
// answers each in order, each in its own implicit transaction, so one read's error is its own.
//
// Only plain reads come here. A read never waits for a row lock, so one slow statement cannot hold
// up the others behind it for long, and a transaction waiting on such a read cannot be waiting on
// itself. A write (which may wait for a row lock held by a transaction that is itself waiting on a
// read) and a read that locks (FOR UPDATE, FOR SHARE) take a pooled connection as before.

const PLAIN_READ = /^\s*select\b/i;
const LOCKING = /\bfor\s+(update|no\s+key\s+update|share|key\s+share)\b/i;

/** Whether `statement` only reads: a SELECT that locks nothing. */
export function isPlainRead(statement: string): boolean {
  return PLAIN_READ.test(statement) && !LOCKING.test(statement);
}

type Line = {
  client: pg.Client | null;
  connecting: Promise<pg.Client> | null;
  /** Reads sent on it and not yet answered: a new read goes to the line with fewest. */
  waiting: number;
  corked: boolean;
};

export class SharedReads {
  private readonly newClient: () => pg.Client;
  private readonly lines: Line[];
  /** isPlainRead of each statement seen: the prepared statements are few, and every read asks. */
  private readonly plain = new Map<string, boolean>();
  private closed = false;

  /** `newClient` makes a pipelining client (src/store/postgres/dialect.ts) that is not yet connected. */
  constructor(newClient: () => pg.Client, connections: number) {
    this.newClient = newClient;
    this.lines = Array.from({ length: connections }, () => ({
      client: null,
      connecting: null,
      waiting: 0,
      corked: false,
    }));
  }

  /** The rows of `statement`, a plain read; null for anything else (run it on a pooled connection). */
  read(statement: string, parameters: readonly unknown[]): Promise<unknown[]> | null {
    if (this.closed || !this.isPlain(statement)) return null;
    let line = this.lines[0]!;
    for (const other of this.lines) if (other.waiting < line.waiting) line = other;
    if (line.waiting++ === 0) socketOf(line.client)?.ref();
    const answered = () => {
      if (--line.waiting === 0) socketOf(line.client)?.unref();
    };
    const client = line.client;
    const rows = client
      ? this.send(line, client, statement, parameters)
      : this.connected(line).then((connected) => this.send(line, connected, statement, parameters));
    rows.then(answered, answered);
    return rows;
  }

  private isPlain(statement: string): boolean {
    let plain = this.plain.get(statement);
    if (plain === undefined) this.plain.set(statement, (plain = isPlainRead(statement)));
    return plain;
  }

  /** Closes every connection; reads already sent are answered first. */
  async close(): Promise<void> {
    this.closed = true;
    await Promise.all(
      this.lines.map(async (line) => {
        const client = line.client ?? (await line.connecting?.catch(() => null));
        line.client = null;
        await client?.end().catch(() => {});
      }),
    );
  }

  private async send(line: Line, client: pg.Client, statement: string, parameters: readonly unknown[]) {
    // Held in the socket until the event loop has run everything that was ready, then written at once.
    const stream = socketOf(client)!;
    if (!line.corked) {
      line.corked = true;
      stream.cork();
      setImmediate(() => {
        line.corked = false;
        stream.uncork();
      });
    }
    const result = await client.query(statement, parameters as unknown[]);
    return result.rows;
  }

  private connected(line: Line): Promise<pg.Client> {
    if (line.connecting) return line.connecting;
    const client = this.newClient();
    const forget = () => {
      if (line.client === client) line.client = null;
      if (line.connecting === connecting) line.connecting = null;
    };
    // A dropped connection fails the reads sent on it, as a pooled one would; the next read makes another.
    client.on('error', forget);
    client.on('end', forget);
    const connecting = client.connect().then(
      () => {
        if (line.connecting === connecting) line.connecting = null;
        if (this.closed) {
          void client.end().catch(() => {});
          throw new Error('the store is closed');
        }
        line.client = client;
        if (line.waiting === 0) socketOf(client)?.unref();
        return client;
      },
      (error: unknown) => {
        forget();
        throw error;
      },
    );
    line.connecting = connecting;
    return connecting;
  }
}

type SocketLike = { cork(): void; uncork(): void; ref(): void; unref(): void };

/**
 * The connection's socket. It keeps the process alive only while a read waits on it: a process
 * whose work is done (a CLI command) exits even if its store was never closed, as it would once the
 * pool's idle connections timed out.
 */
function socketOf(client: pg.Client | null): SocketLike | null {
  return client ? (client as unknown as { connection: { stream: SocketLike } }).connection.stream : null;
}
