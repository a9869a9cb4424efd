import { sql, type Kysely } from 'kysely';

// Receipts and tax invoices (docs/receipts.md). A merchant's tax settings (legal name, GST number,
// whether its prices include GST, whether it issues tax invoices and emails receipts), one row per
// merchant for both modes. A receipt is issued for every successful payment and a credit note for
// every successful refund, each numbered per merchant, mode and kind by a counter row moved in the
// transaction that issues it, so the numbers have no gaps and no duplicates. What a document shows
// is frozen in `document` when it is issued.
export async function up(db: Kysely<any>): Promise<void> {
  await db.schema
    .createTable('tax_settings')
    .addColumn('user_id', 'text', (c) => c.primaryKey().references('users.id'))
    .addColumn('legal_name', 'text', (c) => c.notNull())
    .addColumn('gst_number', 'text')
    .addColumn('prices_include_gst', 'integer', (c) => c.notNull())
    .addColumn('issue_tax_invoices', 'integer', (c) => c.notNull())
    .addColumn('email_receipts', 'integer', (c) => c.notNull())
    .addColumn('created_at', 'bigint', (c) => c.notNull())
    .addColumn('updated_at', 'bigint', (c) => c.notNull())
    .execute();

  await db.schema
    .createTable('receipt_counters')
    .addColumn('user_id', 'text', (c) => c.notNull().references('users.id'))
    .addColumn('mode', 'text', (c) => c.notNull())
    .addColumn('kind', 'text', (c) => c.notNull())
    .addColumn('last_number', 'integer', (c) => c.notNull())
    .addPrimaryKeyConstraint('receipt_counters_pk', ['user_id', 'mode', 'kind'])
    .execute();

  await db.schema
    .createTable('receipts')
    .addColumn('id', 'text', (c) => c.primaryKey())
    .addColumn('user_id', 'text', (c) => c.notNull().references('users.id'))
    .addColumn('mode', 'text', (c) => c.notNull())
    .addColumn('kind', 'text', (c) => c.notNull())
    .addColumn('number', 'integer', (c) => c.notNull())
    .addColumn('payment_id', 'text', (c) => c.notNull())
    .addColumn('refund_id', 'text')
    .addColumn('receipt_id', 'text')
    .addColumn('total_cents', 'integer', (c) => c.notNull())
    .addColumn('gst_cents', 'integer')
    .addColumn('document', 'text', (c) => c.notNull())
    .addColumn('payer_email', 'text')
    .addColumn('issued_at', 'bigint', (c) => c.notNull())
    .execute();
  await db.schema
    .createIndex('receipts_number')
    .on('receipts')
    .columns(['user_id', 'mode', 'kind', 'number'])
    .unique()
    .execute();
  await db.schema.createIndex('receipts_owner').on('receipts').columns(['user_id', 'mode', 'id']).execute();
  await db.schema.createIndex('receipts_payment').on('receipts').columns(['payment_id', 'id']).execute();
  await sql`create unique index receipts_one_per_payment on receipts (payment_id) where kind = 'receipt'`.execute(db);
  await sql`create unique index receipts_one_per_refund on receipts (refund_id) where refund_id is not null`.execute(
    db,
  );
}
