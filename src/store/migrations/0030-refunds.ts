import { sql, type Kysely } from 'kysely';

// Refunds (docs/refunds.md). A payment counts what is refunded of it (`refunded_cents`), moved under
// the payment's row lock in the transaction that creates or fails a refund, so partial refunds never
// add up to more than the payment. A refund authority is the merchant's enduring consent over its
// own account; at most one is active per merchant and mode. It counts what its refunds use of its
// period limit on its own row (the window and the sum), moved under that row's lock, so checking a
// refund never reads the refunds already made.
export async function up(db: Kysely<any>): Promise<void> {
  await db.schema
    .alterTable('payments')
    .addColumn('refunded_cents', 'integer', (c) => c.notNull().defaultTo(0))
    .execute();

  await db.schema
    .createTable('refund_authorities')
    .addColumn('id', 'text', (c) => c.primaryKey())
    .addColumn('user_id', 'text', (c) => c.notNull().references('users.id'))
    .addColumn('mode', 'text', (c) => c.notNull())
    .addColumn('status', 'text', (c) => c.notNull())
    .addColumn('bank_id', 'text', (c) => c.notNull())
    .addColumn('bank_account_id', 'text')
    .addColumn('account_number', 'text', (c) => c.notNull())
    .addColumn('account_name', 'text', (c) => c.notNull())
    .addColumn('period', 'text', (c) => c.notNull())
    .addColumn('max_per_refund_cents', 'integer', (c) => c.notNull())
    .addColumn('max_per_period_cents', 'integer', (c) => c.notNull())
    .addColumn('period_start', 'bigint')
    .addColumn('period_end', 'bigint')
    .addColumn('period_used_cents', 'integer', (c) => c.notNull().defaultTo(0))
    .addColumn('bank_consent_id', 'text')
    .addColumn('bank_access_token', 'text')
    .addColumn('auth_state', 'text')
    .addColumn('revoked_by', 'text')
    .addColumn('created_at', 'bigint', (c) => c.notNull())
    .addColumn('updated_at', 'bigint', (c) => c.notNull())
    .addColumn('approved_at', 'bigint')
    .addColumn('ended_at', 'bigint')
    .execute();
  await db.schema
    .createIndex('refund_authorities_owner')
    .on('refund_authorities')
    .columns(['user_id', 'mode', 'id'])
    .execute();
  await sql`create unique index refund_authorities_active on refund_authorities (user_id, mode) where status = 'active'`.execute(
    db,
  );
  await db.schema
    .createIndex('refund_authorities_state')
    .on('refund_authorities')
    .column('auth_state')
    .unique()
    .execute();

  await db.schema
    .createTable('refunds')
    .addColumn('id', 'text', (c) => c.primaryKey())
    .addColumn('user_id', 'text', (c) => c.notNull().references('users.id'))
    .addColumn('mode', 'text', (c) => c.notNull())
    .addColumn('payment_id', 'text', (c) => c.notNull().references('payments.id'))
    .addColumn('request_id', 'text', (c) => c.notNull())
    .addColumn('status', 'text', (c) => c.notNull())
    .addColumn('amount_cents', 'integer', (c) => c.notNull())
    .addColumn('settled_cents', 'integer', (c) => c.notNull())
    .addColumn('reason', 'text')
    .addColumn('failure_reason', 'text')
    .addColumn('action_reason', 'text')
    .addColumn('particulars', 'text', (c) => c.notNull())
    .addColumn('code', 'text', (c) => c.notNull())
    .addColumn('reference', 'text', (c) => c.notNull())
    .addColumn('authority_id', 'text')
    .addColumn('bank_payment_id', 'text')
    .addColumn('sent_at', 'bigint')
    .addColumn('paid_by', 'text')
    .addColumn('created_at', 'bigint', (c) => c.notNull())
    .addColumn('updated_at', 'bigint', (c) => c.notNull())
    .addColumn('completed_at', 'bigint')
    .execute();
  await db.schema.createIndex('refunds_owner').on('refunds').columns(['user_id', 'mode', 'id']).execute();
  await db.schema.createIndex('refunds_payment').on('refunds').columns(['payment_id', 'id']).execute();
}
