import { sql, type Kysely } from 'kysely';

// Subscriptions and recurring consents keep what they are for (the request's message, "Veg box"),
// so every page and email can title them by it, with the payer beside it.
export async function up(db: Kysely<any>): Promise<void> {
  for (const table of ['subscriptions', 'recurring_consents']) {
    await db.schema
      .alterTable(table)
      .addColumn('description', 'text', (c) => c.notNull().defaultTo(''))
      .execute();
    await sql`update ${sql.table(table)} set description = (select r.message from requests r where r.id = ${sql.ref(`${table}.request_id`)})
      where exists (select 1 from requests r where r.id = ${sql.ref(`${table}.request_id`)})`.execute(db);
  }
}
