import { sql, type Kysely } from 'kysely';

// A payer's details carry the merchant and mode of their payment, so a search by the payer's email
// is scoped in the query itself: what other merchants' payers typed can never crowd a merchant's
// own out of a bounded search.
export async function up(db: Kysely<any>): Promise<void> {
  await db.schema.alterTable('cust_infos').addColumn('user_id', 'text').execute();
  await db.schema.alterTable('cust_infos').addColumn('mode', 'text').execute();
  await sql`update cust_infos set
    user_id = (select payments.user_id from payments where payments.id = cust_infos.payment_id),
    mode = (select payments.mode from payments where payments.id = cust_infos.payment_id)`.execute(db);
  await db.schema
    .createIndex('cust_infos_owner_email')
    .on('cust_infos')
    .columns(['user_id', 'mode', 'email', 'payment_id'])
    .execute();
}
