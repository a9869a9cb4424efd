import type { Kysely } from 'kysely';

// The bank's access token for a one-off payment, sealed, from the moment the payment is claimed for
// submission until the bank has named it: a process that dies between the bank's answer and its
// record can then submit again with the same idempotency key and learn what the bank did.
export async function up(db: Kysely<any>): Promise<void> {
  await db.schema.alterTable('payments').addColumn('submission_token_sealed', 'text').execute();
}
