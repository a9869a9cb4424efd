import { sql, type Kysely } from 'kysely';

// Statement import and reconciliation (docs/reconciliation.md). A statement is one uploaded file;
// its lines are kept once per merchant and mode however many files show them: a line's identity
// is `line_key` (a hash of what the bank shows) with its `occurrence` among identical lines, unique,
// so a second file adds only what is new. A match ties one line to one payment or one refund:
// each side is unique, so no line pays two payments and no payment is seen twice.
export async function up(db: Kysely<any>): Promise<void> {
  await db.schema
    .createTable('statements')
    .addColumn('id', 'text', (c) => c.primaryKey())
    .addColumn('user_id', 'text', (c) => c.notNull().references('users.id'))
    .addColumn('mode', 'text', (c) => c.notNull())
    .addColumn('layout', 'text', (c) => c.notNull())
    .addColumn('filename', 'text')
    .addColumn('account', 'text')
    .addColumn('file_sha256', 'text', (c) => c.notNull())
    .addColumn('first_date', 'text', (c) => c.notNull())
    .addColumn('last_date', 'text', (c) => c.notNull())
    .addColumn('line_count', 'integer', (c) => c.notNull())
    .addColumn('added_count', 'integer', (c) => c.notNull())
    .addColumn('matched_count', 'integer', (c) => c.notNull())
    .addColumn('imported_by', 'text', (c) => c.notNull())
    .addColumn('created_at', 'bigint', (c) => c.notNull())
    .execute();
  await db.schema.createIndex('statements_owner').on('statements').columns(['user_id', 'mode', 'id']).execute();
  await db.schema
    .createIndex('statements_file')
    .on('statements')
    .columns(['user_id', 'mode', 'file_sha256'])
    .unique()
    .execute();

  await db.schema
    .createTable('statement_lines')
    .addColumn('id', 'text', (c) => c.primaryKey())
    .addColumn('user_id', 'text', (c) => c.notNull().references('users.id'))
    .addColumn('mode', 'text', (c) => c.notNull())
    .addColumn('statement_id', 'text', (c) => c.notNull().references('statements.id'))
    .addColumn('line_key', 'text', (c) => c.notNull())
    .addColumn('occurrence', 'integer', (c) => c.notNull())
    .addColumn('account', 'text', (c) => c.notNull())
    .addColumn('posted_on', 'text', (c) => c.notNull())
    .addColumn('amount_cents', 'integer', (c) => c.notNull())
    .addColumn('particulars', 'text', (c) => c.notNull())
    .addColumn('code', 'text', (c) => c.notNull())
    .addColumn('reference', 'text', (c) => c.notNull())
    .addColumn('other_party', 'text', (c) => c.notNull())
    .addColumn('description', 'text', (c) => c.notNull())
    .addColumn('bank_transaction_id', 'text', (c) => c.notNull())
    .addColumn('file_line', 'integer', (c) => c.notNull())
    .addColumn('auto_match', 'integer', (c) => c.notNull().defaultTo(1))
    .addColumn('created_at', 'bigint', (c) => c.notNull())
    .execute();
  await db.schema
    .createIndex('statement_lines_identity')
    .on('statement_lines')
    .columns(['user_id', 'mode', 'line_key', 'occurrence'])
    .unique()
    .execute();
  await db.schema
    .createIndex('statement_lines_posted')
    .on('statement_lines')
    .columns(['user_id', 'mode', 'posted_on'])
    .execute();
  await db.schema.createIndex('statement_lines_statement').on('statement_lines').column('statement_id').execute();

  await db.schema
    .createTable('statement_matches')
    .addColumn('id', 'text', (c) => c.primaryKey())
    .addColumn('user_id', 'text', (c) => c.notNull().references('users.id'))
    .addColumn('mode', 'text', (c) => c.notNull())
    .addColumn('line_id', 'text', (c) => c.notNull().references('statement_lines.id'))
    .addColumn('kind', 'text', (c) => c.notNull())
    .addColumn('target_id', 'text', (c) => c.notNull())
    .addColumn('method', 'text', (c) => c.notNull())
    .addColumn('matched_by', 'text', (c) => c.notNull())
    .addColumn('created_at', 'bigint', (c) => c.notNull())
    .execute();
  await db.schema.createIndex('statement_matches_line').on('statement_matches').column('line_id').unique().execute();
  await db.schema
    .createIndex('statement_matches_target')
    .on('statement_matches')
    .column('target_id')
    .unique()
    .execute();
  await sql`create index statement_matches_owner on statement_matches (user_id, mode, id)`.execute(db);
}
