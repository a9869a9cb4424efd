import { sql, type Kysely } from 'kysely';
import type { Mode } from '../shared/mode.ts';
import { holdRows } from './db.ts';
import type { Database } from './tables.ts';

// The rows of one table that belong to one merchant in one mode (its `user_id` and `mode` columns),
// counted, held and deleted by table name, as `insertRow` and `updateById` write by table name.
// What deletes a merchant's test data (src/modules/manifest.ts, TestData) uses them: each module on
// its own tables only.

export type RowOwner = { userId: string; mode: Mode };

/** The tables whose rows carry their merchant and mode. */
export type OwnedTable = {
  [T in keyof Database]: Database[T] extends { user_id: unknown; mode: unknown } ? T : never;
}[keyof Database];

function ownedRows(db: Kysely<any>, table: OwnedTable, owner: RowOwner) {
  return db.selectFrom(table).where('user_id', '=', owner.userId).where('mode', '=', owner.mode);
}

/** How many rows of `table` the owner has. */
export async function countOwned(db: Kysely<any>, table: OwnedTable, owner: RowOwner): Promise<number> {
  const row = await ownedRows(db, table, owner).select(sql<number | string>`count(*)`.as('n')).executeTakeFirst();
  return Number(row?.n ?? 0);
}

/** Locks the owner's rows of `table` until the transaction ends (PostgreSQL; holdRows). */
export async function holdOwned(db: Kysely<any>, table: OwnedTable, owner: RowOwner): Promise<void> {
  await holdRows(db, ownedRows(db, table, owner).select('user_id'));
}

/** Deletes the owner's rows of `table`; how many there were. */
export async function deleteOwned(db: Kysely<any>, table: OwnedTable, owner: RowOwner): Promise<number> {
  const result = await db
    .deleteFrom(table)
    .where('user_id', '=', owner.userId)
    .where('mode', '=', owner.mode)
    .executeTakeFirst();
  return Number(result.numDeletedRows);
}

/** The ids of the owner's rows of `table`, as a subquery: `where(column, 'in', idsOfOwned(…))`. */
export function idsOfOwned(db: Kysely<any>, table: OwnedTable, owner: RowOwner) {
  return ownedRows(db, table, owner).select('id');
}

/** The ids of some rows, as a subquery (idsOfOwned). */
export type IdsQuery = ReturnType<typeof idsOfOwned>;
