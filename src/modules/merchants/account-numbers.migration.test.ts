import { test } from 'node:test';
import assert from 'node:assert/strict';
import { freshDb } from '../../../test/helpers.ts';
import { migrateTo, migrateToLatest } from '../../store/migrate.ts';

// Migration 0028 writes every stored account number in the one form, 2-4-7-2.

test('0028 rewrites account numbers stored with a three-digit suffix, and leaves the rest as they were', async (t) => {
  const { db, drop } = await freshDb();
  t.after(drop);
  await migrateTo(db, '0027-webhook-endpoint-description-and-activity');
  await db
    .insertInto('users' as never)
    .values({
      id: 'user_1',
      name: 'Kōwhai',
      email: 'k@example.com',
      password_hash: 'x',
      created_at: 0,
      updated_at: 0,
    } as never)
    .execute();
  const stored = { bank_1: '12-3456-7890138-000', bank_2: '26-2600-0320871-032', bank_3: '01-0902-0068389-00' };
  for (const [id, number] of Object.entries(stored))
    await db
      .insertInto('bank_accounts' as never)
      .values({ id, user_id: 'user_1', account_number: number, name: null, created_at: 0 } as never)
      .execute();
  await migrateToLatest(db);
  const rows = await db.selectFrom('bank_accounts').select(['id', 'account_number']).orderBy('id').execute();
  assert.deepEqual(
    rows.map((r) => r.account_number),
    ['12-3456-7890138-00', '26-2600-0320871-32', '01-0902-0068389-00'],
  );
});
