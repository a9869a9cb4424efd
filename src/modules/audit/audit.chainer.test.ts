import { test, type TestContext } from 'node:test';
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import pino from 'pino';
import { sql } from 'kysely';
import { buildTestApp, engine, pgUrl } from '../../../test/helpers.ts';
import type { Db } from '../../store/db.ts';
import { openDb, storeOf } from '../../store/store.ts';
import { AuditChainer, chainCommitted } from './audit.chainer.ts';
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

test('a runner leaves a merchant whose head another process holds to it, chains the others meanwhile, and that merchant once free', {
  skip,
}, async (t) => {
  const app = await buildTestApp(t);
  const db = app.deps.db;
  const [held, free] = [newMerchant(), newMerchant()].sort();
  // Both heads exist: their first records are chained.
  await recordThroughStore(db, held, 0);
  await recordThroughStore(db, free, 0);
  await chainCommitted(db);
  await runnerOn(t, db);

  // Another process's pass holds the first head (locked in user_id order, it would stop a pass that
  // waits for it before the second).
  let release!: () => void;
  const released = new Promise<void>((resolve) => {
    release = resolve;
  });
  let holding!: () => void;
  const holds = new Promise<void>((resolve) => {
    holding = resolve;
  });
  const other = openDb({ engine: 'postgres', url: pgUrl, schema: app.testDb.schema });
  t.after(() => other.destroy());
  const holder = other.transaction().execute(async (trx) => {
    await sql`select seq from audit_heads where user_id = ${held} for update`.execute(trx);
    holding();
    await released;
  });
  await holds;

  // Released however the checks end: a runner waiting for the head would otherwise wait for ever.
  try {
    for (let n = 1; n <= 5; n++) {
      await recordThroughStore(db, held, n);
      await recordThroughStore(db, free, n);
    }
    const until = Date.now() + 5_000;
    while ((await pendingOf(db, free)) > 0) {
      assert.ok(Date.now() < until, "the free merchant's records waited for the held head");
      await new Promise((resolve) => setTimeout(resolve, 20));
    }
    assert.equal(await pendingOf(db, held), 5, 'the held merchant is left to its holder');
  } finally {
    release();
    await holder;
  }
  await verifiedChain(db, free, 6);
  await untilChained(db);
  const chain = await verifiedChain(db, held, 6);
  assert.deepEqual(
    chain.map((row) => row.object_id),
    Array.from({ length: 6 }, (_, n) => `thing_${n}`),
  );
});

async function pendingOf(db: Db, userId: string): Promise<number> {
  const row = await db
    .selectFrom('audit_pending')
    .select((eb) => eb.fn.countAll().as('n'))
    .where('user_id', '=', userId)
    .executeTakeFirstOrThrow();
  return Number(row.n);
}
