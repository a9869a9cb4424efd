import { sql, type Kysely } from 'kysely';

// A recurring consent keeps its start at the bank: the FromDateTime the service asked for, when the
// payer was sent to approve it. The bank counts a fortnightly consent's fortnights from the week
// that contains that instant, so the service needs it to find the same windows (docs/limits-and-schedule.md).
// Consents from before were asked for at their authorisation's creation; one whose authorisation
// row is gone takes its own creation, which only a fortnight's window would depend on, and no
// consent from before is fortnightly.
export async function up(db: Kysely<any>): Promise<void> {
  await db.schema
    .alterTable('recurring_consents')
    .addColumn('starts_at', 'bigint', (c) => c.notNull().defaultTo(0))
    .execute();
  // Found by the request (the authorisations' index) and then the consent it created.
  await sql`
    update recurring_consents set starts_at = coalesce(
      (select min(a.created_at) from enduring_authorisations a
        where a.request_id = recurring_consents.request_id and a.object_id = recurring_consents.id),
      created_at)
  `.execute(db);
}
