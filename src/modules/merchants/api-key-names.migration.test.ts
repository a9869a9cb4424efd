import { test } from 'node:test';
import assert from 'node:assert/strict';
import { apiClient, buildTestApp, freshDb } from '../../../test/helpers.ts';
import { migrateTo, migrateToLatest } from '../../store/migrate.ts';
import { createMerchant } from './merchants.service.ts';

// Migration 0037 names the keys made before names existed after their mode, leaves their creator
// unknown, and keeps them full keys that never expire.

test('0037 names existing keys after their mode; they stay full, unexpiring keys', async (t) => {
  const { db, drop } = await freshDb();
  t.after(drop);
  await migrateTo(db, '0033-event-delivery-summaries');
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
  for (const mode of ['live', 'test'])
    await db
      .insertInto('api_keys' as never)
      .values({
        id: `key_${mode}`,
        user_id: 'user_1',
        mode,
        key_hash: `hash_${mode}`,
        hint: 'h',
        created_at: 0,
      } as never)
      .execute();
  await migrateToLatest(db);
  const rows = await db
    .selectFrom('api_keys')
    .select(['id', 'name', 'created_by', 'permissions', 'expires_at'])
    .orderBy('id')
    .execute();
  assert.deepEqual(rows, [
    { id: 'key_live', name: 'Live key', created_by: null, permissions: null, expires_at: null },
    { id: 'key_test', name: 'Test key', created_by: null, permissions: null, expires_at: null },
  ]);
});

test('a new database has the columns, and a key made on it works', async (t) => {
  const app = await buildTestApp(t);
  const created = await createMerchant(app.deps.db, app.deps.clock, {
    name: 'N',
    email: 'n@example.com',
    createdBy: 'operator',
  });
  assert.equal((await apiClient(app, created.test_key).get('/v1/requests')).status, 200);
  const names = await app.deps.db.selectFrom('api_keys').select(['name', 'created_by']).orderBy('name').execute();
  assert.deepEqual(names, [
    { name: 'First live key', created_by: 'operator' },
    { name: 'First test key', created_by: 'operator' },
  ]);
});
