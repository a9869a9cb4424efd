import { test } from 'node:test';
import assert from 'node:assert/strict';
import { apiClient, buildTestApp, createTestMerchant } from '../../../test/helpers.ts';
import { enqueue } from '../../jobs/queue.ts';
import { DAY_MS } from '../../shared/time.ts';
import { GIVEN_UP_JOBS_KEPT_MS, PRUNE_JOB, pruneOnce, schedulePrune } from './maintenance.service.ts';

// What outlives its retention is pruned: stored idempotent replies once their key has expired
// (a live key by real time, a test key by its merchant's test clock), jobs given up on after 30
// days, rate buckets an hour after their last use; nothing else. On both engines (TEST_ENGINE=postgres for PostgreSQL).

test('expired idempotency keys and old given-up jobs are pruned, and nothing else', async (t) => {
  const app = await buildTestApp(t);
  const merchant = await createTestMerchant(app);
  const live = apiClient(app, merchant.liveKey);
  const testApi = apiClient(app, merchant.testKey);
  const body = { bank_account_id: merchant.bankAccountId, amount: '5.00 NZD', message: 'Kept replies' };
  const key = (value: string) => ({ headers: { 'idempotency-key': value } });
  assert.equal((await live.post('/v1/requests', body, key('live-1'))).status, 201);
  assert.equal((await testApi.post('/v1/requests', body, key('test-1'))).status, 201);
  // the test clock two days on: the test key has expired on the merchant's clock, the live one has not
  assert.equal((await testApi.post('/v1/test-helpers/clock/advance', { seconds: 2 * 86_400 })).status, 200);
  assert.equal((await testApi.post('/v1/requests', body, key('test-2'))).status, 201);

  const { db } = app.deps;
  const now = Date.now();
  await enqueue(db, { kind: PRUNE_JOB, runAt: now + DAY_MS, payload: {}, dedupeKey: 'still-queued' }, now);
  for (const [id, failedAt] of [
    ['job_given_up_long_ago', now - GIVEN_UP_JOBS_KEPT_MS - 60_000],
    ['job_given_up_lately', now - DAY_MS],
  ] as const) {
    await db
      .insertInto('jobs')
      .values({
        id,
        kind: PRUNE_JOB,
        run_at: failedAt,
        clock_id: null,
        payload: '{}',
        lane: null,
        dedupe_key: null,
        locked_by: null,
        locked_until: null,
        last_error: 'gave up',
        failed_at: failedAt,
        created_at: failedAt,
      })
      .execute();
  }
  for (const [key, at] of [
    ['key_idle', now - 2 * 60 * 60_000],
    ['key_busy', now],
  ] as const)
    await db.insertInto('rate_buckets').values({ scope: 'api_calls', key, tokens: 1, at }).execute();
  const keys = async () =>
    (await db.selectFrom('idempotency_keys').select(['mode', 'key']).orderBy('key').execute()).map(
      (row) => `${row.mode}:${row.key}`,
    );
  const jobs = async () => (await db.selectFrom('jobs').select(['id', 'dedupe_key']).execute()).length;

  assert.deepEqual(await keys(), ['live:live-1', 'test:test-1', 'test:test-2']);
  const jobsBefore = await jobs();
  assert.deepEqual(await pruneOnce(app.deps), {
    idempotency_keys: 1,
    jobs: 1,
    rate_buckets: 1,
    webhook_deliveries: 0,
  });
  assert.deepEqual(
    (await db.selectFrom('rate_buckets').select('key').execute()).map((row) => row.key),
    ['key_busy'],
  );
  assert.deepEqual(await keys(), ['live:live-1', 'test:test-2'], 'the test key made two test days ago is gone');
  assert.equal(await jobs(), jobsBefore - 1);
  assert.ok(await db.selectFrom('jobs').select('id').where('id', '=', 'job_given_up_lately').executeTakeFirst());
  // the key pruned is free again, as an expired key always was
  assert.equal((await testApi.post('/v1/requests', body, key('test-1'))).status, 201);

  // a day and a half of real time later, the live key and the fresh test key have expired too
  const later = { ...app.deps, clock: { ...app.deps.clock, now: () => Date.now() + 1.5 * DAY_MS } };
  assert.deepEqual(await pruneOnce(later), { idempotency_keys: 3, jobs: 0, rate_buckets: 1, webhook_deliveries: 0 });
  assert.deepEqual(await keys(), []);
});

test('the prune job is one job, due at start, that asks to run again in an hour', async (t) => {
  const app = await buildTestApp(t);
  await schedulePrune(app.deps);
  await schedulePrune(app.deps);
  const queued = await app.deps.db.selectFrom('jobs').selectAll().where('kind', '=', PRUNE_JOB).execute();
  assert.equal(queued.length, 1);
  const [job] = (await app.deps.worker.claim(10)).filter((claimed) => claimed.kind === PRUNE_JOB);
  assert.ok(job, 'due now');
  await app.deps.worker.run(job);
  const after = await app.deps.db
    .selectFrom('jobs')
    .selectAll()
    .where('kind', '=', PRUNE_JOB)
    .executeTakeFirstOrThrow();
  assert.ok(Math.abs(Number(after.run_at) - (Date.now() + 3_600_000)) < 60_000, 'due again in an hour');
  assert.equal(after.failed_at, null);
});
