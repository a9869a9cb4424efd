import { test } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import pino from 'pino';
import { sql } from 'kysely';
import { createRuntime } from '../../src/runtime.ts';
import { openDb } from '../../src/store/store.ts';
import { sealStoredSecrets } from '../../src/modules/index.ts';
import { verifyWebhookSignature } from '../../src/modules/webhooks/verify.js';
import { startReceiver } from '../support/webhook-receiver.ts';
import { apiClient, createTestMerchant, engine, freshDb, testConfig } from '../helpers.ts';

// Secrets at rest (docs/security.md): after a whole recurring flow, with webhooks, retries, a resend
// and a subscription, no file under DATA_DIR and no row of the PostgreSQL schema holds the recurring
// token, a webhook secret or a bank access token in clear; and the token reaches, in clear, only
// deliveries to endpoints that existed when the consent was authorised.

function filesUnder(dir: string): string[] {
  return fs.readdirSync(dir, { withFileTypes: true }).flatMap((entry) => {
    const full = path.join(dir, entry.name);
    return entry.isDirectory() ? filesUnder(full) : [full];
  });
}

async function until<T>(probe: () => Promise<T | undefined> | T | undefined, timeoutMs = 20_000): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const value = await probe();
    if (value !== undefined) return value;
    if (Date.now() > deadline) throw new Error('condition not met in time');
    await new Promise((resolve) => setTimeout(resolve, 25));
  }
}

test('no secret is stored in clear, and the token goes in clear only to the endpoints that existed at authorisation', async (t) => {
  const dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'tono-secrets-'));
  t.after(() => fs.rmSync(dataDir, { recursive: true, force: true }));
  // SQLite: the service's own file under DATA_DIR. PostgreSQL: a fresh schema, dumped below.
  const pgDb = engine === 'postgres' ? await freshDb() : null;
  const runtime = await createRuntime(testConfig({ dataDir, workers: true }), {
    db: pgDb?.db,
    log: pino({ level: 'silent' }),
  });
  let closed = false;
  const close = async () => {
    if (closed) return;
    closed = true;
    await runtime.close();
  };
  t.after(async () => {
    await close();
    await pgDb?.drop();
  });
  runtime.deps.config.publicBaseUrl = (await runtime.app.listen({ port: 0, host: '127.0.0.1' })).replace(
    'localhost',
    '127.0.0.1',
  );
  const merchant = await createTestMerchant(runtime);
  const api = apiClient(runtime, merchant.testKey);

  // Endpoint A exists before the authorisation; its first try gets a 500, so a retry follows.
  const a = await startReceiver((_request, index) => ({ status: index === 0 ? 500 : 204 }));
  const b = await startReceiver();
  t.after(() => Promise.all([a.close(), b.close()]));
  const hookA = (
    await api.post(
      '/v1/webhooks',
      { url: a.url, events: ['recurring_payment.authorised'] },
      { headers: { 'idempotency-key': 'hook-a' } },
    )
  ).body.webhook;
  assert.ok(hookA.secret);

  const request = (
    await api.post('/v1/requests', {
      bank_account_id: merchant.bankAccountId,
      message: 'Weekly box',
      recurring_options: { period: 'weekly', max_per_period: '100.00 NZD' },
      cust_info: { email: 'pat@example.com' },
    })
  ).body.request;
  const consent = (await api.post(`/v1/test-helpers/requests/${request.id}/pay`, {})).body.recurring_consent;
  const [firstTry, retry] = await a.waitFor(2);
  const token = retry.body.data.token as string;
  assert.match(token, /^rct_[A-Za-z0-9_-]{43}$/);
  assert.equal(firstTry.body.data.token, token, 'the first try carried it too');
  for (const delivery of [firstTry, retry])
    assert.ok(verifyWebhookSignature(delivery.raw, delivery.headers['x-service-signature'] as string, hookA.secret));
  const masked = `rct_…${token.slice(-4)}`;

  // The API shows it masked; an endpoint created later gets it masked on resend, A gets it in clear again.
  const event = (await api.get('/v1/events', { query: { type: 'recurring_payment.authorised' } })).body.events[0];
  assert.equal(event.data.token, masked);
  assert.equal((await api.get(`/v1/events/${event.id}`)).body.event.data.token, masked);
  const hookB = (await api.post('/v1/webhooks', { url: b.url })).body.webhook;
  assert.equal((await api.post(`/v1/events/${event.id}/resend`, {})).status, 200);
  await a.waitFor(3);
  const [toB] = await b.waitFor(1);
  assert.equal(a.received[2].body.data.token, token);
  assert.equal(toB.body.id, event.id);
  assert.equal(toB.body.data.token, masked);
  assert.ok(!toB.raw.toString('utf8').includes(token));
  assert.ok(verifyWebhookSignature(toB.raw, toB.headers['x-service-signature'] as string, hookB.secret));
  // A resend aimed at B by name is masked too.
  assert.equal((await api.post(`/v1/events/${event.id}/resend`, { webhook_id: hookB.id })).status, 200);
  await b.waitFor(2);
  assert.equal(b.received[1].body.data.token, masked);

  // The token works, and a subscription stores its bank access token too.
  assert.equal((await api.post('/v1/payments', { token, amount: '5.00 NZD', idempotency_key: 'first' })).status, 201);
  const subRequest = (
    await api.post('/v1/requests', {
      bank_account_id: merchant.bankAccountId,
      message: 'Coffee club',
      subscription_options: { amount: '9.00 NZD', period: 'monthly' },
      cust_info: { email: 'pat@example.com' },
    })
  ).body.request;
  const subscription = (await api.post(`/v1/test-helpers/requests/${subRequest.id}/pay`, {})).body.subscription;
  await until(async () =>
    (await api.get(`/v1/subscriptions/${subscription.id}`)).body.subscription.successful_charges === 1
      ? true
      : undefined,
  );

  const db = runtime.deps.db;
  const storedConsent = await db
    .selectFrom('recurring_consents')
    .select('bank_access_token')
    .where('id', '=', consent.id)
    .executeTakeFirstOrThrow();
  const storedSub = await db
    .selectFrom('subscriptions')
    .select('bank_access_token')
    .where('id', '=', subscription.id)
    .executeTakeFirstOrThrow();
  const secrets = {
    token,
    'webhook secret A': hookA.secret as string,
    'webhook secret B': hookB.secret as string,
    'consent bank access token': runtime.deps.secrets.open(storedConsent.bank_access_token),
    'subscription bank access token': runtime.deps.secrets.open(storedSub.bank_access_token),
  };
  for (const value of Object.values(secrets)) assert.ok(value.length >= 16);

  let dump = '';
  if (engine === 'postgres') {
    const { rows } = await sql<{
      name: string;
    }>`select table_name as name from information_schema.tables where table_schema = current_schema()`.execute(db);
    assert.ok(rows.length > 10);
    for (const { name } of rows) dump += JSON.stringify((await sql`select * from ${sql.table(name)}`.execute(db)).rows);
  }
  const assertNoneInFiles = (when: string) => {
    const files = filesUnder(dataDir);
    for (const [name, value] of Object.entries(secrets)) {
      for (const file of files)
        assert.equal(
          fs.readFileSync(file).includes(Buffer.from(value)),
          false,
          `${name} in clear in ${path.relative(dataDir, file)} ${when}`,
        );
    }
    return files;
  };
  // While running, the SQLite write-ahead log and its index hold the latest writes.
  const running = assertNoneInFiles('while running');
  if (engine === 'sqlite')
    assert.ok(
      running.some((file) => file.endsWith('tono.db-wal')),
      running.join(' '),
    );
  await close();
  const afterwards = assertNoneInFiles('after closing');
  if (engine === 'sqlite')
    assert.ok(
      afterwards.some((file) => file.endsWith('tono.db')),
      afterwards.join(' '),
    );
  for (const [name, value] of Object.entries(secrets))
    assert.equal(dump.includes(value), false, `${name} in clear in the PostgreSQL tables`);
});

test('secrets stored in clear before sealing are sealed once at start, and keep working', async (t) => {
  const testDb = await freshDb();
  t.after(() => testDb.drop());
  const first = await createRuntime(testConfig({ workers: false }), { db: testDb.db, log: pino({ level: 'silent' }) });
  let closed = false;
  t.after(() => (closed ? undefined : first.close()));
  first.deps.config.publicBaseUrl = (await first.app.listen({ port: 0, host: '127.0.0.1' })).replace(
    'localhost',
    '127.0.0.1',
  );
  const merchant = await createTestMerchant(first);
  const api = apiClient(first, merchant.testKey);
  const hook = (
    await api.post(
      '/v1/webhooks',
      { url: 'http://localhost:9/hooks' },
      { headers: { 'idempotency-key': 'legacy-hook' } },
    )
  ).body.webhook;
  const request = (
    await api.post('/v1/requests', {
      bank_account_id: merchant.bankAccountId,
      message: 'Weekly box',
      recurring_options: { period: 'weekly', max_per_period: '100.00 NZD' },
      cust_info: { email: 'pat@example.com' },
    })
  ).body.request;
  const consent = (await api.post(`/v1/test-helpers/requests/${request.id}/pay`, {})).body.recurring_consent;
  const db = first.deps.db;
  const secrets = first.deps.secrets;
  const stored = await db
    .selectFrom('events')
    .select(['id', 'body', 'secret_sealed'])
    .where('type', '=', 'recurring_payment.authorised')
    .executeTakeFirstOrThrow();
  const token = secrets.open(stored.secret_sealed!);
  const bankToken = secrets.open(
    (
      await db
        .selectFrom('recurring_consents')
        .select('bank_access_token')
        .where('id', '=', consent.id)
        .executeTakeFirstOrThrow()
    ).bank_access_token,
  );
  const reply = await db
    .selectFrom('idempotency_keys')
    .select('response')
    .where('key', '=', 'legacy-hook')
    .executeTakeFirstOrThrow();

  // As an older Tono stored them: all in clear, the token inside the event's body.
  const clearBody = JSON.parse(stored.body);
  clearBody.data.token = token;
  await db
    .updateTable('events')
    .set({ body: JSON.stringify(clearBody), secret_sealed: null })
    .where('id', '=', stored.id)
    .execute();
  await db.updateTable('webhook_deliveries').set({ with_secret: 0 }).execute();
  await db.updateTable('webhook_endpoints').set({ secret: hook.secret }).where('id', '=', hook.id).execute();
  await db
    .updateTable('recurring_consents')
    .set({ bank_access_token: bankToken })
    .where('id', '=', consent.id)
    .execute();
  await db
    .updateTable('idempotency_keys')
    .set({ response: secrets.open(reply.response!) })
    .where('key', '=', 'legacy-hook')
    .execute();
  await db.deleteFrom('store_tasks').execute();

  assert.equal(await sealStoredSecrets(db, secrets, 1), true);
  assert.equal(await sealStoredSecrets(db, secrets, 2), false, 'once');
  const endpoint = await db
    .selectFrom('webhook_endpoints')
    .select('secret')
    .where('id', '=', hook.id)
    .executeTakeFirstOrThrow();
  assert.match(endpoint.secret, /^sealed:v1:/);
  assert.equal(secrets.open(endpoint.secret), hook.secret);
  const event = await db
    .selectFrom('events')
    .select(['body', 'secret_sealed'])
    .where('id', '=', stored.id)
    .executeTakeFirstOrThrow();
  assert.equal(JSON.parse(event.body).data.token, `rct_…${token.slice(-4)}`);
  assert.equal(secrets.open(event.secret_sealed!), token);
  const sealedBank = (
    await db
      .selectFrom('recurring_consents')
      .select('bank_access_token')
      .where('id', '=', consent.id)
      .executeTakeFirstOrThrow()
  ).bank_access_token;
  assert.match(sealedBank, /^sealed:v1:/);
  assert.equal(secrets.open(sealedBank), bankToken);
  // They keep working: the consent charges at the bank, the idempotent reply replays the secret.
  const replayed = await api.post(
    '/v1/webhooks',
    { url: 'http://localhost:9/hooks' },
    { headers: { 'idempotency-key': 'legacy-hook' } },
  );
  assert.equal(replayed.body.webhook.secret, hook.secret);
  assert.equal(
    (await api.post('/v1/payments', { token, amount: '5.00 NZD', idempotency_key: 'after-sealing' })).status,
    201,
  );
  closed = true;
  await first.close();
  // a store opened again (as at the next start) is left as it is
  const again = openDb(
    engine === 'postgres'
      ? {
          engine: 'postgres',
          url: process.env.TEST_DATABASE_URL ?? 'postgres://postgres@127.0.0.1:5432/test',
          schema: testDb.schema,
        }
      : { engine: 'sqlite', file: testDb.file! },
  );
  assert.equal((await again.selectFrom('store_tasks').selectAll().execute()).length, 1);
  const dump =
    engine === 'postgres'
      ? JSON.stringify(
          await Promise.all(
            ['events', 'webhook_endpoints', 'recurring_consents', 'idempotency_keys'].map(
              async (name) => (await sql`select * from ${sql.table(name)}`.execute(again)).rows,
            ),
          ),
        )
      : '';
  await again.destroy();
  // Nothing of the clear values is left behind: not in the SQLite file (its WAL checkpointed at close), not in the tables.
  const files = testDb.file ? filesUnder(path.dirname(testDb.file)) : [];
  for (const value of [hook.secret as string, token, bankToken]) {
    assert.equal(dump.includes(value), false, 'in the PostgreSQL tables');
    for (const file of files)
      assert.equal(fs.readFileSync(file).includes(Buffer.from(value)), false, `left in ${file}`);
  }
});
