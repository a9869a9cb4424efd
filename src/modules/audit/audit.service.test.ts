import { test } from 'node:test';
import assert from 'node:assert/strict';
import { buildTestApp, createTestMerchant } from '../../../test/helpers.ts';
import { recordAudit, verifyChains } from './audit.service.ts';

test('records chain per merchant, in their transaction, and verify on either engine', async (t) => {
  const app = await buildTestApp(t);
  const a = await createTestMerchant(app);
  const b = await createTestMerchant(app);
  const entry = (userId: string, n: number) => ({
    userId,
    mode: 'test' as const,
    actor: { kind: 'operator' as const, name: 'ops' },
    action: 'thing.poke',
    objectId: `thing_${n}`,
    summary: { n, note: 'é ☃ "quoted"', webhook_secret: 'whsec_abcdefgh1234', password: 'hunter2' },
    at: 1_700_000_000_000 + n,
  });
  // Concurrent writers on the same merchant take turns on its head row.
  await Promise.all(
    Array.from({ length: 12 }, (_, n) =>
      app.deps.store.transaction(async (trx) => {
        await recordAudit(trx, entry(a.userId, n));
        await recordAudit(trx, entry(b.userId, n));
      }),
    ),
  );
  await assert.rejects(
    app.deps.store.transaction(async (trx) => {
      await recordAudit(trx, entry(a.userId, 99));
      throw new Error('the change failed');
    }),
  );
  const rows = await app.deps.db
    .selectFrom('audit_events')
    .selectAll()
    .where('user_id', '=', a.userId)
    .where('action', '=', 'thing.poke')
    .orderBy('seq')
    .execute();
  assert.deepEqual(
    rows.map((row) => Number(row.seq)),
    // after the merchant's four records of its set-up (merchant, bank account, two keys)
    Array.from({ length: 12 }, (_, n) => n + 5),
  );
  assert.ok(!rows.some((row) => row.object_id === 'thing_99'), 'a rolled back change leaves no record');
  const summary = JSON.parse(rows[0]!.summary);
  assert.equal(summary.webhook_secret, 'whsec_…1234');
  assert.equal(summary.password, '•••');
  const reports = await verifyChains(app.deps.db);
  const mine = reports.filter((report) => report.userId === a.userId || report.userId === b.userId);
  assert.equal(mine.length, 2);
  for (const report of mine)
    assert.deepEqual({ records: report.records, broken: report.broken }, { records: 16, broken: null });
});
