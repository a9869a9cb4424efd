import type { Kysely } from 'kysely';

// Recurring consents (docs/recurring.md) and the authorisations in progress that
// lead to them (the bank's redirect comes back with a state that names one).
export async function up(db: Kysely<any>): Promise<void> {
  await db.schema
    .createTable('recurring_consents')
    .addColumn('id', 'text', (c) => c.primaryKey())
    .addColumn('user_id', 'text', (c) => c.notNull().references('users.id'))
    .addColumn('mode', 'text', (c) => c.notNull())
    .addColumn('status', 'text', (c) => c.notNull())
    .addColumn('request_id', 'text', (c) => c.notNull().references('requests.id'))
    .addColumn('bank_account_id', 'text', (c) => c.notNull())
    .addColumn('customer_id', 'text')
    .addColumn('email', 'text', (c) => c.notNull())
    .addColumn('merchant_identifier', 'text')
    .addColumn('reference', 'text')
    .addColumn('token_hash', 'text', (c) => c.notNull().unique())
    .addColumn('bank_id', 'text', (c) => c.notNull())
    .addColumn('bank_consent_id', 'text', (c) => c.notNull())
    .addColumn('bank_access_token', 'text', (c) => c.notNull())
    .addColumn('period', 'text', (c) => c.notNull())
    .addColumn('max_per_period_cents', 'bigint', (c) => c.notNull())
    .addColumn('max_per_payment_cents', 'bigint')
    .addColumn('total_count', 'integer')
    .addColumn('total_amount_cents', 'bigint')
    .addColumn('end_at', 'bigint')
    .addColumn('revoked_by', 'text')
    .addColumn('created_at', 'bigint', (c) => c.notNull())
    .addColumn('updated_at', 'bigint', (c) => c.notNull())
    .addColumn('revoked_at', 'bigint')
    .addColumn('expired_at', 'bigint')
    .execute();
  await db.schema
    .createIndex('recurring_consents_owner')
    .on('recurring_consents')
    .columns(['user_id', 'mode', 'id'])
    .execute();
  await db.schema
    .createIndex('recurring_consents_email')
    .on('recurring_consents')
    .columns(['user_id', 'mode', 'email'])
    .execute();
  await db.schema
    .createIndex('recurring_consents_request')
    .on('recurring_consents')
    .column('request_id')
    .unique()
    .execute();

  await db.schema
    .createTable('consent_authorisations')
    .addColumn('state', 'text', (c) => c.primaryKey())
    .addColumn('request_id', 'text', (c) => c.notNull().references('requests.id'))
    .addColumn('bank_id', 'text', (c) => c.notNull())
    .addColumn('bank_consent_id', 'text')
    .addColumn('details', 'text')
    .addColumn('outcome', 'text')
    .addColumn('created_at', 'bigint', (c) => c.notNull())
    .addColumn('completed_at', 'bigint')
    .execute();
}
