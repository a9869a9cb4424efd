import { test } from 'node:test';
import assert from 'node:assert/strict';
import pino from 'pino';
import { loadConfig } from '../config.ts';
import { createRuntime } from '../runtime.ts';
import { apiClient, VALID_ACCOUNT } from '../../test/helpers.ts';
import { openStoreDb, processStore, runCli } from '../../test/process.ts';
import { chainHash } from '../modules/audit/audit.chain.ts';

// `audit verify` against a real database, and what it says when someone edits the audit trail
// behind the service's back: a summary changed, a record deleted, a forged one inserted.

test('audit verify: counts every chain, and names the record altered, removed or inserted in the database', async (t) => {
  const store = await processStore(t, { migrated: true });
  assert.equal((await runCli(store, ['migrate'])).status, 0);
  store.env.TONO_OPERATOR = 'ana';
  const created = await runCli(store, [
    'merchant',
    'create',
    '--name',
    'Kiwi Coffee',
    '--email',
    'owner@kiwi.example',
    '--bank-account',
    VALID_ACCOUNT,
    '--json',
  ]);
  assert.equal(created.status, 0, created.stderr);
  const merchant = JSON.parse(created.stdout);
  const config = { ...loadConfig({ ...store.env, LOG_LEVEL: 'silent', DEMO_MERCHANT: 'false' }), workers: false };
  const runtime = await createRuntime(config, { log: pino({ level: 'silent' }) });
  t.after(() => runtime.close());
  const api = apiClient(runtime, merchant.test_key);
  for (const reference of ['one', 'two', 'three']) {
    const made = await api.post('/v1/requests', {
      amount: '5.00 NZD',
      message: `Order ${reference}`,
      bank_account_id: merchant.bank_account_id,
      reference,
    });
    assert.equal(made.status, 201, made.text);
  }

  const clean = await runCli(store, ['audit', 'verify', '--json']);
  assert.equal(clean.status, 0, clean.stdout + clean.stderr);
  const report = JSON.parse(clean.stdout);
  // merchant.create, bank_account.create, two api_key.create, three request.create
  assert.deepEqual([report.ok, report.merchants, report.records], [true, 1, 7]);
  const text = await runCli(store, ['audit', 'verify', '--merchant', merchant.user_id]);
  assert.equal(text.status, 0);
  assert.match(text.stdout, new RegExp(`${merchant.user_id}  7 records  ok`));

  const db = openStoreDb(store);
  t.after(() => db.destroy());
  const rows = await db.selectFrom('audit_events').selectAll().orderBy('seq').execute(); // the CLI's verify chained them
  // the CLI's changes are the operator's
  assert.deepEqual(
    rows.slice(0, 4).map((row) => [row.action, row.actor_kind, row.actor_id]),
    [
      ['merchant.create', 'operator', 'ana'],
      ['bank_account.create', 'operator', 'ana'],
      ['api_key.create', 'operator', 'ana'],
      ['api_key.create', 'operator', 'ana'],
    ],
  );
  const fifth = rows[4]!;
  const broken = async () => {
    const run = await runCli(store, ['audit', 'verify', '--json']);
    assert.equal(run.status, 1, run.stdout + run.stderr);
    return JSON.parse(run.stdout).chains[0].broken;
  };

  // altered: a summary edited in place
  await db.updateTable('audit_events').set({ summary: '{"amount_cents":1}' }).where('id', '=', fifth.id).execute();
  assert.deepEqual((({ kind, seq, id }) => ({ kind, seq, id }))(await broken()), {
    kind: 'altered',
    seq: 5,
    id: fifth.id,
  });
  const plain = await runCli(store, ['audit', 'verify']);
  assert.equal(plain.status, 1);
  assert.match(plain.stdout, new RegExp(`BROKEN: altered at record 5 \\(${fifth.id}\\)`));
  await db.updateTable('audit_events').set({ summary: fifth.summary }).where('id', '=', fifth.id).execute();
  assert.equal((await runCli(store, ['audit', 'verify'])).status, 0);

  // removed: a record deleted
  await db.deleteFrom('audit_events').where('id', '=', fifth.id).execute();
  assert.deepEqual((({ kind, seq }) => ({ kind, seq }))(await broken()), { kind: 'removed', seq: 5 });
  // the newest one deleted: the head still counts it
  await db.insertInto('audit_events').values(fifth).execute();
  const last = rows.at(-1)!;
  await db.deleteFrom('audit_events').where('id', '=', last.id).execute();
  assert.deepEqual((({ kind, seq }) => ({ kind, seq }))(await broken()), { kind: 'removed', seq: 7 });
  await db.insertInto('audit_events').values(last).execute();
  assert.equal((await runCli(store, ['audit', 'verify'])).status, 0);

  // inserted: a forged record in the fifth's place, hashed properly, but not following the fourth
  await db.deleteFrom('audit_events').where('id', '=', fifth.id).execute();
  const forged = {
    ...fifth,
    id: 'aud_01JD2Q8Z7M3V4K5N6P7R8S9T0V',
    summary: '{"amount_cents":1}',
    prev_hash: rows[0]!.hash,
  };
  const hash = chainHash(forged.prev_hash, { ...forged, seq: Number(forged.seq), at: Number(forged.at) });
  await db
    .insertInto('audit_events')
    .values({ ...forged, hash })
    .execute();
  assert.deepEqual((({ kind, seq, id }) => ({ kind, seq, id }))(await broken()), {
    kind: 'inserted',
    seq: 5,
    id: forged.id,
  });
});

test('audit verify refuses a --merchant that is not a merchant id, and changes nothing', async (t) => {
  const store = await processStore(t, { migrated: true });
  assert.equal((await runCli(store, ['migrate'])).status, 0);
  const run = await runCli(store, ['audit', 'verify', '--merchant', 'bob']);
  assert.equal(run.status, 1);
  assert.equal(run.stderr, 'error: --merchant must be a merchant id (user_…), got "bob"\n');
});
