import { test } from 'node:test';
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import pino from 'pino';
import { sql } from 'kysely';
import { freshDb, testConfig } from '../../../test/helpers.ts';
import { createSecretBox } from '../../shared/secret-box.ts';
import { systemClock } from '../../shared/time.ts';
import { migrateTo, migrateToLatest } from '../../store/migrate.ts';
import { createMerchant } from '../merchants/merchants.service.ts';
import type { Ctx, Deps } from '../context.ts';
import { createRequest } from '../requests/requests.service.ts';

// Migration 0017 moves the authorisations of recurring consents and of subscriptions into one
// table, with one vocabulary of outcomes, and keeps which consent or subscription each created.

test('0017 moves both kinds of authorisation into enduring_authorisations', async (t) => {
  const { db, drop } = await freshDb();
  t.after(drop);
  await migrateTo(db, '0016-payer-accounts');
  const merchant = await createMerchant(db, systemClock, { name: 'Shop', email: 'shop@example.com', bankAccount: '12-3456-7890138-00' });
  const deps = { config: testConfig(), secrets: createSecretBox(randomBytes(32)), db, clock: systemClock } as unknown as Deps;
  const ctx = { deps, db, merchant: { id: merchant.user_id, name: 'Shop' }, mode: 'test', clock: systemClock, log: pino({ level: 'silent' }) } as Ctx;
  const request = async () => (await createRequest(ctx, { bank_account_id: merchant.bank_account_id!, message: 'Box', amount: '10.00 NZD' } as never)).body.request.id;
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
  assert.deepEqual(rows.map((r) => [r.state, r.kind, r.outcome, r.object_id, r.channel, r.completed_at === null ? null : Number(r.completed_at)]), [
    ['c-pending', 'recurring', null, null, null, null],
    ['c-declined', 'recurring', 'declined', null, null, 3],
    ['s-pending', 'subscription', null, null, 'page', null],
    ['s-active', 'subscription', 'authorised', 'subscription_x', 'embed', 6],
    ['s-failed', 'subscription', 'failed', null, 'api', 8],
  ]);
  assert.equal(rows[0].details, '{"first_name":"A"}');
  assert.equal(rows[3].details, '{"email":"p@example.com"}');
  const tables = await db.introspection.getTables();
  assert.ok(!tables.some((table) => table.name === 'consent_authorisations' || table.name === 'subscription_authorisations'), 'the old tables are gone');
});
