import type { Kysely } from 'kysely';

// Checkout bookkeeping on payments: when execution at the bank was claimed (so a single request
// is executed at most once, and the sweeper leaves in-flight payments alone), and which channel
// started the payment (the hosted page, the embed widget or the test helper).
export async function up(db: Kysely<any>): Promise<void> {
  await db.schema.alterTable('payments').addColumn('submitted_at', 'bigint').execute();
  await db.schema.alterTable('payments').addColumn('channel', 'text').execute();
}
