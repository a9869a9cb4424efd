import { test, type TestContext } from 'node:test';
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import pino from 'pino';
import { buildTestApp, engine, pgUrl } from '../../../test/helpers.ts';
import type { Db } from '../../store/db.ts';
import { openDb, storeOf } from '../../store/store.ts';
import { AuditChainer } from './audit.chainer.ts';
import { recordAudit, verifyChains } from './audit.service.ts';

// PostgreSQL: records commit unnumbered and are chained after the commit (docs/audit.md,
// "Locking"). SQLite chains in its group commit, which src/modules/audit/audit.service.test.ts covers.
const skip = engine !== 'postgres' && 'records are chained after their commit on PostgreSQL only';
const log = pino({ level: process.env.TEST_LOG_LEVEL ?? 'silent' });

const newMerchant = () => `user_chain_${randomBytes(6).toString('hex')}`;

const poke = (userId: string, n: number | string) => ({
  userId,
  mode: 'test' as const,
  actor: { kind: 'operator' as const, name: 'ops' },
  action: 'thing.poke',
  objectId: `thing_${n}`,
  at: 1_700_000_000_000,
});

/** In a transaction begun outside the store, which runs no commit hooks. */
function record(db: Db, userId: string, n: number): Promise<void> {
  return db.transaction().execute((trx) => recordAudit(trx, poke(userId, n)));
}

function recordThroughStore(db: Db, userId: string, n: number): Promise<void> {
  return storeOf(db).transaction((trx) => recordAudit(trx, poke(userId, n)));
}

async function pendingCount(db: Db): Promise<number> {
  const row = await db
    .selectFrom('audit_pending')
    .select((eb) => eb.fn.countAll().as('n'))
    .executeTakeFirstOrThrow();
  return Number(row.n);
}

/** Waits, without chaining anything itself, until no record is left unchained. */
async function untilChained(db: Db): Promise<void> {
  const until = Date.now() + 10_000;
  while ((await pendingCount(db)) > 0) {
    assert.ok(Date.now() < until, 'records were left unchained');
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
}

async function runnerOn(t: TestContext, db: Db): Promise<AuditChainer> {
  const chainer = new AuditChainer(db, log);
  chainer.start();
  t.after(() => chainer.stop());
  return chainer;
}

/** The merchant's chained records, which must be numbered 1 to `count` and verify. */
async function verifiedChain(db: Db, userId: string, count: number) {
  const chain = await db
    .selectFrom('audit_events')
    .select(['id', 'seq', 'object_id'])
    .where('user_id', '=', userId)
    .orderBy('seq')
    .execute();
  assert.deepEqual(
    chain.map((row) => Number(row.seq)),
    Array.from({ length: count }, (_, n) => n + 1),
  );
  const [report] = await verifyChains(db, userId);
  assert.deepEqual({ records: report!.records, broken: report!.broken }, { records: count, broken: null });
  return chain;
}

test('a runner chains records right after their commit, a change made after another committed after it', {
  skip,
}, async (t) => {
  const app = await buildTestApp(t);
  await runnerOn(t, app.deps.db);
  const merchant = newMerchant();
  for (let n = 0; n < 20; n++) await recordThroughStore(app.deps.db, merchant, n);
  await Promise.all(Array.from({ length: 40 }, (_, n) => recordThroughStore(app.deps.db, merchant, 100 + n)));
  await assert.rejects(
    app.deps.store.transaction(async (trx) => {
      await recordAudit(trx, poke(merchant, 'rolled_back'));
      throw new Error('the change failed');
    }),
  );
  await untilChained(app.deps.db);

  const chain = await verifiedChain(app.deps.db, merchant, 60);
  assert.deepEqual(
    chain.slice(0, 20).map((row) => row.object_id),
    Array.from({ length: 20 }, (_, n) => `thing_${n}`),
    'one after another, in the order they committed',
  );
  assert.ok(!chain.some((row) => row.object_id === 'thing_rolled_back'));
});

test('two processes chaining one merchant at once, its first records included, lose nothing and number nothing twice', {
  skip,
}, async (t) => {
  const app = await buildTestApp(t);
  const other = openDb({ engine: 'postgres', url: pgUrl, schema: app.testDb.schema });
  t.after(() => other.destroy());
  await runnerOn(t, app.deps.db);
  await runnerOn(t, other);
  const merchants = [newMerchant(), newMerchant(), newMerchant()];
  await Promise.all(
    merchants.flatMap((merchant) =>
      Array.from({ length: 60 }, (_, n) => recordThroughStore(n % 2 ? other : app.deps.db, merchant, n)),
    ),
  );
  await untilChained(app.deps.db);

  for (const merchant of merchants) {
    const chain = await verifiedChain(app.deps.db, merchant, 60);
    assert.equal(new Set(chain.map((row) => row.object_id)).size, 60);
  }
});

test("records a process left unchained (it stopped, or runs no workers) are chained by another process's sweep", {
  skip,
}, async (t) => {
  const app = await buildTestApp(t);
  const merchant = newMerchant();
  // A transaction begun outside the store has no commit hook: only a sweep finds its record.
  for (let n = 0; n < 5; n++) await record(app.deps.db, merchant, n);
  for (let n = 5; n < 10; n++) await recordThroughStore(app.deps.db, merchant, n);
  assert.equal(await pendingCount(app.deps.db), 10, 'no runner here: nothing chained them');

  const other = openDb({ engine: 'postgres', url: pgUrl, schema: app.testDb.schema });
  t.after(() => other.destroy());
  await runnerOn(t, other);
  await untilChained(app.deps.db);
  const chain = await verifiedChain(app.deps.db, merchant, 10);
  assert.deepEqual(
    chain.map((row) => row.object_id),
    Array.from({ length: 10 }, (_, n) => `thing_${n}`),
  );
});
