import { sql, type Kysely } from 'kysely';

// A single request's payment claimed for the bank and not yet settled, on the request's own row, so
// deleting or expiring the request can refuse or wait without reading another module's table: a
// payment the payer approved must still make its request paid (docs/checkout.md).
export async function up(db: Kysely<any>): Promise<void> {
  await db.schema.alterTable('requests').addColumn('payment_at_bank', 'text').execute();
  // Payments already claimed for the bank when this runs hold their requests as later ones will.
  await sql`
    update requests set payment_at_bank = (
      select p.id from payments p
      where p.request_id = requests.id
        and (p.status = 'unconfirmed' or (p.status = 'awaiting-consent' and p.submitted_at is not null))
      order by p.id limit 1)
    where type = 'single' and kind = 'payment' and status = 'active'
      and id in (
        select request_id from payments
        where status = 'unconfirmed' or (status = 'awaiting-consent' and submitted_at is not null))
  `.execute(db);
}
