import { test } from 'node:test';
import assert from 'node:assert/strict';
import pino from 'pino';
import { sql } from 'kysely';
import { engine, freshDb, stoppedBeforeRelease } from '../../test/helpers.ts';
import type { Db } from '../store/db.ts';
import { migrateToLatest } from '../store/migrate.ts';
import { transact } from '../store/store.ts';
import { BatchLane, type BatchLaneKind } from './batch-lane.ts';
import { enqueue } from './queue.ts';

// The kinds this test makes up.
declare module './queue.ts' {
  interface JobPayloads {
    'test.capped': { n: number };
    'test.full': { n: number };
    'test.sliced': { n: number };
    'test.stopping': { n: number };
    'test.leased': { n: number };
    'test.unloaded': { n: number };
  }
}
type NumberedKind = 'test.capped' | 'test.full' | 'test.sliced' | 'test.stopping' | 'test.leased' | 'test.unloaded';

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

/** Whether no job of `kind` is left (a batch's jobs go in the transaction that records it). */
async function noJobsOf(db: Db, kind: string): Promise<boolean> {
  return (await db.selectFrom('jobs').select('id').where('kind', '=', kind).execute()).length === 0;
}

/** A lane kind whose jobs carry a number: `run` gets it, and each recorded batch's numbers go to `onRecord`. */
function numberedKind(
  kind: string,
  run: (n: number) => Promise<number>,
  onRecord: (numbers: number[]) => void,
  keyOf: (payload: { n: number }) => string = () => 'one endpoint',
): BatchLaneKind<{ n: number }, number, number> {
  return {
    kind,
    keyOf,
    load: async (_db, jobs) => jobs.map((job) => job.payload.n),
    run,
    settlement: () => ({ retryAt: null }),
    record: async (_trx, outcomes) => onRecord(outcomes.map((o) => o.outcome)),
  };
}

/** Runs `before` ahead of each of the kind's loads; what it throws fails that load. */
function beforeEachLoad(kind: BatchLaneKind<{ n: number }, number, number>, before: () => Promise<void>): void {
  const load = kind.load;
  kind.load = async (db, jobs) => {
    await before();
    return load(db, jobs);
  };
}

/** Queues jobs 1..count of the kind, each due at runAt(n). */
async function enqueueNumbered(
  db: Db,
  kind: NumberedKind,
  count: number,
  runAt: (n: number) => number,
  now: number,
): Promise<void> {
  await transact(db, async (trx) => {
    for (let n = 1; n <= count; n += 1)
      await enqueue(trx, { kind, runAt: runAt(n), payload: { n }, batched: true }, now);
  });
}

test("a key's slot frees when its run finishes, before its batch is recorded", async (t) => {
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
  const kind = numberedKind(
    'test.capped',
    async (n) => {
      started.push(n);
      mostUnderWay = Math.max(mostUnderWay, (underWay += 1));
      if (n === 1) await firstHeld;
      underWay -= 1;
      return n;
    },
    (numbers) => records.push(numbers),
  );
  await enqueueNumbered(db, 'test.capped', 3, (n) => start - 1000 + n, start);
  // Results are gathered for 200 ms before they are recorded: ample for a claim, so the order below does not hang on timing.
  const lane = new BatchLane(kind, {
    db,
    log: pino({ level: 'silent' }),
    clock,
    perKey: 1,
    pollMs: 10,
    flushGatherMs: 200,
  });
  lane.start();
  // Stopping waits for runs under way: a failed assertion must not leave the first one held.
  t.after(() => {
    releaseFirst();
    return lane.stop();
  });

  await until(() => started.length === 1, 'the first run');
  const putOff = async () =>
    (
      await db
        .selectFrom('jobs')
        .select('run_at')
        .where('kind', '=', 'test.capped')
        .where('locked_by', 'is', null)
        .execute()
    ).filter((job) => Number(job.run_at) > start).length;
  await until(async () => (await putOff()) === 2, "the key's other jobs to be put off");
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
  // A batch is recorded inside the transaction that deletes its jobs: they are gone once it commits.
  await until(() => noJobsOf(db, 'test.capped'), 'each job to be deleted once recorded');
});

test('a key that stays full is put off further each time, up to a second, and runs once it frees', async (t) => {
  const testDb = await freshDb();
  t.after(() => testDb.drop());
  const { db } = testDb;
  await migrateToLatest(db);

  let releaseFirst!: () => void;
  const firstHeld = new Promise<void>((resolve) => (releaseFirst = resolve));
  const started: number[] = [];
  const recorded: number[] = [];
  const kind = numberedKind(
    'test.full',
    async (n) => {
      started.push(n);
      if (n === 1) await firstHeld;
      return n;
    },
    (numbers) => recorded.push(...numbers),
  );
  const now = Date.now();
  await enqueueNumbered(db, 'test.full', 3, (n) => now - 1000 + n, now);
  const lane = new BatchLane(kind, { db, log: pino({ level: 'silent' }), perKey: 1, pollMs: 5 });
  lane.start();
  // Stopping waits for runs under way: a failed assertion must not leave the first one held.
  t.after(() => {
    releaseFirst();
    return lane.stop();
  });

  // While the first run hangs, its key's other jobs are put off again and again, each time further.
  const putOffBy = async () => {
    const waiting = await db
      .selectFrom('jobs')
      .select('run_at')
      .where('kind', '=', 'test.full')
      .where('locked_by', 'is', null)
      .execute();
    return Math.max(...waiting.map((job) => Number(job.run_at) - Date.now()));
  };
  await until(async () => (await putOffBy()) >= 300, 'the put-off to grow past 300 ms (it starts at 10-40 ms)');
  for (let i = 0; i < 20; i += 1) {
    assert.ok((await putOffBy()) <= 1_030, 'never put off by more than a second (and its jitter)');
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
  assert.deepEqual(started, [1]);

  releaseFirst();
  await until(() => recorded.length === 3, 'every job to run once the key frees');
  assert.deepEqual(started, [1, 2, 3]);
});

test('a claimed batch is started a few milliseconds at a time, with turns of the event loop between', async (t) => {
  const testDb = await freshDb();
  t.after(() => testDb.drop());
  const { db } = testDb;
  await migrateToLatest(db);

  // A probe that counts turns of the event loop; each run notes the turn it started in.
  let turn = 0;
  let probing = true;
  const probe = () => {
    turn += 1;
    if (probing) setImmediate(probe);
  };
  setImmediate(probe);
  t.after(() => (probing = false));

  const count = 60;
  const startedIn: number[] = [];
  const recorded: number[] = [];
  const kind = numberedKind(
    'test.sliced',
    async (n) => {
      startedIn.push(turn);
      // Two milliseconds of synchronous work as the run starts (composing a message, signing a body).
      const until = performance.now() + 2;
      while (performance.now() < until);
      return n;
    },
    (numbers) => recorded.push(...numbers),
    (payload) => `key ${payload.n}`,
  );
  const now = Date.now();
  await enqueueNumbered(db, 'test.sliced', count, () => now - 1000, now);
  const lane = new BatchLane(kind, { db, log: pino({ level: 'silent' }), pollMs: 5 });
  lane.start();
  t.after(() => lane.stop());

  await until(() => recorded.length === count, 'every job to be recorded');
  assert.deepEqual(
    recorded.sort((a, b) => a - b),
    Array.from({ length: count }, (_, i) => i + 1),
    'each job ran once',
  );
  // One claim takes all 60; started all at once they would share one turn (120 ms of work). In
  // slices of 5 ms, a turn starts at most two slices' worth: six.
  const turns = new Set(startedIn);
  assert.ok(turns.size >= 5, `the starts spread over ${turns.size} turns`);
  const mostInOneTurn = Math.max(...[...turns].map((at) => startedIn.filter((t) => t === at).length));
  assert.ok(mostInOneTurn <= 12, `at most a few starts in one turn, not ${mostInOneTurn}`);
  // Recorded inside the transaction that deletes the jobs: they are gone once it commits.
  await until(() => noJobsOf(db, 'test.sliced'), 'every job to be deleted once recorded');
});

test('stopping waits for a claim under way and the runs it took, so none starts after the database closes', async (t) => {
  const testDb = await freshDb();
  t.after(() => testDb.drop());
  const { db } = testDb;
  await migrateToLatest(db);
  const now = Date.now();
  await enqueueNumbered(db, 'test.stopping', 2, () => now - 1000, now);
  const inClaim = Promise.withResolvers<void>();
  const held = Promise.withResolvers<void>();
  const ran: number[] = [];
  const records: number[][] = [];
  const kind = numberedKind(
    'test.stopping',
    async (n) => {
      ran.push(n);
      return n;
    },
    (numbers) => records.push(numbers),
  );
  // The claim loads its jobs' work once it has committed: held here until the test says.
  beforeEachLoad(kind, async () => {
    inClaim.resolve();
    await held.promise;
  });
  const lane = new BatchLane(kind, { db, log: pino({ level: 'silent' }), pollMs: 10, flushGatherMs: 5 });
  lane.start();
  await inClaim.promise;
  assert.equal(
    await stoppedBeforeRelease(() => lane.stop(), held.resolve),
    false,
    'stop waits while a claim is under way',
  );
  assert.deepEqual(ran.sort(), [1, 2], 'the claimed jobs ran before stop returned');
  assert.deepEqual(records.flat().sort(), [1, 2], 'and were recorded');
  assert.equal((await db.selectFrom('jobs').select('id').execute()).length, 0);
});

test('a claim whose load fails leaves its jobs claimed; once their leases lapse they run, once', async (t) => {
  const testDb = await freshDb();
  t.after(() => testDb.drop());
  const { db } = testDb;
  await migrateToLatest(db);
  const now = Date.now();
  await enqueueNumbered(db, 'test.unloaded', 2, () => now - 1000, now);
  const ran: number[] = [];
  const records: number[][] = [];
  const kind = numberedKind(
    'test.unloaded',
    async (n) => {
      ran.push(n);
      return n;
    },
    (numbers) => records.push(numbers),
  );
  let loads = 0;
  beforeEachLoad(kind, async () => {
    loads += 1;
    if (loads === 1) throw new Error('the database went away');
  });
  const lane = new BatchLane(kind, { db, log: pino({ level: 'silent' }), pollMs: 10, leaseMs: 300 });
  lane.start();
  t.after(() => lane.stop());
  await until(() => loads >= 1, 'the failed load');
  // Claimed and not run: no other claim takes them while their lease holds.
  const held = await db
    .selectFrom('jobs')
    .select(['locked_by', 'attempts'])
    .where('kind', '=', 'test.unloaded')
    .execute();
  assert.equal(held.length, 2);
  for (const job of held) assert.equal(job.locked_by, lane.id);
  assert.deepEqual(ran, []);
  await until(async () => records.flat().length === 2 && (await noJobsOf(db, 'test.unloaded')), 'the jobs run again');
  assert.deepEqual(ran.sort(), [1, 2], 'each ran once');
  assert.equal(loads, 2);
});

test('PostgreSQL: renewing leases skips a job whose row another transaction holds, and waits for nothing', {
  skip: engine !== 'postgres' ? 'SQLite has no row locks: its writers take turns' : false,
}, async (t) => {
  const testDb = await freshDb();
  t.after(() => testDb.drop());
  const { db } = testDb;
  await migrateToLatest(db);
  const held = Promise.withResolvers<void>();
  const started: number[] = [];
  const kind = numberedKind(
    'test.leased',
    async (n) => {
      started.push(n);
      await held.promise;
      return n;
    },
    () => {},
    (payload) => `endpoint ${payload.n}`,
  );
  await enqueueNumbered(db, 'test.leased', 2, () => Date.now() - 1000, Date.now());
  // A beat every 100 ms.
  const lane = new BatchLane(kind, { db, log: pino({ level: 'silent' }), pollMs: 10, leaseMs: 300 });
  lane.start();
  t.after(() => {
    held.resolve();
    return lane.stop();
  });
  await until(() => started.length === 2, 'both runs');
  const leases = async () =>
    Object.fromEntries(
      (await db.selectFrom('jobs').select(['payload', 'locked_until']).where('kind', '=', 'test.leased').execute()).map(
        (job) => [JSON.parse(job.payload).n as number, Number(job.locked_until)],
      ),
    );

  // Another transaction holds job 1's row (what the lane's recording of it does) for five beats.
  const holder = Promise.withResolvers<void>();
  const holderXid = Promise.withResolvers<string>();
  const holding = transact(db, async (trx) => {
    await trx
      .selectFrom('jobs')
      .select('id')
      .where('kind', '=', 'test.leased')
      .where(sql<boolean>`payload::jsonb ->> 'n' = '1'`)
      .forUpdate()
      .execute();
    const { rows } = await sql<{ xid: string }>`select pg_current_xact_id()::text as xid`.execute(trx);
    holderXid.resolve(rows[0].xid);
    await holder.promise;
  });
  const xid = await holderXid.promise;
  const before = await leases();
  await new Promise((resolve) => setTimeout(resolve, 500));
  const during = await leases();
  // Who waits for the holder's transaction (other tests' backends share the database, not this lock).
  const waiting = await sql<{ pid: number }>`
    select pid from pg_locks where locktype = 'transactionid' and transactionid::text = ${xid} and not granted`.execute(
    db,
  );
  holder.resolve();
  await holding;
  assert.deepEqual(waiting.rows, [], 'no renewal waits on the held row');
  assert.equal(during[1], before[1], 'the held job is skipped');
  assert.ok(during[2]! > before[2]!, 'the other job is renewed meanwhile');
  await until(async () => (await leases())[1]! > during[1]!, "the held job's lease renewed once it is free");
});
