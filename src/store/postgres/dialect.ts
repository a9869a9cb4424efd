import {
  PostgresDialect,
  PostgresIntrospector,
  sql,
  type DatabaseIntrospector,
  type DialectAdapter,
  type Driver,
  type Kysely,
  type TableMetadata,
} from 'kysely';
import { createRequire } from 'node:module';
import pg from 'pg';

// int8 (counts, sums, epoch milliseconds) as numbers: every value we store fits in 2^53.
pg.types.setTypeParser(20, (value) => Number(value));
pg.types.setTypeParser(1700, (value) => Number(value));

/**
 * The statements PostgreSQL should keep parsed and planned, by the name they run under: the
 * prepared queries of src/store/prepared.ts, built once and run many times. Each connection
 * prepares one the first time it runs there and afterwards only binds and executes it.
 */
export class ServerPreparedStatements {
  private readonly names = new Map<string, string>();
  private counter = 0;

  keep(text: string): void {
    if (!this.names.has(text)) this.names.set(text, this.nextName());
  }

  nameOf(text: string): string | undefined {
    return this.names.get(text);
  }

  /** A new name for a statement whose plan went stale, so every connection prepares it again. */
  renew(text: string, staleName: string): string {
    if (this.names.get(text) === staleName) this.names.set(text, this.nextName());
    return this.names.get(text)!;
  }

  /** New names for every statement, after this process changed the schema: each is prepared again. */
  renewAll(): void {
    for (const text of this.names.keys()) this.names.set(text, this.nextName());
  }

  private nextName(): string {
    return `tono_${this.counter++}`;
  }
}

const SCHEMA_CHANGE = /^\s*(create|alter|drop)\s/i;

/** PostgreSQL refuses a prepared statement whose result columns a migration changed (`select *` after ADD COLUMN). */
function isStalePlan(error: unknown): boolean {
  const e = error as { code?: string; message?: string } | null;
  return e?.code === '0A000' && /cached plan must not change result type/.test(e.message ?? '');
}

type FieldDescription = { name: string; dataTypeID: number; format: string };

/** What pg builds for a statement's rows from its RowDescription: a parser a column, and the empty row each row is copied from. */
type RowShape = { fields: FieldDescription[]; parsers: unknown; empty: unknown };

/** A statement that answers no rows (an insert or update without RETURNING): nothing to describe. */
const NO_ROWS = 'no rows';

const Query = pg.Query as unknown as new (
  text: string,
  values: unknown[],
  callback: (error: Error | null, result: pg.QueryResult) => void,
) => object;
const query = Query.prototype as unknown as ShapedQueryInternals;

/**
 * pg's Query for a statement kept prepared on the server, described once on each connection. pg
 * describes a statement's columns on every run: the server sends the row's description, pg decodes
 * the columns' names (4–5% of a create's main thread: pg-protocol's parseRowDescriptionMessage and
 * the names' strings) and builds their parsers and an empty row from them (Result.addFields, on a
 * null-prototype object that V8 keeps as a dictionary: some 15 µs for a request's 37 columns, 8% of
 * a GET's main thread). Here a connection describes a statement on its first run there and keeps
 * what pg built; later runs send Bind and Execute only, and their rows are built from the kept
 * shape. A shape is kept per connection because only there is it fixed: a statement keeps its
 * columns while its name and connection stay the same (PostgreSQL refuses it with a stale-plan
 * error after a schema change, and it gets a new name), but a statement prepared on another
 * connection after a migration may answer other columns under the same name.
 */
class ShapedQuery extends Query {
  /** The shapes of the statements this run's connection has described (its client's). */
  private readonly describedHere: DescribedShapes;
  /** Whether this run describes its statement, to remember the shape on its connection. */
  private describing = false;

  /**
   * Named after it is made: pg copies a config object given to a Query property by property
   * (cloneQueryConfig, 3% of a read's main thread), and takes a text as it is.
   */
  constructor(
    name: string,
    text: string,
    values: unknown[],
    callback: (error: Error | null, result: pg.QueryResult) => void,
    describedHere: DescribedShapes,
  ) {
    super(text, values, callback);
    (this as unknown as ShapedQueryInternals).name = name;
    this.describedHere = describedHere;
  }

  /** pg's prepare, without the Describe where this connection already knows the statement's shape. */
  prepare(connection: PgConnection): void {
    const self = this as unknown as ShapedQueryInternals;
    const shape = self.hasBeenParsed(connection) ? this.describedHere.get(self.name) : undefined;
    if (shape === undefined) {
      this.describing = true;
      query.prepare.call(this, connection);
      return;
    }
    if (shape !== NO_ROWS) this.adopt(shape);
    // The rest of pg's prepare (pg/lib/query.js) without its describe: the statement is parsed here already.
    try {
      connection.bind({ portal: '', statement: self.name, values: self.values, valueMapper: prepareValue });
    } catch (error) {
      // A value pg cannot send fails this query alone, as in pg's own prepare.
      connection.sync();
      self.handleError(error, connection);
      return;
    }
    connection.execute({ portal: '' });
    connection.sync();
  }

  handleRowDescription(message: { fields: FieldDescription[] }): void {
    query.handleRowDescription.call(this, message);
    const result = (this as unknown as ShapedQueryInternals)._result;
    this.remember({ fields: message.fields, parsers: result._parsers, empty: result._prebuiltEmptyResultObject });
  }

  handleCommandComplete(message: unknown, connection: PgConnection): void {
    // Described, and no RowDescription came: the statement answers no rows.
    if (this.describing) this.remember(NO_ROWS);
    query.handleCommandComplete.call(this, message, connection);
  }

  /** pg's handleRowDescription, with addFields' work taken from the shape. */
  private adopt(shape: RowShape): void {
    const self = this as unknown as ShapedQueryInternals;
    self._checkForMultirow();
    const result = self._result;
    result.fields = shape.fields;
    result._parsers = shape.parsers;
    result._prebuiltEmptyResultObject = shape.empty;
    self._accumulateRows = Boolean(self.callback) || self.listeners('row').length === 0;
  }

  private remember(shape: RowShape | typeof NO_ROWS): void {
    if (!this.describing) return;
    this.describing = false;
    this.describedHere.set((this as unknown as ShapedQueryInternals).name, shape);
  }
}

/** By statement name, the shape each statement a connection has described answers (NO_ROWS when none). */
type DescribedShapes = Map<string, RowShape | typeof NO_ROWS>;

/** The parts of pg's Connection (pg/lib/connection.js) that a run without a Describe writes to. */
type PgConnection = {
  bind(message: { portal: string; statement: string; values: unknown[]; valueMapper: unknown }): void;
  execute(message: { portal: string }): void;
  sync(): void;
};

/** How pg turns a value into what it sends for a parameter (its own prepare passes it to bind). */
const { prepareValue } = createRequire(import.meta.url)('pg/lib/utils.js') as {
  prepareValue: (value: unknown) => unknown;
};

/** The parts of pg's Query and Result (pg/lib/query.js, pg/lib/result.js) that ShapedQuery uses. */
type ShapedQueryInternals = {
  name: string;
  values: unknown[];
  prepare(connection: PgConnection): void;
  hasBeenParsed(connection: PgConnection): boolean;
  handleError(error: unknown, connection: PgConnection): void;
  handleCommandComplete(message: unknown, connection: PgConnection): void;
  callback: unknown;
  listeners(event: string): unknown[];
  handleRowDescription(message: { fields: FieldDescription[] }): void;
  _checkForMultirow(): void;
  _accumulateRows: boolean;
  _result: { fields: FieldDescription[]; _parsers: unknown; _prebuiltEmptyResultObject: unknown };
};

/**
 * Marks a statement whose caller does not wait for its answer (src/store/prepared.ts, `later`):
 * inside a transaction it is written behind the ones before it and answered with the next statement
 * that is awaited, in one write to the socket and one round trip.
 */
export const UNAWAITED = '/* unawaited */ ';

/** What an unawaited statement (and a BEGIN) answers at once: no rows, and no count to read. */
const NOT_AWAITED = Object.freeze({ command: 'UNAWAITED', rowCount: null, rows: [], fields: [] });

type Sent = Promise<pg.QueryResult>;

/**
 * pg's Client in pipeline mode, which writes each statement as soon as it is given rather than
 * after the answer to the one before. Every statement costs the service a socket write (a third of
 * an execution's CPU when each was its own) and the transaction a round trip; so inside a
 * transaction a BEGIN, and every statement marked UNAWAITED (inserts and counter updates whose
 * answer nobody reads), stay in the corked socket and go out with the next statement that is
 * awaited, or the COMMIT. PostgreSQL runs them in order as ever; an unawaited statement's error is
 * thrown by that next statement, which PostgreSQL has refused too (the transaction is aborted), so
 * the work fails where it would have failed a moment later, and rolls back.
 *
 * With `statements`, those kept prepared are sent named. A statement whose prepared form a
 * migration made stale (one run while an older version of the service still runs: `npm run cli --
 * migrate`, another machine) gets a new name; the call that found it is run again at once when it
 * was on its own, and fails (its transaction rolled back) when it was inside a transaction, which
 * PostgreSQL has aborted.
 */
export function pipeliningClient(statements: ServerPreparedStatements | null): typeof pg.Client {
  return class PipeliningClient extends pg.Client {
    private inTransaction = false;
    private corked = false;
    /** Statements written and not yet answered that nobody awaits, each settling to its error or null. */
    private held: Promise<unknown>[] = [];
    /** The statements this connection has described, each with the shape of its rows (ShapedQuery). */
    private readonly described: DescribedShapes = new Map();

    // Kysely calls query(text, values); anything else (a callback, a config object) goes straight through.
    override query(...args: any[]): any {
      const [text, values] = args;
      if (typeof text !== 'string' || args.length !== 2) return (super.query as (...a: any[]) => any)(...args);
      const keyword = text.length <= 8 ? text.toLowerCase() : '';
      if (keyword === 'begin' && !this.inTransaction) {
        this.inTransaction = true;
        this.hold(text, values);
        return Promise.resolve(NOT_AWAITED);
      }
      if (this.inTransaction && text.startsWith(UNAWAITED)) {
        this.hold(text, values);
        return Promise.resolve(NOT_AWAITED);
      }
      if (keyword === 'commit' || keyword === 'rollback') this.inTransaction = false;
      const answer = this.send(text, values);
      if (!this.corked) return answer;
      return this.answerAfterHeld(answer, keyword === 'rollback');
    }

    private hold(text: string, values: unknown[]): void {
      if (!this.corked) {
        this.connection.stream.cork();
        this.corked = true;
      }
      this.held.push(
        this.send(text, values).then(
          () => null,
          (error: unknown) => error,
        ),
      );
    }

    /** Writes what was held with `answer`'s statement; the first held error, if any, is the answer. */
    private async answerAfterHeld(answer: Sent, ignoreHeldErrors: boolean): Sent {
      const held = this.held;
      this.held = [];
      this.corked = false;
      this.connection.stream.uncork();
      const errors = (await Promise.all(held)).filter((error) => error !== null);
      if (errors.length === 0 || ignoreHeldErrors) return answer;
      answer.catch(() => undefined);
      throw errors[0];
    }

    private send(text: string, values: unknown[]): Sent {
      const query = (...a: any[]): Sent => (super.query as (...b: any[]) => Sent)(...a);
      // A schema change made here: statements prepared before it may return other columns now.
      if (statements && SCHEMA_CHANGE.test(text)) {
        return query(text, values).then((result) => {
          statements.renewAll();
          return result;
        });
      }
      const name = statements?.nameOf(text);
      if (name === undefined) return query(text, values);
      const prepared = (statementName: string): Sent =>
        new Promise((resolve, reject) => {
          query(
            new ShapedQuery(
              statementName,
              text,
              values,
              (error, result) => (error ? reject(error) : resolve(result)),
              this.described,
            ),
          );
        });
      return prepared(name).catch((error: unknown) => {
        if (!isStalePlan(error)) throw error;
        const renamed = statements!.renew(text, name);
        if (this.getTransactionStatus() !== 'I') throw error;
        return prepared(renamed);
      });
    }
  };
}

export type PostgresOptions = { url: string; schema?: string; poolSize?: number; preparedStatements?: boolean };

/** How each of the store's connections reaches the server: its pool's, and the one it listens on. */
export function clientConfig(options: PostgresOptions): pg.ClientConfig {
  return {
    connectionString: options.url,
    options: options.schema ? `-c search_path=${options.schema}` : undefined,
  };
}

/** The store's pool of connections, each a `client` (pipeliningClient) in pipeline mode. */
export function postgresPool(options: PostgresOptions, client: typeof pg.Client): pg.Pool {
  return new pg.Pool({
    ...clientConfig(options),
    max: options.poolSize ?? 10,
    Client: client,
    pipeline: true,
  } as pg.PoolConfig);
}

/**
 * PostgreSQL through Kysely with the store's adapter. Kysely's own introspector reads every column
 * of every schema in the database and resolves each by name, so any DROP COLUMN or DROP SCHEMA
 * committed meanwhile elsewhere in the database (another application, another test's schema)
 * fails our migrator's "does the migration table exist" check. The migrator only needs our
 * schema's table names, so that is all this one lists.
 */
export class StorePostgresDialect extends PostgresDialect {
  private readonly adapter: DialectAdapter;
  private readonly beforeDestroy: () => Promise<void>;

  /** `beforeDestroy` runs when the store is closed, before the pool ends (`db.destroy()`). */
  constructor(pool: pg.Pool, adapter: DialectAdapter, beforeDestroy: () => Promise<void>) {
    super({ pool });
    this.adapter = adapter;
    this.beforeDestroy = beforeDestroy;
  }

  override createAdapter(): DialectAdapter {
    return this.adapter;
  }

  override createDriver(): Driver {
    const driver = super.createDriver();
    const destroy = driver.destroy.bind(driver);
    driver.destroy = async () => {
      await this.beforeDestroy();
      await destroy();
    };
    return driver;
  }

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
