import type { Kysely } from 'kysely';

// Webhook endpoints, one delivery per (event, endpoint) sending, and every attempt of each.
export async function up(db: Kysely<any>): Promise<void> {
  await db.schema
    .createTable('webhook_endpoints')
    .addColumn('id', 'text', (c) => c.primaryKey())
    .addColumn('user_id', 'text', (c) => c.notNull().references('users.id'))
    .addColumn('mode', 'text', (c) => c.notNull())
    .addColumn('url', 'text', (c) => c.notNull())
    .addColumn('secret', 'text', (c) => c.notNull())
    .addColumn('events', 'text')
    .addColumn('created_at', 'bigint', (c) => c.notNull())
    .addColumn('deleted_at', 'bigint')
    .execute();
  await db.schema
    .createIndex('webhook_endpoints_owner')
    .on('webhook_endpoints')
    .columns(['user_id', 'mode', 'id'])
    .execute();

  await db.schema
    .createTable('webhook_deliveries')
    .addColumn('id', 'text', (c) => c.primaryKey())
    .addColumn('event_id', 'text', (c) => c.notNull().references('events.id'))
    .addColumn('endpoint_id', 'text', (c) => c.notNull().references('webhook_endpoints.id'))
    .addColumn('user_id', 'text', (c) => c.notNull())
    .addColumn('mode', 'text', (c) => c.notNull())
    .addColumn('status', 'text', (c) => c.notNull())
    .addColumn('attempts', 'integer', (c) => c.notNull().defaultTo(0))
    .addColumn('first_attempt_at', 'bigint')
    .addColumn('last_attempt_at', 'bigint')
    .addColumn('next_attempt_at', 'bigint')
    .addColumn('failed_at', 'bigint')
    .addColumn('succeeded_at', 'bigint')
    .addColumn('superseded_by', 'text')
    .addColumn('created_at', 'bigint', (c) => c.notNull())
    .execute();
  await db.schema
    .createIndex('webhook_deliveries_event')
    .on('webhook_deliveries')
    .columns(['event_id', 'id'])
    .execute();
  await db.schema
    .createIndex('webhook_deliveries_failed')
    .on('webhook_deliveries')
    .columns(['endpoint_id', 'status', 'failed_at'])
    .execute();

  await db.schema
    .createTable('webhook_attempts')
    .addColumn('id', 'text', (c) => c.primaryKey())
    .addColumn('delivery_id', 'text', (c) => c.notNull().references('webhook_deliveries.id'))
    .addColumn('attempt', 'integer', (c) => c.notNull())
    .addColumn('started_at', 'bigint', (c) => c.notNull())
    .addColumn('latency_ms', 'integer', (c) => c.notNull())
    .addColumn('status_code', 'integer')
    .addColumn('response_body', 'text')
    .addColumn('error', 'text')
    .execute();
  await db.schema
    .createIndex('webhook_attempts_delivery')
    .on('webhook_attempts')
    .columns(['delivery_id', 'attempt'])
    .execute();

  // Event log filters: by type and by object, newest first.
  await db.schema.createIndex('events_owner_type').on('events').columns(['user_id', 'mode', 'type', 'id']).execute();
}
