import { test } from 'node:test';
import assert from 'node:assert/strict';
import pino from 'pino';
import { freshDb } from '../../test/helpers.ts';
import { migrateToLatest } from '../store/migrate.ts';
import { transact } from '../store/tx.ts';
import { BatchLane, type BatchLaneKind } from './batch-lane.ts';
import { enqueue } from './queue.ts';

// The per-key cap bounds the runs under way for one key (requests open to one webhook endpoint).
// A finished run frees its key's slot at once: its job keeps its lease until its batch is
// recorded, but recording must not hold back the key's next run. On both engines.

async function until(condition: () => boolean | Promise<boolean>, what: string): Promise<void> {
  const deadline = Date.now() + 10_000;
  while (!(await condition())) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((resolve) => setTimeout(resolve, 5));
  }
}

test('a key\'s slot frees when its run finishes, before its batch is recorded', async (t) => {
  const testDb = await freshDb();
  t.after(() => testDb.drop());
  const { db } = testDb;
  await migrateToLatest(db);

  // The lane's own time, moved by hand: jobs put off because their key is busy come due only when the test says.
  const start = Date.now();
  let now = start;
  const clock = { now: () => now };
  let releaseFirst!: () => void;
  const firstHeld = new Promise<void>((resolve) => (releaseFirst = resolve));
  const started: number[] = [];
  const records: number[][] = [];
  let underWay = 0;
  let mostUnderWay = 0;
  const kind: BatchLaneKind<{ n: number }, number, number> = {
    kind: 'test.capped',
    keyOf: () => 'one endpoint',
    load: async (_trx, jobs) => jobs.map((job) => job.payload.n),
    run: async (n) => {
      started.push(n);
      mostUnderWay = Math.max(mostUnderWay, (underWay += 1));
      if (n === 1) await firstHeld;
      underWay -= 1;
      return n;
    },
    settlement: () => ({ retryAt: null }),
    record: async (_trx, outcomes) => {
      records.push(outcomes.map((o) => o.outcome));
    },
  };
  await transact(db, async (trx) => {
    for (let n = 1; n <= 3; n += 1) await enqueue(trx, { kind: 'test.capped', runAt: start - 1000 + n, payload: { n }, batched: true }, start);
  });
  // Results are gathered for 200 ms before they are recorded: ample for a claim, so the order below does not hang on timing.
  const lane = new BatchLane(kind, { db, log: pino({ level: 'silent' }), clock, perKey: 1, pollMs: 10, flushGatherMs: 200 });
  lane.start();
  t.after(() => lane.stop());

  await until(() => started.length === 1, 'the first run');
  const putOff = async () => (await db.selectFrom('jobs').select('run_at').where('kind', '=', 'test.capped').where('locked_by', 'is', null).execute())
    .filter((job) => Number(job.run_at) > start).length;
  await until(async () => (await putOff()) === 2, 'the key\'s other jobs to be put off');
  assert.deepEqual(started, [1]);

  // The put-off jobs come due, and in the same turn the first run finishes.
  now = start + 1_000;
  releaseFirst();
  await until(() => records.length > 0, 'the first record');
  assert.deepEqual(records[0].sort(), [1, 2], 'the second run started and finished before the first was recorded');

  now = start + 5_000;
  await until(() => records.flat().length === 3, 'every job to be recorded');
  assert.deepEqual(started, [1, 2, 3]);
  assert.equal(mostUnderWay, 1, 'never more than the cap under way at once');
  assert.equal((await db.selectFrom('jobs').select('id').where('kind', '=', 'test.capped').execute()).length, 0, 'each job was deleted once recorded');
});
