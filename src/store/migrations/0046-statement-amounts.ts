import { sql, type Kysely } from 'kysely';
import { engineOf } from '../db.ts';

// A bank statement is the bank's record and may hold a line larger than any payment Tono takes: a
// transfer between the merchant's own accounts, a loan drawn down. PostgreSQL's `integer` stops at
// 21,474,836.47 dollars, so such a line failed the whole import; SQLite's integer is already 64-bit.
export async function up(db: Kysely<any>): Promise<void> {
  if (engineOf(db) !== 'postgres') return;
  await sql`alter table statement_lines alter column amount_cents type bigint`.execute(db);
}
