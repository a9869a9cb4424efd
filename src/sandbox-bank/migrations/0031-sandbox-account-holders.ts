import { randomInt } from 'node:crypto';
import type { Kysely } from 'kysely';

// A payment now credits the creditor account when the sandbox bank holds it, so an account number
// must name one holder. Numbers were made at random and could come out the same twice: all but the
// first holder of a shared number get a new one before a unique index keeps numbers apart. A
// payment records the holder it credited, so a rejection later takes the credit back from them.
// A holder may have a refund arrangement (a merchant paying refunds under one enduring consent).
export async function up(db: Kysely<any>): Promise<void> {
  await renumberSharedAccounts(db);
  await db.schema
    .createIndex('sandbox_payers_account_number')
    .on('sandbox_payers')
    .column('account_number')
    .unique()
    .execute();
  await db.schema.alterTable('sandbox_payments').addColumn('credited_payer_id', 'text').execute();
  await db.schema
    .alterTable('sandbox_payers')
    .addColumn('refund_arrangement', 'integer', (c) => c.notNull().defaultTo(0))
    .execute();
}

async function renumberSharedAccounts(db: Kysely<any>): Promise<void> {
  const holders: Array<{ id: string; account_number: string }> = await db
    .selectFrom('sandbox_payers')
    .select(['id', 'account_number'])
    .orderBy('created_at')
    .orderBy('id')
    .execute();
  const held = new Set<string>();
  for (const holder of holders) {
    if (!held.has(holder.account_number)) {
      held.add(holder.account_number);
      continue;
    }
    const fresh = unheldNumber(held);
    held.add(fresh);
    await db.updateTable('sandbox_payers').set({ account_number: fresh }).where('id', '=', holder.id).execute();
  }
}

// The form the bank makes numbers in at the time of this migration; written out here, as a
// migration must not change when the bank's code does.
function unheldNumber(held: Set<string>): string {
  for (;;) {
    const number = `02-0100-${String(randomInt(0, 10_000_000)).padStart(7, '0')}-00`;
    if (!held.has(number)) return number;
  }
}
