import type { Mode } from '../../shared/mode.ts';
import type { Db } from '../../store/db.ts';
import { countOwned, deleteOwned, holdOwned } from '../../store/owned-rows.ts';
import type { StatementLineRow, StatementMatchRow, StatementRow } from './reconciliation.tables.ts';

export type Owner = { userId: string; mode: Mode };

const ownStatements = (db: Db, owner: Owner) =>
  db.selectFrom('statements').where('user_id', '=', owner.userId).where('mode', '=', owner.mode);
const ownLines = (db: Db, owner: Owner) =>
  db.selectFrom('statement_lines').where('user_id', '=', owner.userId).where('mode', '=', owner.mode);

/** Inserts the statement unless the same file is stored already; whether it was inserted. */
export async function insertStatementIfNew(db: Db, row: StatementRow): Promise<boolean> {
  const done = await db
    .insertInto('statements')
    .values(row)
    .onConflict((oc) => oc.columns(['user_id', 'mode', 'file_sha256']).doNothing())
    .returning('id')
    .executeTakeFirst();
  return done !== undefined;
}

export async function findStatementByFile(db: Db, owner: Owner, sha256: string): Promise<StatementRow | undefined> {
  return ownStatements(db, owner).selectAll().where('file_sha256', '=', sha256).executeTakeFirst();
}

export async function findStatement(db: Db, owner: Owner, id: string): Promise<StatementRow | undefined> {
  return ownStatements(db, owner).selectAll().where('id', '=', id).executeTakeFirst();
}

export async function updateStatementCounts(
  db: Db,
  id: string,
  counts: { added_count: number; matched_count: number },
): Promise<void> {
  await db.updateTable('statements').set(counts).where('id', '=', id).execute();
}

/** The owner's statements, newest first, one more than `limit`. */
export async function listStatements(
  db: Db,
  owner: Owner,
  page: { limit: number; starting_after?: string },
): Promise<StatementRow[]> {
  let query = ownStatements(db, owner).selectAll();
  if (page.starting_after) query = query.where('id', '<', page.starting_after);
  return query
    .orderBy('id', 'desc')
    .limit(page.limit + 1)
    .execute();
}

/**
 * Inserts the lines not stored yet (the same key and occurrence is the same line) and returns
 * those it inserted: a line another file brought, or a concurrent import, is skipped.
 */
export async function insertNewLines(db: Db, rows: StatementLineRow[]): Promise<StatementLineRow[]> {
  const added: StatementLineRow[] = [];
  for (const row of rows) {
    const done = await db
      .insertInto('statement_lines')
      .values(row)
      .onConflict((oc) => oc.columns(['user_id', 'mode', 'line_key', 'occurrence']).doNothing())
      .returning('id')
      .executeTakeFirst();
    if (done) added.push(row);
  }
  return added;
}

export async function findLine(db: Db, owner: Owner, id: string): Promise<StatementLineRow | undefined> {
  return ownLines(db, owner).selectAll().where('id', '=', id).executeTakeFirst();
}

export async function setAutoMatch(db: Db, id: string, on: boolean): Promise<void> {
  await db
    .updateTable('statement_lines')
    .set({ auto_match: on ? 1 : 0 })
    .where('id', '=', id)
    .execute();
}

export type LineFilters = {
  limit: number;
  starting_after?: string;
  statement_id?: string;
  from?: string;
  to?: string;
  /** credit: money in; debit: money out */
  direction?: 'credit' | 'debit';
  matched?: boolean;
};

/** The owner's lines, newest first (as imported), one more than `limit`. */
export async function listLines(db: Db, owner: Owner, filters: LineFilters): Promise<StatementLineRow[]> {
  let query = ownLines(db, owner).selectAll();
  if (filters.statement_id) query = query.where('statement_id', '=', filters.statement_id);
  if (filters.from) query = query.where('posted_on', '>=', filters.from);
  if (filters.to) query = query.where('posted_on', '<=', filters.to);
  if (filters.direction === 'credit') query = query.where('amount_cents', '>', 0);
  if (filters.direction === 'debit') query = query.where('amount_cents', '<', 0);
  if (filters.matched !== undefined) {
    const matchedIds = db.selectFrom('statement_matches').select('line_id');
    query = filters.matched ? query.where('id', 'in', matchedIds) : query.where('id', 'not in', matchedIds);
  }
  if (filters.starting_after) query = query.where('id', '<', filters.starting_after);
  return query
    .orderBy('id', 'desc')
    .limit(filters.limit + 1)
    .execute();
}

/** Lines of the owner in a date range that have no match and may be matched automatically. */
export async function openLinesBetween(db: Db, owner: Owner, from: string, to: string): Promise<StatementLineRow[]> {
  return ownLines(db, owner)
    .selectAll()
    .where('posted_on', '>=', from)
    .where('posted_on', '<=', to)
    .where('auto_match', '=', 1)
    .where('id', 'not in', db.selectFrom('statement_matches').select('line_id'))
    .orderBy('posted_on')
    .orderBy('id')
    .execute();
}

/** Inserts a match unless its line or its payment/refund is matched already; whether it was. */
export async function insertMatchIfFree(db: Db, row: StatementMatchRow): Promise<boolean> {
  const taken = await db
    .selectFrom('statement_matches')
    .select('id')
    .where((eb) => eb.or([eb('line_id', '=', row.line_id), eb('target_id', '=', row.target_id)]))
    .executeTakeFirst();
  if (taken) return false;
  const done = await db
    .insertInto('statement_matches')
    .values(row)
    .onConflict((oc) => oc.doNothing())
    .returning('id')
    .executeTakeFirst();
  return done !== undefined;
}

export async function matchOfLine(db: Db, lineId: string): Promise<StatementMatchRow | undefined> {
  return db.selectFrom('statement_matches').selectAll().where('line_id', '=', lineId).executeTakeFirst();
}

export async function matchOfTarget(db: Db, targetId: string): Promise<StatementMatchRow | undefined> {
  return db.selectFrom('statement_matches').selectAll().where('target_id', '=', targetId).executeTakeFirst();
}

export async function deleteMatch(db: Db, id: string): Promise<boolean> {
  const result = await db.deleteFrom('statement_matches').where('id', '=', id).executeTakeFirst();
  return Number(result.numDeletedRows) > 0;
}

export async function matchesOfLines(db: Db, lineIds: readonly string[]): Promise<StatementMatchRow[]> {
  if (lineIds.length === 0) return [];
  return db.selectFrom('statement_matches').selectAll().where('line_id', 'in', lineIds).execute();
}

export async function matchesOfTargets(db: Db, targetIds: readonly string[]): Promise<StatementMatchRow[]> {
  if (targetIds.length === 0) return [];
  return db.selectFrom('statement_matches').selectAll().where('target_id', 'in', targetIds).execute();
}

/** The owner's lines dated in [from, to] with their match, if any (the reconciliation view). */
export async function linesWithMatchesBetween(
  db: Db,
  owner: Owner,
  from: string,
  to: string,
  limit: number,
): Promise<
  (StatementLineRow & {
    match_id: string | null;
    kind: string | null;
    target_id: string | null;
    method: string | null;
    matched_by: string | null;
    matched_at: number | null;
  })[]
> {
  const rows = await db
    .selectFrom('statement_lines as l')
    .leftJoin('statement_matches as m', 'm.line_id', 'l.id')
    .selectAll('l')
    .select([
      'm.id as match_id',
      'm.kind as kind',
      'm.target_id as target_id',
      'm.method as method',
      'm.matched_by as matched_by',
      'm.created_at as matched_at',
    ])
    .where('l.user_id', '=', owner.userId)
    .where('l.mode', '=', owner.mode)
    .where('l.posted_on', '>=', from)
    .where('l.posted_on', '<=', to)
    .orderBy('l.posted_on')
    .orderBy('l.id')
    .limit(limit)
    .execute();
  return rows.map((row) => ({ ...row, matched_at: row.matched_at === null ? null : Number(row.matched_at) }));
}

const TABLES = ['statement_matches', 'statement_lines', 'statements'] as const;

export async function countTestRows(db: Db, userId: string): Promise<number> {
  return countOwned(db, 'statements', { userId, mode: 'test' });
}

export async function holdTestRows(db: Db, userId: string): Promise<void> {
  for (const table of TABLES) await holdOwned(db, table, { userId, mode: 'test' });
}

/** Deletes the test mode's matches, lines and statements (children first); how many statements. */
export async function deleteTestRows(db: Db, userId: string): Promise<number> {
  let statements = 0;
  for (const table of TABLES) {
    const count = await deleteOwned(db, table, { userId, mode: 'test' });
    if (table === 'statements') statements = count;
  }
  return statements;
}
