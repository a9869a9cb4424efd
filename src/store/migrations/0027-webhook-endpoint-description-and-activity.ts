import type { Kysely } from 'kysely';

// A webhook endpoint gets an optional description of the merchant's own, so two endpoints with the
// same URL can be told apart (docs/webhooks.md). The dashboard shows each endpoint's last delivery
// and its failure rate over 7 days (docs/dashboard.md): this index lets both read only that
// endpoint's recent deliveries, newest first, instead of every delivery it ever had. Its keys never
// change once a delivery is written, so an attempt's update leaves it alone.
export async function up(db: Kysely<any>): Promise<void> {
  await db.schema.alterTable('webhook_endpoints').addColumn('description', 'text').execute();
  await db.schema
    .createIndex('webhook_deliveries_endpoint')
    .on('webhook_deliveries')
    .columns(['endpoint_id', 'created_at'])
    .execute();
}
