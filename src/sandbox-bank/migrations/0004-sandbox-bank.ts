import type { Kysely } from 'kysely';

// The sandbox bank's own tables. It shares the service's database when mounted, and has a file of
// its own when it runs alone; either way it reads and writes only these.
export async function up(db: Kysely<any>): Promise<void> {
  await db.schema
    .createTable('sandbox_payers')
    .addColumn('id', 'text', (c) => c.primaryKey())
    .addColumn('username', 'text', (c) => c.notNull().unique())
    .addColumn('name', 'text', (c) => c.notNull())
    .addColumn('account_number', 'text', (c) => c.notNull())
    .addColumn('balance_cents', 'bigint', (c) => c.notNull())
    .addColumn('created_at', 'bigint', (c) => c.notNull())
    .execute();

  await db.schema
    .createTable('sandbox_consents')
    .addColumn('id', 'text', (c) => c.primaryKey())
    .addColumn('kind', 'text', (c) => c.notNull())
    .addColumn('client_id', 'text', (c) => c.notNull())
    .addColumn('status', 'text', (c) => c.notNull())
    .addColumn('request_body', 'text', (c) => c.notNull())
    .addColumn('amount_cents', 'bigint')
    .addColumn('creditor_name', 'text', (c) => c.notNull())
    .addColumn('creditor_account', 'text', (c) => c.notNull())
    .addColumn('particulars', 'text', (c) => c.notNull())
    .addColumn('code', 'text', (c) => c.notNull())
    .addColumn('reference', 'text', (c) => c.notNull())
    .addColumn('from_at', 'bigint')
    .addColumn('to_at', 'bigint')
    .addColumn('max_per_payment_cents', 'bigint')
    .addColumn('period', 'text')
    .addColumn('max_per_period_cents', 'bigint')
    .addColumn('max_count_per_period', 'integer')
    .addColumn('total_count', 'integer')
    .addColumn('total_amount_cents', 'bigint')
    .addColumn('payer_id', 'text')
    .addColumn('decline_next', 'integer', (c) => c.notNull().defaultTo(0))
    .addColumn('decline_reason', 'text')
    .addColumn('hold_seconds', 'integer')
    .addColumn('hold_status', 'text')
    .addColumn('created_at', 'bigint', (c) => c.notNull())
    .addColumn('updated_at', 'bigint', (c) => c.notNull())
    .addColumn('status_updated_at', 'bigint', (c) => c.notNull())
    .execute();

  await db.schema
    .createTable('sandbox_authorisations')
    .addColumn('id', 'text', (c) => c.primaryKey())
    .addColumn('consent_id', 'text', (c) => c.notNull())
    .addColumn('client_id', 'text', (c) => c.notNull())
    .addColumn('redirect_uri', 'text', (c) => c.notNull())
    .addColumn('state', 'text', (c) => c.notNull())
    .addColumn('payer_id', 'text')
    .addColumn('code_hash', 'text', (c) => c.unique())
    .addColumn('code_expires_at', 'bigint')
    .addColumn('code_used_at', 'bigint')
    .addColumn('created_at', 'bigint', (c) => c.notNull())
    .addColumn('expires_at', 'bigint', (c) => c.notNull())
    .execute();

  await db.schema
    .createTable('sandbox_tokens')
    .addColumn('token_hash', 'text', (c) => c.primaryKey())
    .addColumn('client_id', 'text', (c) => c.notNull())
    .addColumn('consent_id', 'text')
    .addColumn('created_at', 'bigint', (c) => c.notNull())
    .addColumn('expires_at', 'bigint')
    .execute();

  await db.schema
    .createTable('sandbox_payments')
    .addColumn('id', 'text', (c) => c.primaryKey())
    .addColumn('consent_id', 'text', (c) => c.notNull())
    .addColumn('client_id', 'text', (c) => c.notNull())
    .addColumn('payer_id', 'text', (c) => c.notNull())
    .addColumn('status', 'text', (c) => c.notNull())
    .addColumn('status_reason', 'text')
    .addColumn('amount_cents', 'bigint', (c) => c.notNull())
    .addColumn('debited', 'integer', (c) => c.notNull())
    .addColumn('request_body', 'text', (c) => c.notNull())
    .addColumn('executed_at', 'bigint', (c) => c.notNull())
    .addColumn('release_at', 'bigint')
    .addColumn('held', 'integer', (c) => c.notNull().defaultTo(0))
    .addColumn('created_at', 'bigint', (c) => c.notNull())
    .addColumn('updated_at', 'bigint', (c) => c.notNull())
    .execute();
  await db.schema
    .createIndex('sandbox_payments_consent')
    .on('sandbox_payments')
    .columns(['consent_id', 'executed_at'])
    .execute();

  await db.schema
    .createTable('sandbox_idempotency')
    .addColumn('client_id', 'text', (c) => c.notNull())
    .addColumn('endpoint', 'text', (c) => c.notNull())
    .addColumn('key', 'text', (c) => c.notNull())
    .addColumn('fingerprint', 'text', (c) => c.notNull())
    .addColumn('resource_id', 'text', (c) => c.notNull())
    .addColumn('created_at', 'bigint', (c) => c.notNull())
    .addPrimaryKeyConstraint('sandbox_idempotency_pk', ['client_id', 'endpoint', 'key'])
    .execute();
}
