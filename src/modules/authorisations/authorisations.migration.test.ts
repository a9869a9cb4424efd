import { test } from 'node:test';
import assert from 'node:assert/strict';
import { sql } from 'kysely';
import { engine, freshDb } from '../../../test/helpers.ts';
import { migrateTo, migrateToLatest } from '../../store/migrate.ts';

// Migration 0017 moves the authorisations of recurring consents and of subscriptions into one
// table, with one vocabulary of outcomes, and keeps which consent or subscription each created.

test('0017 moves both kinds of authorisation into enduring_authorisations', async (t) => {
  const { db, drop } = await freshDb();
  t.after(drop);
  await migrateTo(db, '0016-payer-accounts');
  // Rows as they were at 0016, written by hand: today's code writes columns later migrations add.
  const merchant = { user_id: 'user_migration', bank_account_id: 'bankaccount_migration' };
  await sql`insert into users (id, name, email, password_hash, created_at, updated_at) values (${merchant.user_id}, 'Shop', 'shop@example.com', 'x', 1, 1)`.execute(
    db,
  );
  await sql`insert into bank_accounts (id, user_id, account_number, name, created_at) values (${merchant.bank_account_id}, ${merchant.user_id}, '12-3456-7890138-00', null, 1)`.execute(
    db,
  );
  // A request row with every column that needs a value filled, whatever columns 0016 had.
  const { rows: requestColumns } =
    engine === 'postgres'
      ? await sql<{
          name: string;
          type: string;
          required: boolean;
        }>`select column_name as name, data_type as type, (is_nullable = 'NO' and column_default is null) as required
        from information_schema.columns where table_schema = current_schema() and table_name = 'requests'`.execute(db)
      : await sql<{
          name: string;
          type: string;
          required: number;
        }>`select name, type, ("notnull" = 1 and dflt_value is null) as required from pragma_table_info('requests')`.execute(
          db,
        );
  let made = 0;
  const request = async () => {
    const id = `request_migration${(made += 1)}`;
    const row: Record<string, unknown> = {
      id,
      user_id: merchant.user_id,
      mode: 'test',
      bank_account_id: merchant.bank_account_id,
      status: 'active',
      kind: 'recurring',
    };
    for (const column of requestColumns) {
      if (column.name in row || !column.required) continue;
      row[column.name] = /int|numeric/i.test(column.type) ? 0 : 'x';
    }
    await db
      .insertInto('requests')
      .values(row as never)
      .execute();
    return id;
  };
  const [r1, r2, r3, r4, r5] = [await request(), await request(), await request(), await request(), await request()];

  await sql`insert into consent_authorisations (state, request_id, bank_id, bank_consent_id, details, outcome, created_at, completed_at)
    values ('c-pending', ${r1}, 'sandbox', 'bc-1', '{"first_name":"A"}', null, 1, null),
           ('c-declined', ${r2}, 'sandbox', 'bc-2', null, 'declined', 2, 3)`.execute(db);
  await sql`insert into subscription_authorisations (state, request_id, bank_id, bank_consent_id, payer_details, channel, outcome, subscription_id, created_at, updated_at)
    values ('s-pending', ${r3}, 'sandbox', 'bs-1', null, 'page', 'pending', null, 4, 4),
           ('s-active', ${r4}, 'sandbox', 'bs-2', '{"email":"p@example.com"}', 'embed', 'active', 'subscription_x', 5, 6),
           ('s-failed', ${r5}, 'sandbox', 'bs-3', null, 'api', 'failed', null, 7, 8)`.execute(db);

  await migrateToLatest(db);
  const rows = await db.selectFrom('enduring_authorisations').selectAll().orderBy('created_at').execute();
  assert.deepEqual(
    rows.map((r) => [
      r.state,
      r.kind,
      r.outcome,
      r.object_id,
      r.channel,
      r.completed_at === null ? null : Number(r.completed_at),
    ]),
    [
      ['c-pending', 'recurring', null, null, null, null],
      ['c-declined', 'recurring', 'declined', null, null, 3],
      ['s-pending', 'subscription', null, null, 'page', null],
      ['s-active', 'subscription', 'authorised', 'subscription_x', 'embed', 6],
      ['s-failed', 'subscription', 'failed', null, 'api', 8],
    ],
  );
  assert.equal(rows[0].details, '{"first_name":"A"}');
  assert.equal(rows[3].details, '{"email":"p@example.com"}');
  const tables = await db.introspection.getTables();
  assert.ok(
    !tables.some((table) => table.name === 'consent_authorisations' || table.name === 'subscription_authorisations'),
    'the old tables are gone',
  );
});
