import { test } from 'node:test';
import assert from 'node:assert/strict';
import fc from 'fast-check';
import { CompiledQuery } from 'kysely';
import { stringify } from 'safe-stable-stringify';
import { buildTestApp, createTestMerchant, engine } from '../../../test/helpers.ts';
import { listAudit, listAuditQuery, type AuditFilters } from './audit.repo.ts';
import {
  chainCommitted,
  maskSecret,
  recordAudit,
  summaryText,
  verifyChains,
  type AuditEntry,
} from './audit.service.ts';

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
  await chainCommitted(app.deps.db);
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

test("a person's changes are found through the people index, a key's in the merchant's newest-first order", async (t) => {
  const app = await buildTestApp(t);
  const merchant = await createTestMerchant(app);
  const record = (n: number, actor: AuditEntry['actor']) =>
    app.deps.store.transaction((trx) =>
      recordAudit(trx, {
        userId: merchant.userId,
        mode: 'test',
        actor,
        action: 'thing.poke',
        objectId: `thing_${n}`,
        at: n,
      }),
    );
  for (let n = 0; n < 6; n++) await record(n, { kind: 'api_key', id: 'key_one' });
  await record(6, { kind: 'payer', email: 'pat@example.com' });
  await record(7, { kind: 'operator', name: 'ops' });
  await record(8, { kind: 'api_key', id: 'key_two' });
  await chainCommitted(app.deps.db);
  const objects = async (filters: Partial<AuditFilters>) =>
    (await listAudit(app.deps.db, merchant.userId, null, { limit: 100, ...filters })).map((row) => row.object_id);
  assert.deepEqual(await objects({ actor_kind: 'payer', actor_id: 'pat@example.com' }), ['thing_6']);
  assert.deepEqual(await objects({ actor_id: 'ops' }), ['thing_7']);
  assert.deepEqual(
    await objects({ actor_kind: 'api_key', actor_id: 'key_one' }),
    [5, 4, 3, 2, 1, 0].map((n) => `thing_${n}`),
  );
  assert.deepEqual(await objects({ actor_id: 'key_two', limit: 1 }), ['thing_8']);
  assert.deepEqual(await objects({ actor_kind: 'member', actor_id: 'pat@example.com' }), []);

  if (engine !== 'sqlite') return t.diagnostic('query plans are checked on SQLite, whose planner has no statistics');
  const plan = async (filters: Partial<AuditFilters>) => {
    const { sql, parameters } = listAuditQuery(app.deps.db, merchant.userId, null, {
      limit: 100,
      ...filters,
    }).compile();
    const rows = await app.deps.db.executeQuery<{ detail: string }>(
      CompiledQuery.raw(`explain query plan ${sql}`, [...parameters]),
    );
    return rows.rows.map((row) => row.detail).join('; ');
  };
  assert.match(await plan({ actor_kind: 'member', actor_id: 'mem_x' }), /audit_events_people/);
  assert.match(
    await plan({ actor_kind: 'api_key', actor_id: 'key_one' }),
    /audit_events_user_seq|sqlite_autoindex_audit_events_2/,
  );
});

test('a summary is stored with every secret masked, whatever its shape, and the caller’s object is left as it was', () => {
  // The masking as a plain rebuild of every value, against which the stored text is checked.
  const rebuilt = (value: unknown, key: string): unknown => {
    if (value === null || value === undefined) return value;
    if (/password|passcode|otp|recovery|^code$/i.test(key)) return '•••';
    if (/secret|token|^key$|api_key$/i.test(key) && typeof value === 'string') return maskSecret(value);
    if (Array.isArray(value)) return value.map((item) => rebuilt(item, ''));
    if (typeof value === 'object')
      return Object.fromEntries(Object.entries(value).map(([name, inner]) => [name, rebuilt(inner, name)]));
    return value;
  };
  const key = fc.constantFrom(
    'amount',
    'password',
    'new_password',
    'code',
    'codes',
    'webhook_secret',
    'token',
    'key',
    'api_key',
    'status',
    'otp',
    'note',
  );
  const nested = fc.letrec((tie) => ({
    value: fc.oneof(fc.jsonValue({ maxDepth: 1 }), fc.array(tie('value'), { maxLength: 3 }), tie('object')),
    object: fc.dictionary(key, tie('value'), { maxKeys: 4 }),
  }));
  const summary = nested.object as fc.Arbitrary<Record<string, unknown>>;
  fc.assert(
    fc.property(summary, (value) => {
      const before = JSON.stringify(value);
      assert.equal(summaryText(value), stringify(rebuilt(value, '')));
      assert.equal(JSON.stringify(value), before);
    }),
  );
});
