import type { Kysely } from 'kysely';

// An endpoint enabled again after it was disabled starts a fresh failing streak: the health check
// counts only the attempts made since (docs/webhooks.md), so it is not disabled again at once.
export async function up(db: Kysely<any>): Promise<void> {
  await db.schema.alterTable('webhook_endpoints').addColumn('enabled_at', 'bigint').execute();
}
