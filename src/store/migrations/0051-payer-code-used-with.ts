import type { Kysely } from 'kysely';

// The browser that used a payer's sign-in code, as the SHA-256 of its pre-session token: a second
// post of the same form from that browser (a double click) signs it in again rather than answer
// that the code was used (docs/payer.md, "Signing in").
export async function up(db: Kysely<any>): Promise<void> {
  await db.schema.alterTable('payer_codes').addColumn('used_with', 'text').execute();
}
