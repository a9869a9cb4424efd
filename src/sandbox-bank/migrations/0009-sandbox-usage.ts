import { sql, type Kysely } from 'kysely';

// The sandbox bank keeps each enduring consent's usage on the consent row: totals of the payments
// it did not reject, and the sums of one calendar window. Summing every payment of a consent on
// each execution made an execution cost grow with the consent's age.
export async function up(db: Kysely<any>): Promise<void> {
  await db.schema
    .alterTable('sandbox_consents')
    .addColumn('used_count', 'integer', (c) => c.notNull().defaultTo(0))
    .execute();
  await db.schema
    .alterTable('sandbox_consents')
    .addColumn('used_cents', 'bigint', (c) => c.notNull().defaultTo(0))
    .execute();
  // The window the period counters are for; null until the first execution in a window.
  await db.schema.alterTable('sandbox_consents').addColumn('period_start', 'bigint').execute();
  await db.schema.alterTable('sandbox_consents').addColumn('period_end', 'bigint').execute();
  await db.schema
    .alterTable('sandbox_consents')
    .addColumn('period_count', 'integer', (c) => c.notNull().defaultTo(0))
    .execute();
  await db.schema
    .alterTable('sandbox_consents')
    .addColumn('period_cents', 'bigint', (c) => c.notNull().defaultTo(0))
    .execute();
  await sql`
    update sandbox_consents set
      used_count = (select count(*) from sandbox_payments p where p.consent_id = sandbox_consents.id and p.status <> 'Rejected'),
      used_cents = (select coalesce(sum(p.amount_cents), 0) from sandbox_payments p where p.consent_id = sandbox_consents.id and p.status <> 'Rejected')
  `.execute(db);
}
