import type { Kysely } from 'kysely';

export async function up(db: Kysely<any>): Promise<void> {
  await db.schema
    .createTable('users')
    .addColumn('id', 'text', (c) => c.primaryKey())
    .addColumn('name', 'text', (c) => c.notNull())
    .addColumn('email', 'text', (c) => c.notNull().unique())
    .addColumn('password_hash', 'text', (c) => c.notNull())
    .addColumn('test_clock_offset_ms', 'bigint', (c) => c.notNull().defaultTo(0))
    .addColumn('created_at', 'bigint', (c) => c.notNull())
    .addColumn('updated_at', 'bigint', (c) => c.notNull())
    .execute();

  await db.schema
    .createTable('bank_accounts')
    .addColumn('id', 'text', (c) => c.primaryKey())
    .addColumn('user_id', 'text', (c) => c.notNull().references('users.id'))
    .addColumn('account_number', 'text', (c) => c.notNull())
    .addColumn('name', 'text')
    .addColumn('created_at', 'bigint', (c) => c.notNull())
    .execute();
  await db.schema.createIndex('bank_accounts_user').on('bank_accounts').columns(['user_id', 'id']).execute();

  await db.schema
    .createTable('api_keys')
    .addColumn('id', 'text', (c) => c.primaryKey())
    .addColumn('user_id', 'text', (c) => c.notNull().references('users.id'))
    .addColumn('mode', 'text', (c) => c.notNull())
    .addColumn('key_hash', 'text', (c) => c.notNull().unique())
    .addColumn('hint', 'text', (c) => c.notNull())
    .addColumn('created_at', 'bigint', (c) => c.notNull())
    .addColumn('revoked_at', 'bigint')
    .execute();

  await db.schema
    .createTable('requests')
    .addColumn('id', 'text', (c) => c.primaryKey())
    .addColumn('user_id', 'text', (c) => c.notNull().references('users.id'))
    .addColumn('mode', 'text', (c) => c.notNull())
    .addColumn('status', 'text', (c) => c.notNull())
    .addColumn('type', 'text', (c) => c.notNull())
    .addColumn('kind', 'text', (c) => c.notNull())
    .addColumn('message', 'text', (c) => c.notNull())
    .addColumn('amount_cents', 'integer')
    .addColumn('bank_account_id', 'text', (c) => c.notNull().references('bank_accounts.id'))
    .addColumn('merchant_identifier', 'text')
    .addColumn('reference', 'text')
    .addColumn('flow', 'text', (c) => c.notNull())
    .addColumn('qr_data', 'text', (c) => c.notNull())
    .addColumn('logo_image_url', 'text')
    .addColumn('banner_image_url', 'text')
    .addColumn('min_payment_cents', 'integer')
    .addColumn('max_payment_cents', 'integer')
    .addColumn('suggested_amounts', 'text')
    .addColumn('is_donation', 'integer', (c) => c.notNull().defaultTo(0))
    .addColumn('add_surcharge', 'integer', (c) => c.notNull().defaultTo(0))
    .addColumn('surcharge_optional', 'integer', (c) => c.notNull().defaultTo(0))
    .addColumn('allow_dynamic_amount', 'integer', (c) => c.notNull().defaultTo(0))
    .addColumn('allow_marketing_opt_in', 'integer', (c) => c.notNull().defaultTo(0))
    .addColumn('collect_customer_phone', 'integer', (c) => c.notNull().defaultTo(0))
    .addColumn('require_customer_phone', 'integer', (c) => c.notNull().defaultTo(0))
    .addColumn('require_customer_basic_info', 'integer', (c) => c.notNull().defaultTo(0))
    .addColumn('require_customer_address', 'integer', (c) => c.notNull().defaultTo(0))
    .addColumn('success_redirect_url', 'text')
    .addColumn('failure_redirect_url', 'text')
    .addColumn('recurring_options', 'text')
    .addColumn('subscription_options', 'text')
    .addColumn('cust_info', 'text')
    .addColumn('created_at', 'bigint', (c) => c.notNull())
    .addColumn('updated_at', 'bigint', (c) => c.notNull())
    .addColumn('expires_at', 'bigint')
    .addColumn('deleted_at', 'bigint')
    .execute();
  await db.schema.createIndex('requests_owner').on('requests').columns(['user_id', 'mode', 'id']).execute();
  await db.schema
    .createIndex('requests_owner_mid')
    .on('requests')
    .columns(['user_id', 'mode', 'merchant_identifier'])
    .execute();

  await db.schema
    .createTable('events')
    .addColumn('id', 'text', (c) => c.primaryKey())
    .addColumn('user_id', 'text', (c) => c.notNull())
    .addColumn('mode', 'text', (c) => c.notNull())
    .addColumn('type', 'text', (c) => c.notNull())
    .addColumn('object_id', 'text', (c) => c.notNull())
    .addColumn('body', 'text', (c) => c.notNull())
    .addColumn('created_at', 'bigint', (c) => c.notNull())
    .execute();
  await db.schema.createIndex('events_owner').on('events').columns(['user_id', 'mode', 'id']).execute();
  await db.schema.createIndex('events_object').on('events').columns(['user_id', 'mode', 'object_id']).execute();

  await db.schema
    .createTable('jobs')
    .addColumn('id', 'text', (c) => c.primaryKey())
    .addColumn('kind', 'text', (c) => c.notNull())
    .addColumn('run_at', 'bigint', (c) => c.notNull())
    .addColumn('clock_id', 'text')
    .addColumn('payload', 'text', (c) => c.notNull())
    .addColumn('dedupe_key', 'text', (c) => c.unique())
    .addColumn('attempts', 'integer', (c) => c.notNull().defaultTo(0))
    .addColumn('locked_by', 'text')
    .addColumn('locked_until', 'bigint')
    .addColumn('last_error', 'text')
    .addColumn('failed_at', 'bigint')
    .addColumn('created_at', 'bigint', (c) => c.notNull())
    .execute();
  await db.schema.createIndex('jobs_due').on('jobs').columns(['failed_at', 'run_at']).execute();
  await db.schema.createIndex('jobs_clock').on('jobs').columns(['clock_id', 'run_at']).execute();

  await db.schema
    .createTable('idempotency_keys')
    .addColumn('user_id', 'text', (c) => c.notNull())
    .addColumn('mode', 'text', (c) => c.notNull())
    .addColumn('key', 'text', (c) => c.notNull())
    .addColumn('endpoint', 'text', (c) => c.notNull())
    .addColumn('fingerprint', 'text', (c) => c.notNull())
    .addColumn('status_code', 'integer')
    .addColumn('response', 'text')
    .addColumn('created_at', 'bigint', (c) => c.notNull())
    .addColumn('expires_at', 'bigint', (c) => c.notNull())
    .addPrimaryKeyConstraint('idempotency_keys_pk', ['user_id', 'mode', 'key'])
    .execute();
}
