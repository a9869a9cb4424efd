import { test } from 'node:test';
import assert from 'node:assert/strict';
import { sql } from 'kysely';
import { engine, freshDb } from '../../../test/helpers.ts';
import { migrateTo, migrateToLatest } from '../../store/migrate.ts';

// Migration 0024 gives each payer's details the merchant and mode of their payment, so searches by
// email are scoped in the query.

test('0024 fills the owner of every existing cust_infos row from its payment', async (t) => {
  const { db, drop } = await freshDb();
  t.after(drop);
  await migrateTo(db, '0023-attempt-windows');
  // Rows as they were at 0023, written with every required column filled, whatever columns it had.
  const insertFilled = async (table: string, row: Record<string, unknown>) => {
    const { rows: columns } =
      engine === 'postgres'
        ? await sql<{
            name: string;
            type: string;
            required: boolean;
          }>`select column_name as name, data_type as type, (is_nullable = 'NO' and column_default is null) as required
          from information_schema.columns where table_schema = current_schema() and table_name = ${table}`.execute(db)
        : await sql<{
            name: string;
            type: string;
            required: number;
          }>`select name, type, ("notnull" = 1 and dflt_value is null) as required from pragma_table_info(${table})`.execute(
            db,
          );
    const filled: Record<string, unknown> = { ...row };
    for (const column of columns)
      if (!(column.name in filled) && column.required)
        filled[column.name] = /int|numeric/i.test(column.type) ? 0 : `x-${table}-${column.name}`;
    await db
      .insertInto(table as never)
      .values(filled as never)
      .execute();
  };
  for (const [user, mode] of [
    ['user_a', 'live'],
    ['user_b', 'test'],
  ] as const) {
    await sql`insert into users (id, name, email, password_hash, created_at, updated_at) values (${user}, 'Shop', ${`${user}@example.com`}, 'x', 1, 1)`.execute(
      db,
    );
    await sql`insert into bank_accounts (id, user_id, account_number, name, created_at) values (${`bankaccount_${user}`}, ${user}, '12-3456-7890138-00', null, 1)`.execute(
      db,
    );
    await insertFilled('requests', {
      id: `request_${user}`,
      user_id: user,
      mode,
      bank_account_id: `bankaccount_${user}`,
      status: 'active',
      kind: 'single',
    });
    await insertFilled('payments', {
      id: `payment_${mode}`,
      request_id: `request_${user}`,
      user_id: user,
      mode,
      particulars: `V-${mode.toUpperCase()}00`,
      auth_state: null,
    });
  }
  await insertFilled('cust_infos', { id: 'custinfo_1', payment_id: 'payment_live', email: 'pat@example.com' });
  await insertFilled('cust_infos', { id: 'custinfo_2', payment_id: 'payment_test', email: 'pat@example.com' });

  await migrateToLatest(db);
  const rows = await db.selectFrom('cust_infos').select(['id', 'user_id', 'mode']).orderBy('id').execute();
  assert.deepEqual(rows, [
    { id: 'custinfo_1', user_id: 'user_a', mode: 'live' },
    { id: 'custinfo_2', user_id: 'user_b', mode: 'test' },
  ]);
});
