import { PostgresAdapter, sql, type Kysely, type QueryCreator, type RawBuilder, type SelectQueryBuilder } from 'kysely';
import type { Database } from './tables.ts';

// The query builder's type, and the few places where SQL differs between the engines. The store
// itself (transactions, durability, the engines' drivers) is src/store/store.ts.

export type Db = Kysely<Database>;
export type Engine = 'sqlite' | 'postgres';

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

/** The SQLSTATE of a guarded write that wrote nothing (migration 0044, fail_unless_written). */
const NOT_WRITTEN = 'TN001';

/**
 * PostgreSQL: a statement that runs the write `written` (an update with RETURNING) and fails, and
 * with it its transaction, when the write wrote no row (or none that `counted` keeps). A guarded
 * write can then go without waiting for its answer, with the statements that assume it after it.
 */
export function failUnlessWritten<QB extends SelectQueryBuilder<any, any, any>>(
  db: Kysely<any>,
  written: (creator: QueryCreator<any>) => any,
  counted: (rows: SelectQueryBuilder<any, 'written', any>) => QB = (rows) => rows as QB,
) {
  return counted(db.with('written', written).selectFrom('written')).select(
    sql<number>`fail_unless_written(count(*))`.as('written'),
  );
}

/** The error of a guarded write that wrote nothing: failUnlessWritten's on PostgreSQL, made here elsewhere. */
export function notWritten(what: string): Error {
  return Object.assign(new Error(`the guarded row was not written: ${what}`), { code: NOT_WRITTEN });
}

/** Whether a transaction failed because a guarded write wrote nothing (failUnlessWritten, notWritten). */
export function isNotWritten(error: unknown): boolean {
  return (error as { code?: unknown } | null)?.code === NOT_WRITTEN;
}

/** Whether a statement failed on a unique index or constraint, on either engine. */
export function isUniqueViolation(error: unknown): boolean {
  const e = error as { code?: unknown; message?: unknown } | null;
  return e?.code === '23505' || /UNIQUE constraint failed/i.test(String(e?.message ?? ''));
}

/** FOR UPDATE SKIP LOCKED where several processes may claim the same rows (PostgreSQL). */
export function lockSkipLocked<QB extends SelectQueryBuilder<any, any, any>>(db: Kysely<any>, query: QB): QB {
  return engineOf(db) === 'postgres' ? (query.forUpdate().skipLocked() as QB) : query;
}

const VALUES_OF_JSON_ARRAY = 'any(array(select jsonb_array_elements_text';

/**
 * `column in (…)` with the values as one JSON array (`JSON.stringify(ids)`): the statement's text is
 * the same for any number of values, so it can be a prepared query (store/prepared.ts), where an
 * `in (?, ?, …)` list is compiled, and on SQLite prepared, again for every length it comes in.
 *
 * On PostgreSQL the values become an array compared with `= any`, which the planner takes for about
 * ten values and looks up in the column's index; as `in (select …)` it counted a hundred and joined
 * them to a scan of the whole table up to some ten thousand rows. Such a statement is planned at
 * every call (`plannedAtEachCall`), not kept prepared: its tables are the ones that grow from
 * nothing (deliveries, events, jobs), and a plan made while one was small scanned it whole, every
 * batch, until its next ANALYZE (docs/performance.md, "What a call costs on PostgreSQL").
 */
export function inJsonArray(db: Kysely<any>, column: string, valuesJson: string): RawBuilder<boolean> {
  return engineOf(db) === 'postgres'
    ? sql<boolean>`${sql.ref(column)} = ${sql.raw(VALUES_OF_JSON_ARRAY)}(cast(${valuesJson} as jsonb))))`
    : sql<boolean>`${sql.ref(column)} in (select value from json_each(${valuesJson}))`;
}

/** Whether PostgreSQL should plan this statement with each call's values rather than keep one plan (inJsonArray). */
export function plannedAtEachCall(statement: string): boolean {
  return statement.includes(VALUES_OF_JSON_ARRAY);
}

/**
 * An id made in SQL, one a row of a statement (PostgreSQL): idSeed's `head` (the prefix and the
 * time), then 16 characters of md5(salt, distinct), with `distinct` different on every row.
 */
export function idInSql(head: unknown, salt: unknown, distinct: RawBuilder<unknown>): RawBuilder<string> {
  return sql<string>`cast(${head} as text) || upper(left(md5(cast(${salt} as text) || ${distinct}), 16))`;
}

/**
 * Locks the rows `query` selects until the transaction ends, without reading them out
 * (PostgreSQL: FOR UPDATE in a count). Nothing on SQLite, whose writers take turns already.
 */
export async function holdRows(db: Kysely<any>, query: SelectQueryBuilder<any, any, any>): Promise<void> {
  if (engineOf(db) !== 'postgres') return;
  await db.selectFrom(query.forUpdate().as('held')).select(sql<number>`count(*)`.as('n')).execute();
}
