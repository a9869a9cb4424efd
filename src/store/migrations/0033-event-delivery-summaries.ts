import type { Kysely } from 'kysely';

// Webhook deliveries and their attempts are pruned once they are 30 days old (docs/configuration.md,
// "Retention"). What they came to stays on their event, as JSON (src/modules/webhooks,
// `DeliverySummary`): per endpoint, how the newest delivery ended, how many deliveries and attempts
// there were, and when they were pruned; so an old event still reads as delivered, or as failed,
// rather than as never sent. Null while the event's deliveries are all still kept.
export async function up(db: Kysely<any>): Promise<void> {
  await db.schema.alterTable('events').addColumn('delivery_summary', 'text').execute();
}
