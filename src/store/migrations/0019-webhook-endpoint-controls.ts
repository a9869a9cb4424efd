import type { Kysely } from 'kysely';

// A webhook endpoint can be disabled (no new deliveries) and enabled again (docs/webhooks.md).
// Secret rotation needs no column: the sealed `secret` holds the keyring (src/modules/webhooks/signing.ts).
export async function up(db: Kysely<any>): Promise<void> {
  await db.schema.alterTable('webhook_endpoints').addColumn('disabled_at', 'bigint').execute();
}
