import type { Kysely } from 'kysely';
import { engineOf } from '../db.ts';

// PostgreSQL writes a change's audit record here, in the change's transaction, and numbers and
// chains it into audit_events shortly after the commit, many records at a time (docs/audit.md,
// "Locking"): a change no longer holds its merchant's audit head through its commit. `n` numbers the
// rows in the order they were written, the last statement before each COMMIT: a change made after
// another had committed is chained after it. SQLite chains in its group commit and leaves this
// table empty.
export async function up(db: Kysely<any>): Promise<void> {
  await db.schema
    .createTable('audit_pending')
    .addColumn('user_id', 'text', (c) => c.notNull())
    .addColumn('n', engineOf(db) === 'postgres' ? 'bigserial' : 'integer')
    .addColumn('id', 'text', (c) => c.notNull())
    .addColumn('at', 'bigint', (c) => c.notNull())
    .addColumn('mode', 'text')
    .addColumn('actor_kind', 'text', (c) => c.notNull())
    .addColumn('actor_id', 'text', (c) => c.notNull())
    .addColumn('action', 'text', (c) => c.notNull())
    .addColumn('object_id', 'text')
    .addColumn('ip', 'text')
    .addColumn('user_agent', 'text')
    .addColumn('request_id', 'text')
    .addColumn('summary', 'text', (c) => c.notNull())
    .addPrimaryKeyConstraint('audit_pending_pkey', ['user_id', 'n'])
    .execute();
}
