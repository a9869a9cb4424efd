import type { Kysely } from 'kysely';

// Subscriptions and their charge slots. A slot (subscription, local date) is unique, so no
// schedule is charged twice for one date.
export async function up(db: Kysely<any>): Promise<void> {
  await db.schema
    .createTable('subscriptions')
    .addColumn('id', 'text', (c) => c.primaryKey())
    .addColumn('user_id', 'text', (c) => c.notNull().references('users.id'))
    .addColumn('mode', 'text', (c) => c.notNull())
    .addColumn('request_id', 'text', (c) => c.notNull().references('requests.id'))
    .addColumn('customer_id', 'text')
    .addColumn('email', 'text', (c) => c.notNull())
    .addColumn('merchant_identifier', 'text')
    .addColumn('reference', 'text')
    .addColumn('bank_account_id', 'text', (c) => c.notNull())
    .addColumn('payer_details', 'text')
    .addColumn('status', 'text', (c) => c.notNull())
    .addColumn('amount_cents', 'integer', (c) => c.notNull())
    .addColumn('period', 'text', (c) => c.notNull())
    .addColumn('start_at', 'bigint')
    .addColumn('end_at', 'bigint')
    .addColumn('total_count', 'integer')
    .addColumn('zone', 'text', (c) => c.notNull())
    .addColumn('anchor_date', 'text', (c) => c.notNull())
    .addColumn('anchor_time', 'text', (c) => c.notNull())
    .addColumn('first_slot', 'integer', (c) => c.notNull())
    .addColumn('first_charge_at', 'bigint', (c) => c.notNull())
    .addColumn('next_slot', 'integer')
    .addColumn('next_charge_at', 'bigint')
    .addColumn('successful_count', 'integer', (c) => c.notNull().defaultTo(0))
    .addColumn('failed_count', 'integer', (c) => c.notNull().defaultTo(0))
    .addColumn('skipped_count', 'integer', (c) => c.notNull().defaultTo(0))
    .addColumn('bank_id', 'text', (c) => c.notNull())
    .addColumn('bank_consent_id', 'text', (c) => c.notNull())
    .addColumn('bank_access_token', 'text', (c) => c.notNull())
    .addColumn('cancelled_by', 'text')
    .addColumn('paused_at', 'bigint')
    .addColumn('resumed_at', 'bigint')
    .addColumn('cancelled_at', 'bigint')
    .addColumn('completed_at', 'bigint')
    .addColumn('created_at', 'bigint', (c) => c.notNull())
    .addColumn('updated_at', 'bigint', (c) => c.notNull())
    .execute();
  await db.schema.createIndex('subscriptions_owner').on('subscriptions').columns(['user_id', 'mode', 'id']).execute();
  await db.schema.createIndex('subscriptions_request').on('subscriptions').column('request_id').unique().execute();

  await db.schema
    .createTable('subscription_charges')
    .addColumn('id', 'text', (c) => c.primaryKey())
    .addColumn('subscription_id', 'text', (c) => c.notNull().references('subscriptions.id'))
    .addColumn('slot', 'integer', (c) => c.notNull())
    .addColumn('slot_date', 'text', (c) => c.notNull())
    .addColumn('charge_at', 'bigint', (c) => c.notNull())
    .addColumn('status', 'text', (c) => c.notNull())
    .addColumn('attempts', 'integer', (c) => c.notNull())
    .addColumn('last_payment_id', 'text')
    .addColumn('last_error', 'text')
    .addColumn('next_attempt_at', 'bigint')
    .addColumn('created_at', 'bigint', (c) => c.notNull())
    .addColumn('updated_at', 'bigint', (c) => c.notNull())
    .addUniqueConstraint('subscription_charges_slot', ['subscription_id', 'slot_date'])
    .execute();

  await db.schema
    .createTable('subscription_authorisations')
    .addColumn('state', 'text', (c) => c.primaryKey())
    .addColumn('request_id', 'text', (c) => c.notNull().references('requests.id'))
    .addColumn('bank_id', 'text', (c) => c.notNull())
    .addColumn('bank_consent_id', 'text', (c) => c.notNull())
    .addColumn('payer_details', 'text')
    .addColumn('channel', 'text')
    .addColumn('outcome', 'text', (c) => c.notNull())
    .addColumn('subscription_id', 'text')
    .addColumn('created_at', 'bigint', (c) => c.notNull())
    .addColumn('updated_at', 'bigint', (c) => c.notNull())
    .execute();
}
