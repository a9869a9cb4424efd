import { test } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import pino from 'pino';
import { freshDb, stoppedBeforeRelease } from '../../test/helpers.ts';
import { migrateToLatest } from '../store/migrate.ts';
import type { FileSync } from '../store/sqlite/wal-syncer.ts';
import { openDb, transact } from '../store/store.ts';
import { enqueue } from './queue.ts';
import { Worker, type RunnableKind } from './worker.ts';

// The kinds this test makes up.
declare module './queue.ts' {
  interface JobPayloads {
    laned: { i: number };
    plain: Record<string, never>;
    send: { id: string };
  }
}

// The generic worker and the batched lanes share the jobs table. A lane's jobs carry their lane and
// sit outside the worker's claim index, so a backlog of them (a run's receipts, a burst of webhook
// deliveries) costs the worker's claims nothing. On both engines.

test("the generic worker claims its own jobs and never a lane's, however many of those are due first", async (t) => {
  const testDb = await freshDb();
  t.after(() => testDb.drop());
  const { db } = testDb;
  await migrateToLatest(db);
  const worker = new Worker({
    db,
    log: pino({ level: 'silent' }),
    kinds: new Map([
      ['plain', { handler: async () => {} }],
      ['laned', { handler: async () => {} }],
    ]),
  });
  await transact(db, async (trx) => {
    for (let i = 0; i < 300; i++) await enqueue(trx, { kind: 'laned', runAt: i, payload: { i }, batched: true });
    await enqueue(trx, { kind: 'plain', runAt: 1_000, payload: {} });
  });
  const claimed = await worker.claim(50);
  assert.deepEqual(
    claimed.map((job) => job.kind),
    ['plain'],
    "the lane's jobs are left to the lane, though due earlier and of a kind this worker knows",
  );
  const laned = await db.selectFrom('jobs').select(['lane', 'locked_by']).where('kind', '=', 'laned').execute();
  assert.equal(laned.length, 300);
  assert.ok(laned.every((row) => row.lane === 'laned' && row.locked_by === null));
  assert.equal(
    (await db.selectFrom('jobs').select('lane').where('kind', '=', 'plain').executeTakeFirstOrThrow()).lane,
    null,
  );
});

test('stopping waits for a claim under way and the jobs it took, so none runs after the database closes', async (t) => {
  const testDb = await freshDb();
  t.after(() => testDb.drop());
  const { db } = testDb;
  await migrateToLatest(db);
  // A job on a test clock: its claim reads the clock's offset, which this test holds back.
  await transact(db, (trx) => enqueue(trx, { kind: 'plain', runAt: 0, clockId: 'clock_held', payload: {} }));
  const inClaim = Promise.withResolvers<void>();
  const held = Promise.withResolvers<void>();
  const ran: string[] = [];
  const worker = new Worker({
    db,
    log: pino({ level: 'silent' }),
    kinds: new Map([['plain', { handler: async () => void ran.push('plain') }]]),
    clockOffsets: async () => {
      inClaim.resolve();
      await held.promise;
      return new Map();
    },
  });
  worker.start();
  await inClaim.promise;
  assert.equal(
    await stoppedBeforeRelease(() => worker.stop(), held.resolve),
    false,
    'stop waits while a claim is under way',
  );
  assert.deepEqual(ran, ['plain'], 'the claimed job ran before stop returned');
  assert.equal((await db.selectFrom('jobs').select('id').execute()).length, 0, 'and was finished');
});

test('on SQLite a claimed job runs only once the commit that queued it is on disk', async (t) => {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'tono-worker-'));
  const file = path.join(dir, 'db.sqlite');
  // The WAL's fsyncs, held while `holding` is true, to see who waits for them.
  let holding = false;
  const heldSyncs: Array<() => void> = [];
  const fsync: FileSync = (fd, done) => {
    const go = () => fs.fsync(fd, done);
    if (holding) heldSyncs.push(go);
    else go();
  };
  const db = openDb({ engine: 'sqlite', file, fsync });
  const ran: string[] = [];
  const worker = new Worker({
    db,
    log: pino({ level: 'silent' }),
    pollMs: 5,
    kinds: new Map([['send', { handler: async (payload: { id: string }) => void ran.push(payload.id) }]]),
  });
  t.after(async () => {
    holding = false;
    for (const go of heldSyncs.splice(0)) go();
    await worker.stop();
    await db.destroy();
    fs.rmSync(dir, { recursive: true, force: true });
  });
  await migrateToLatest(db);
  worker.start();

  holding = true;
  const queued = transact(db, (trx) => enqueue(trx, { kind: 'send', runAt: 0, payload: { id: 'first' } }));
  // The worker polls every 5 ms: it finds the job committed, and leases it, while its fsync is held.
  await new Promise((resolve) => setTimeout(resolve, 200));
  assert.equal(heldSyncs.length, 1, "the job's commit waits for its fsync");
  assert.deepEqual(ran, [], 'not run while the commit that queued it is not on disk');
  holding = false;
  for (const go of heldSyncs.splice(0)) go();
  await queued;
  const until = Date.now() + 5_000;
  while (ran.length === 0 && Date.now() < until) await new Promise((resolve) => setTimeout(resolve, 5));
  assert.deepEqual(ran, ['first']);
});

test('a job running longer than its lease keeps it: the worker renews it, so no other claim takes it', async (t) => {
  const testDb = await freshDb();
  t.after(() => testDb.drop());
  const { db } = testDb;
  await migrateToLatest(db);
  const started = Promise.withResolvers<void>();
  const finish = Promise.withResolvers<void>();
  const runs: string[] = [];
  const kinds = (who: string) =>
    new Map<string, RunnableKind>([
      [
        'plain',
        {
          handler: async () => {
            runs.push(who);
            started.resolve();
            await finish.promise;
            return undefined;
          },
        },
      ],
    ]);
  const log = pino({ level: 'silent' });
  const first = new Worker({ db, log, kinds: kinds('first'), leaseMs: 300, pollMs: 10 });
  const other = new Worker({ db, log, kinds: kinds('other'), leaseMs: 300 });
  t.after(async () => {
    finish.resolve();
    await Promise.all([first.stop(), other.stop()]);
  });
  await transact(db, (trx) => enqueue(trx, { kind: 'plain', runAt: 0, payload: {} }));
  first.start();
  await started.promise;
  // Four leases' worth of claims by another worker while the job runs.
  for (const until = Date.now() + 1_200; Date.now() < until; ) {
    assert.deepEqual(await other.claim(10), [], 'the running job is still leased');
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
  finish.resolve();
  await first.stop();
  assert.deepEqual(runs, ['first']);
  assert.equal((await db.selectFrom('jobs').select('id').execute()).length, 0, 'and it was finished');
});
