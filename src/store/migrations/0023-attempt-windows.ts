import type { Kysely } from 'kysely';

// Attempt limits shared by every process on the database (src/store/attempts.ts): sign-in, reset
// links and payer codes take their attempts here before the check they limit.
export async function up(db: Kysely<any>): Promise<void> {
  await db.schema
    .createTable('attempt_windows')
    .addColumn('scope', 'text', (c) => c.notNull())
    .addColumn('key_hash', 'text', (c) => c.notNull())
    .addColumn('window_start', 'bigint', (c) => c.notNull())
    .addColumn('attempts', 'integer', (c) => c.notNull())
    .addPrimaryKeyConstraint('attempt_windows_pk', ['scope', 'key_hash'])
    .execute();
  await db.schema
    .createIndex('attempt_windows_ended')
    .on('attempt_windows')
    .columns(['scope', 'window_start'])
    .execute();
}
