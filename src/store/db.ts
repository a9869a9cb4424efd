import { PostgresAdapter, sql, type Kysely, type RawBuilder, type SelectQueryBuilder } from 'kysely';
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
