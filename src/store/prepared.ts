import type { Compilable, CompiledQuery, Insertable, Kysely, QueryResult } from 'kysely';
import type { Database } from './tables.ts';
import { engineOf, plannedAtEachCall, type Engine } from './db.ts';
import { storeOfOrNull, type Store } from './store.ts';
import { andThen, type NowOrLater } from '../shared/now-or-later.ts';
import { UNAWAITED } from './postgres/dialect.ts';

// Queries built and compiled once, then run with new values.
//
// Kysely builds an immutable tree for every query and compiles it to SQL on every call. On the
// paths that run thousands of times a second (a subscription charge is some twenty statements)
// that was a fifth of the CPU. A prepared query is built once per SQL dialect with a placeholder
// value for each argument, compiled, and afterwards only its parameter list is filled in.
//
// An argument is a whole value in a comparison, a SET or an inserted column, never a list (the SQL
// of `in (...)` depends on the list's length) and never SQL text.
//
// On PostgreSQL the same statements are also prepared on the server (Store.keepPreparedOnServer):
// each connection parses and plans one once, and afterwards only binds and executes it. Those that
// take a list of values (inJsonArray) are planned at each call instead, with that call's values.

type Db = Kysely<Database>;
/** Where a prepared query runs: the service's database, a transaction, or the sandbox bank's. */
type Runner = Kysely<any>;
/** `keepOnServer`: PostgreSQL keeps it prepared, unless it is planned at each call (inJsonArray). */
type Plan = { query: CompiledQuery; slots: Array<string | null>; keepOnServer: boolean };

const PLACEHOLDER = '\u0000tono-arg:';

/** Reads the argument `name` at run time; only valid inside a prepared query's builder. */
export type Arg<Args> = <K extends keyof Args & string>(name: K) => Args[K];

function planFor(
  db: Runner,
  plans: Map<Engine, Plan>,
  build: (db: Db, arg: Arg<any>) => Compilable<unknown>,
  unawaited = false,
): Plan {
  // Plans are per SQL dialect.
  const engine = engineOf(db);
  let plan = plans.get(engine);
  if (!plan) {
    let query = build(db, ((name: string) => `${PLACEHOLDER}${name}`) as Arg<any>).compile();
    if (unawaited && engine === 'postgres') query = { ...query, sql: `${UNAWAITED}${query.sql}` };
    const slots = query.parameters.map((value) =>
      typeof value === 'string' && value.startsWith(PLACEHOLDER) ? value.slice(PLACEHOLDER.length) : null,
    );
    plan = { query, slots, keepOnServer: engine === 'postgres' && !plannedAtEachCall(query.sql) };
    plans.set(engine, plan);
  }
  // Each PostgreSQL store keeps its own list of the statements it has prepared on the server.
  if (plan.keepOnServer) storeOfOrNull(db)?.keepPreparedOnServer(plan.query.sql);
  return plan;
}

function bind(plan: Plan, args: Record<string, unknown>): CompiledQuery {
  const parameters = plan.query.parameters.map((value, i) => {
    const name = plan.slots[i];
    if (name === null) return value;
    if (!(name in args)) throw new Error(`prepared query: no value for argument ${name}`);
    return args[name];
  });
  return { ...plan.query, parameters };
}

/**
 * The rows of a query run straight on a SQLite transaction's unit of work (Store.runInTransaction),
 * or null where that is not the way; the statement's error comes as a rejection, never a throw.
 */
function inTransactionNow<Row>(
  store: Store | null,
  db: Runner,
  query: CompiledQuery,
): NowOrLater<QueryResult<Row>> | null {
  if (!store || !db.isTransaction) return null;
  try {
    return store.runInTransaction(db, query.sql, query.parameters) as QueryResult<Row> | null;
  } catch (error) {
    return Promise.reject(error);
  }
}

/** Runs a compiled query: straight on the SQLite transaction's unit when there is one, else through Kysely. */
function execute<Row>(db: Runner, query: CompiledQuery): Promise<QueryResult<Row>> {
  const now = inTransactionNow<Row>(storeOfOrNull(db), db, query);
  if (now) return Promise.resolve(now);
  try {
    return db.executeQuery<Row>(query);
  } catch (error) {
    // Kysely refuses a transaction used after its end by throwing at once.
    return Promise.reject(error);
  }
}

export type PreparedQuery<Args, Row> = {
  /** All rows (a select, or a write with RETURNING). */
  all(db: Runner, args: Args): Promise<Row[]>;
  /** The first row, if any. */
  first(db: Runner, args: Args): Promise<Row | undefined>;
  /** Rows affected (an update or a delete), or inserted. */
  run(db: Runner, args: Args): Promise<QueryResult<Row>>;
  /**
   * A write whose answer the caller does not need: inside a PostgreSQL transaction it goes to the
   * server with the next statement that is awaited (src/store/postgres/dialect.ts, UNAWAITED), and
   * its error, if any, is thrown there. Elsewhere the same as `run`.
   */
  later(db: Runner, args: Args): Promise<void>;
  /**
   * The first row, as a value when the database answered at once (SQLite, outside a unit of work,
   * with what it read already durable), else as a promise. For the hottest reads: an answer in hand
   * finishes the request without a turn of the event loop per step.
   */
  firstNow(db: Runner, args: Args): NowOrLater<Row | undefined>;
  /**
   * The first row of a plain read that needs none of the rows its transaction wrote and takes no
   * lock. Inside a PostgreSQL transaction it goes with the other reads of the moment, on the
   * connections kept for them (Store.readNow), rather than as one of the transaction's own round
   * trips; under READ COMMITTED a read inside the transaction would see nothing more. Elsewhere
   * (SQLite, whose transaction holds the one connection) the same as `first`.
   */
  firstCommitted(db: Runner, args: Args): Promise<Row | undefined>;
};

/** A query built by `build`, with `arg(name)` wherever a value changes from call to call. */
export function prepared<Args extends Record<string, unknown>, Row = unknown>(
  build: (db: Db, arg: Arg<Args>) => Compilable<Row>,
): PreparedQuery<Args, Row> {
  const plans = new Map<Engine, Plan>();
  const unawaitedPlans = new Map<Engine, Plan>();
  const run = (db: Runner, args: Args) => execute<Row>(db, bind(planFor(db, plans, build as any), args));
  // A read outside a transaction skips Kysely's connection handling (Store.readNow). On SQLite it
  // runs at once when the connection is free: half the cost of a key lookup, and the rows come back
  // in hand when nothing they show is still waiting for its fsync. On PostgreSQL it goes out with
  // the other reads of the moment in one write. Inside a SQLite transaction the rows are in hand
  // too: the transaction's caller waits for durability at its end. `beside`: a PostgreSQL
  // transaction's read of committed rows goes out with the reads of the moment too (firstCommitted).
  const rowsNowOrLater = (db: Runner, args: Args, beside = false): NowOrLater<Row[]> => {
    const query = bind(planFor(db, plans, build as any), args);
    const store = storeOfOrNull(db);
    const inTransaction = inTransactionNow<Row>(store, db, query);
    if (inTransaction) return andThen(inTransaction, (result) => result.rows);
    const readNow = !db.isTransaction || (beside && store?.engine === 'postgres');
    const rows = readNow ? (store?.readNow(query.sql, query.parameters) as NowOrLater<Row[]> | null) : null;
    return rows ?? db.executeQuery<Row>(query).then((result) => result.rows);
  };
  return {
    run,
    later: async (db, args) => {
      await execute<Row>(db, bind(planFor(db, unawaitedPlans, build as any, true), args));
    },
    all: async (db, args) => rowsNowOrLater(db, args),
    first: async (db, args) => (await rowsNowOrLater(db, args))[0],
    firstNow: (db, args) => andThen(rowsNowOrLater(db, args), (rows) => rows[0]),
    firstCommitted: async (db, args) => (await rowsNowOrLater(db, args, true))[0],
  };
}

const shapePlans = new Map<string, Map<Engine, Plan>>();

function plansOfShape(shape: string): Map<Engine, Plan> {
  let plans = shapePlans.get(shape);
  if (!plans) {
    plans = new Map();
    shapePlans.set(shape, plans);
  }
  return plans;
}

/**
 * Inserts a row, prepared per table and set of columns. `ignoreConflictOn` names the unique
 * column(s) whose clash makes the insert a no-op: see `inserted`.
 */
export async function insertRow<T extends keyof Database & string>(
  db: Runner,
  table: T,
  row: Insertable<Database[T]>,
  ignoreConflictOn?: string | readonly string[],
): Promise<QueryResult<never>> {
  return insertPrepared(db, table, row, ignoreConflictOn, false);
}

/**
 * Inserts a row as `insertRow` does, without waiting for PostgreSQL's answer inside a transaction
 * (PreparedQuery.later): for rows written beside a change (its event, deliveries, jobs) whose
 * insert can only fail with the whole transaction.
 */
export async function insertLater<T extends keyof Database & string>(
  db: Runner,
  table: T,
  row: Insertable<Database[T]>,
  ignoreConflictOn?: string | readonly string[],
): Promise<void> {
  await insertPrepared(db, table, row, ignoreConflictOn, true);
}

function insertPrepared<T extends keyof Database & string>(
  db: Runner,
  table: T,
  row: Insertable<Database[T]>,
  ignoreConflictOn: string | readonly string[] | undefined,
  unawaited: boolean,
): Promise<QueryResult<never>> {
  // As Kysely does, a column given as undefined is left out (it takes its default).
  const columns = Object.keys(row).filter((column) => (row as Record<string, unknown>)[column] !== undefined);
  const conflict =
    ignoreConflictOn === undefined
      ? []
      : typeof ignoreConflictOn === 'string'
        ? [ignoreConflictOn]
        : [...ignoreConflictOn];
  const shape = `${unawaited ? 'later ' : ''}insert ${table}(${columns.join(',')}) ${conflict.join(',')}`;
  const plan = planFor(
    db,
    plansOfShape(shape),
    (base, arg) => {
      const insert = base
        .insertInto(table)
        .values(Object.fromEntries(columns.map((column) => [column, arg(column)])) as any);
      return conflict.length > 0 ? insert.onConflict((c) => c.columns(conflict as any).doNothing()) : insert;
    },
    unawaited,
  );
  return execute<never>(db, bind(plan, row as Record<string, unknown>));
}

type TableWithId = { [T in keyof Database & string]: Database[T] extends { id: string } ? T : never }[keyof Database &
  string];

/**
 * Sets the given columns of the row with this id, prepared per table and set of columns. With
 * `onlyIf`, only while the row still holds those values (then `numAffectedRows` says whether it did).
 */
export async function updateById<T extends TableWithId>(
  db: Runner,
  table: T,
  id: string,
  changes: Partial<Database[T]>,
  onlyIf: Partial<Database[T]> = {},
): Promise<QueryResult<never>> {
  return updatePrepared(db, table, id, changes, onlyIf, false);
}

/**
 * Sets columns as `updateById` does, without waiting for PostgreSQL's answer inside a transaction
 * (PreparedQuery.later): for an update whose count nobody reads and which can only fail with the
 * whole transaction.
 */
export async function updateByIdLater<T extends TableWithId>(
  db: Runner,
  table: T,
  id: string,
  changes: Partial<Database[T]>,
): Promise<void> {
  await updatePrepared(db, table, id, changes, {}, true);
}

function updatePrepared<T extends TableWithId>(
  db: Runner,
  table: T,
  id: string,
  changes: Partial<Database[T]>,
  onlyIf: Partial<Database[T]>,
  unawaited: boolean,
): Promise<QueryResult<never>> {
  const columns = Object.keys(changes).filter((column) => (changes as Record<string, unknown>)[column] !== undefined);
  if (columns.length === 0) return Promise.resolve({ rows: [] });
  const guards = Object.keys(onlyIf);
  const shape = `${unawaited ? 'later ' : ''}update ${table} ${columns.join(',')} if ${guards.join(',')}`;
  const plan = planFor(
    db,
    plansOfShape(shape),
    (base, arg) => {
      let update = base
        .updateTable(table as any)
        .set(Object.fromEntries(columns.map((column) => [column, arg(column)])) as any)
        .where('id' as any, '=', arg('where id'));
      for (const guard of guards) update = update.where(guard as any, '=', arg(`where ${guard}`));
      return update;
    },
    unawaited,
  );
  const args: Record<string, unknown> = { ...(changes as Record<string, unknown>), 'where id': id };
  for (const guard of guards) args[`where ${guard}`] = (onlyIf as Record<string, unknown>)[guard];
  return execute<never>(db, bind(plan, args));
}

const queriesOfShape = new Map<string, PreparedQuery<any, any>>();

/**
 * A prepared query per shape (`shape` names what `build` makes of it: a table, a set of columns, a
 * guard), built the first time that shape is asked for: for a statement whose columns vary from
 * call to call, as insertRow's and updateById's do.
 */
export function preparedOfShape<Args extends Record<string, unknown>, Row = unknown>(
  shape: string,
  build: (db: Db, arg: Arg<Args>) => Compilable<Row>,
): PreparedQuery<Args, Row> {
  let query = queriesOfShape.get(shape);
  if (!query) {
    query = prepared(build);
    queriesOfShape.set(shape, query);
  }
  return query;
}

/** Whether an insert with `ignoreConflictOn` wrote its row. */
export function inserted(result: QueryResult<unknown>): boolean {
  return Number(result.numAffectedRows ?? 0) > 0;
}
