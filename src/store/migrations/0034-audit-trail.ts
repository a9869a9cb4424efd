import type { Kysely } from 'kysely';

// The audit trail (src/modules/audit, docs/audit.md): every change to a merchant's data, written in
// the change's transaction, each record hash-chained to the merchant's previous one. The head row
// per merchant is what writers serialise on and what the chain's last record must match.
export async function up(db: Kysely<any>): Promise<void> {
  await db.schema
    .createTable('audit_events')
    .addColumn('id', 'text', (c) => c.primaryKey())
    .addColumn('user_id', 'text', (c) => c.notNull())
    .addColumn('seq', 'bigint', (c) => c.notNull())
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
    .addColumn('prev_hash', 'text', (c) => c.notNull())
    .addColumn('hash', 'text', (c) => c.notNull())
    .addUniqueConstraint('audit_events_user_seq', ['user_id', 'seq'])
    .execute();
  // The list, newest first, reads the unique (user_id, seq); an object's history (on every object's
  // page) and a member's or key's changes have their own. Every index is written by every change,
  // so an action filter reads the merchant's records newest first instead (docs/audit.md).
  await db.schema
    .createIndex('audit_events_object')
    .on('audit_events')
    .columns(['user_id', 'object_id', 'seq'])
    .execute();
  await db.schema
    .createIndex('audit_events_actor')
    .on('audit_events')
    .columns(['user_id', 'actor_id', 'seq'])
    .execute();
  await db.schema
    .createTable('audit_heads')
    .addColumn('user_id', 'text', (c) => c.primaryKey())
    .addColumn('seq', 'bigint', (c) => c.notNull())
    .addColumn('prev_hash', 'text', (c) => c.notNull())
    .addColumn('hash', 'text', (c) => c.notNull())
    .execute();
}
