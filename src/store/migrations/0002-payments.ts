import type { Kysely } from 'kysely';

// Payments (one-off, recurring executions and subscription charges), the payer details recorded
// against them, and the merchant's customers.
export async function up(db: Kysely<any>): Promise<void> {
  await db.schema
    .createTable('payments')
    .addColumn('id', 'text', (c) => c.primaryKey())
    .addColumn('user_id', 'text', (c) => c.notNull().references('users.id'))
    .addColumn('mode', 'text', (c) => c.notNull())
    .addColumn('request_id', 'text', (c) => c.notNull().references('requests.id'))
    .addColumn('status', 'text', (c) => c.notNull())
    .addColumn('amount_cents', 'integer', (c) => c.notNull())
    .addColumn('settled_cents', 'integer', (c) => c.notNull())
    .addColumn('bank_id', 'text')
    .addColumn('particulars', 'text', (c) => c.notNull().unique())
    .addColumn('code', 'text', (c) => c.notNull())
    .addColumn('reference', 'text')
    .addColumn('merchant_identifier', 'text')
    .addColumn('bank_consent_id', 'text')
    .addColumn('bank_payment_id', 'text')
    .addColumn('auth_state', 'text', (c) => c.unique())
    .addColumn('recurring_consent_id', 'text')
    .addColumn('subscription_id', 'text')
    .addColumn('idempotency_key', 'text')
    .addColumn('fingerprint', 'text')
    .addColumn('failure_reason', 'text')
    .addColumn('created_at', 'bigint', (c) => c.notNull())
    .addColumn('updated_at', 'bigint', (c) => c.notNull())
    .addColumn('completed_at', 'bigint')
    .execute();
  await db.schema.createIndex('payments_owner').on('payments').columns(['user_id', 'mode', 'id']).execute();
  await db.schema.createIndex('payments_request').on('payments').columns(['request_id', 'id']).execute();
  await db.schema
    .createIndex('payments_consent')
    .on('payments')
    .columns(['recurring_consent_id', 'created_at'])
    .execute();
  await db.schema.createIndex('payments_subscription').on('payments').columns(['subscription_id', 'id']).execute();
  await db.schema.createIndex('payments_status').on('payments').columns(['status', 'updated_at']).execute();
  await db.schema
    .createIndex('payments_idempotency')
    .on('payments')
    .columns(['user_id', 'mode', 'idempotency_key'])
    .unique()
    .execute();

  await db.schema
    .createTable('cust_infos')
    .addColumn('id', 'text', (c) => c.primaryKey())
    .addColumn('payment_id', 'text', (c) => c.notNull().references('payments.id'))
    .addColumn('email', 'text')
    .addColumn('phone', 'text')
    .addColumn('first_name', 'text')
    .addColumn('last_name', 'text')
    .addColumn('address1', 'text', (c) => c.notNull().defaultTo(''))
    .addColumn('address2', 'text', (c) => c.notNull().defaultTo(''))
    .addColumn('address3', 'text', (c) => c.notNull().defaultTo(''))
    .addColumn('address4', 'text', (c) => c.notNull().defaultTo(''))
    .addColumn('city', 'text', (c) => c.notNull().defaultTo(''))
    .addColumn('postcode', 'text', (c) => c.notNull().defaultTo(''))
    .addColumn('marketing_opt_in', 'integer', (c) => c.notNull().defaultTo(0))
    .addColumn('created_at', 'bigint', (c) => c.notNull())
    .addColumn('updated_at', 'bigint', (c) => c.notNull())
    .execute();
  await db.schema.createIndex('cust_infos_payment').on('cust_infos').column('payment_id').unique().execute();

  await db.schema
    .createTable('customers')
    .addColumn('id', 'text', (c) => c.primaryKey())
    .addColumn('user_id', 'text', (c) => c.notNull().references('users.id'))
    .addColumn('mode', 'text', (c) => c.notNull())
    .addColumn('email', 'text', (c) => c.notNull())
    .addColumn('phone', 'text')
    .addColumn('first_name', 'text')
    .addColumn('last_name', 'text')
    .addColumn('address1', 'text', (c) => c.notNull().defaultTo(''))
    .addColumn('address2', 'text', (c) => c.notNull().defaultTo(''))
    .addColumn('address3', 'text', (c) => c.notNull().defaultTo(''))
    .addColumn('address4', 'text', (c) => c.notNull().defaultTo(''))
    .addColumn('city', 'text', (c) => c.notNull().defaultTo(''))
    .addColumn('postcode', 'text', (c) => c.notNull().defaultTo(''))
    .addColumn('created_at', 'bigint', (c) => c.notNull())
    .addColumn('updated_at', 'bigint', (c) => c.notNull())
    .execute();
  await db.schema
    .createIndex('customers_email')
    .on('customers')
    .columns(['user_id', 'mode', 'email'])
    .unique()
    .execute();
  await db.schema.createIndex('customers_owner').on('customers').columns(['user_id', 'mode', 'id']).execute();
}
