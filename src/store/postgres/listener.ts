import { sql, type RawBuilder } from 'kysely';
import pg from 'pg';

// PostgreSQL's LISTEN/NOTIFY, for what one process must hear of at once from another (a job queued
// for its workers). A notification sent inside a transaction is delivered when it commits, and not
// at all if it rolls back. Each store holds one connection of its own for listening, outside its
// pool: a pooled connection would be handed to queries, and a LISTEN lasts only as long as its
// connection. Notifications are a shortcut, never the only way: whoever listens also polls, so a
// dropped connection (retried with backoff) or a lost notification only costs a poll's delay.

export type ListenHandlers = {
  /** A notification on the channel, with its payload. */
  notice(payload: string): void;
  /** The connection listens (again): anything sent while it did not was not heard. */
  listening(): void;
  /** The connection failed or dropped; another is tried in `retryInMs`. */
  lost(error: Error, retryInMs: number): void;
};

const RETRY_FIRST_MS = 100;
const RETRY_MAX_MS = 5_000;

/**
 * Channels are per database, and one database may hold several Tono schemas (a test's, a second
 * service's), so a channel's name carries the OID of the schema it is about: a plain, short
 * identifier whatever the schema is called.
 */
const SCHEMA_SUFFIX = `coalesce((select oid::text from pg_catalog.pg_namespace where nspname = current_schema()), '')`;

/** SQL that sends `payload` on the channel `name` of the connection's schema, at commit. */
export function notifySql(name: string, payload: unknown): RawBuilder<unknown> {
  return sql`pg_notify(${sql.lit(`${name}_`)} || ${sql.raw(SCHEMA_SUFFIX)}, ${payload})`;
}

type Live = { client: pg.Client; suffix: string | null; listening: Set<string> };

export class Listener {
  private readonly newClient: () => pg.Client;
  private readonly subscribers = new Map<string, Set<ListenHandlers>>();
  private live: Live | null = null;
  private retryTimer: NodeJS.Timeout | null = null;
  private failures = 0;
  private closed = false;

  constructor(newClient: () => pg.Client) {
    this.newClient = newClient;
  }

  /** Calls `handlers` for notifications on channel `name` until the returned function is called. */
  listen(name: string, handlers: ListenHandlers): () => void {
    let set = this.subscribers.get(name);
    if (!set) this.subscribers.set(name, (set = new Set()));
    set.add(handlers);
    if (!this.closed) {
      if (!this.live && !this.retryTimer) void this.connect();
      else if (this.live?.suffix != null) void this.listenOnEveryChannel(this.live);
    }
    return () => {
      set.delete(handlers);
      if (set.size === 0 && this.subscribers.get(name) === set) this.subscribers.delete(name);
      if (this.subscribers.size === 0) this.disconnect();
    };
  }

  /** Stops listening for good (the store is closing). */
  close(): Promise<void> {
    this.closed = true;
    this.subscribers.clear();
    return this.disconnect();
  }

  private async connect(): Promise<void> {
    this.retryTimer = null;
    const client = this.newClient();
    const live: Live = { client, suffix: null, listening: new Set() };
    this.live = live;
    client.on('error', (error) => this.drop(live, error));
    client.on('end', () => this.drop(live, new Error('the listening connection ended')));
    client.on('notification', (message) => {
      const name = message.channel.slice(0, message.channel.length - (live.suffix ?? '').length - 1);
      for (const handlers of this.subscribers.get(name) ?? []) handlers.notice(message.payload ?? '');
    });
    try {
      await client.connect();
      const { rows } = await client.query<{ suffix: string }>(`select ${SCHEMA_SUFFIX} as suffix`);
      live.suffix = rows[0]!.suffix;
      await this.listenOnEveryChannel(live);
      if (this.live === live) this.failures = 0;
    } catch (error) {
      this.drop(live, error as Error);
    }
  }

  /** LISTENs on each channel subscribed to and not yet listened on, then tells its subscribers. */
  private async listenOnEveryChannel(live: Live): Promise<void> {
    try {
      for (const name of this.subscribers.keys()) {
        if (live.listening.has(name)) continue;
        live.listening.add(name);
        await live.client.query(`LISTEN ${pg.escapeIdentifier(`${name}_${live.suffix}`)}`);
        if (this.live !== live) return;
        for (const handlers of this.subscribers.get(name) ?? []) handlers.listening();
      }
    } catch (error) {
      this.drop(live, error as Error);
    }
  }

  private drop(live: Live, error: Error): void {
    if (this.live !== live) return;
    this.live = null;
    void this.end(live);
    if (this.closed || this.subscribers.size === 0) return;
    const retryInMs = Math.round(
      Math.min(RETRY_MAX_MS, RETRY_FIRST_MS * 2 ** this.failures) * (0.5 + Math.random() / 2),
    );
    this.failures = Math.min(this.failures + 1, 20);
    for (const set of this.subscribers.values()) for (const handlers of set) handlers.lost(error, retryInMs);
    this.retryTimer = setTimeout(() => void this.connect(), retryInMs);
    this.retryTimer.unref();
  }

  private disconnect(): Promise<void> {
    if (this.retryTimer) clearTimeout(this.retryTimer);
    this.retryTimer = null;
    const live = this.live;
    this.live = null;
    return live ? this.end(live) : Promise.resolve();
  }

  private async end(live: Live): Promise<void> {
    live.client.removeAllListeners();
    // A connection being ended may still report its error; nobody needs it.
    live.client.on('error', () => {});
    await live.client.end().catch(() => {});
  }
}
