// Exactly once across crashes and processes: real `node src/main.ts` processes on one database,
// SIGKILLed mid-run and restarted; and, on PostgreSQL, two processes charging one due set.
// engine follows TEST_ENGINE, so `npm test` runs this file on PostgreSQL too.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawn, type ChildProcess } from 'node:child_process';
import fs from 'node:fs';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { randomBytes } from 'node:crypto';
import { sql } from 'kysely';
import { engine, pgUrl } from '../../../test/helpers.ts';
import type { Db } from '../../store/db.ts';
import { openDb } from '../../store/store.ts';

const DAY = 86_400_000;

async function freePort(): Promise<number> {
  return new Promise((resolve) => {
    const server = net.createServer().listen(0, '127.0.0.1', () => {
      const { port } = server.address() as net.AddressInfo;
      server.close(() => resolve(port));
    });
  });
}

type Proc = { child: ChildProcess; url: string; output: () => string };

async function startProcess(env: Record<string, string>): Promise<Proc> {
  const port = await freePort();
  const child = spawn(process.execPath, ['src/main.ts'], {
    env: {
      ...process.env,
      PORT: String(port),
      HOST: '127.0.0.1',
      LOG_LEVEL: 'warn',
      RATE_LIMIT_PER_SECOND: '0',
      ...env,
    },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let out = '';
  child.stdout!.on('data', (chunk) => (out += chunk));
  child.stderr!.on('data', (chunk) => (out += chunk));
  const deadline = Date.now() + 30_000;
  while (!out.includes('Tono is running')) {
    if (child.exitCode !== null || Date.now() > deadline) throw new Error(`process did not start: ${out}`);
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
  return { child, url: `http://127.0.0.1:${port}`, output: () => out };
}

async function stop(proc: Proc, signal: NodeJS.Signals): Promise<void> {
  if (proc.child.exitCode !== null) return;
  const exited = new Promise((resolve) => proc.child.once('exit', resolve));
  proc.child.kill(signal);
  await exited;
}

function client(url: string, key: string) {
  return async (method: string, route: string, body?: unknown) => {
    const response = await fetch(url + route, {
      method,
      headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' },
      body: body === undefined ? undefined : JSON.stringify(body),
    });
    return { status: response.status, body: (await response.json()) as any };
  };
}

type Store = { env: Record<string, string>; db: Db; drop(): Promise<void> };

async function store(): Promise<Store> {
  if (engine === 'postgres') {
    const schema = `t_${randomBytes(6).toString('hex')}`;
    const admin = openDb({ engine: 'postgres', url: pgUrl, poolSize: 1 });
    await sql`create schema ${sql.id(schema)}`.execute(admin);
    const url = `${pgUrl}${pgUrl.includes('?') ? '&' : '?'}options=-c%20search_path%3D${schema}`;
    const db = openDb({ engine: 'postgres', url: pgUrl, schema });
    return {
      env: { DATABASE_URL: url, DATA_DIR: fs.mkdtempSync(path.join(os.tmpdir(), 'tono-crash-')) },
      db,
      async drop() {
        await db.destroy();
        // the schema stays until the next run (see test/helpers.ts)
        await admin.destroy();
      },
    };
  }
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'tono-crash-'));
  return {
    env: { DATA_DIR: dir },
    get db() {
      return openDb({ engine: 'sqlite', file: path.join(dir, 'tono.db') });
    },
    async drop() {
      fs.rmSync(dir, { recursive: true, force: true });
    },
  } as Store;
}

/** A demo merchant's test key and account from the first start, and `count` subscriptions approved (none charged: workers off). */
async function seed(env: Record<string, string>, count: number) {
  const proc = await startProcess({ ...env, WORKERS: 'false', DEMO_MERCHANT: 'true' });
  const key = /test key\s+(sk_test_\S+)/.exec(proc.output())![1];
  const account = /bank account\s+(bankaccount_\S+)/.exec(proc.output())![1];
  const api = client(proc.url, key);
  const ids: string[] = [];
  for (let i = 0; i < count; i += 1) {
    const created = await api('POST', '/v1/requests', {
      bank_account_id: account,
      message: `Plan ${i}`,
      subscription_options: { amount: '15.00 NZD', period: 'weekly' },
      cust_info: { email: `payer${i}@example.com` },
    });
    const paid = await api('POST', `/v1/test-helpers/requests/${created.body.request.id}/pay`, {});
    assert.equal(paid.status, 200, JSON.stringify(paid.body));
    ids.push(paid.body.subscription.id);
  }
  await stop(proc, 'SIGTERM');
  return { key, ids };
}

async function chargesOf(db: Db) {
  const charges = await db
    .selectFrom('subscription_charges')
    .select(['subscription_id', 'slot_date', 'status'])
    .execute();
  const payments = await db
    .selectFrom('payments')
    .select(['subscription_id', 'status'])
    .where('subscription_id', 'is not', null)
    .execute();
  return { charges, payments };
}

async function waitFor(check: () => Promise<boolean>, ms = 60_000): Promise<void> {
  const deadline = Date.now() + ms;
  while (!(await check())) {
    if (Date.now() > deadline) throw new Error('timed out');
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
}

function assertExactlyOnce(ids: string[], found: Awaited<ReturnType<typeof chargesOf>>, slots: number) {
  for (const id of ids) {
    const charges = found.charges.filter((c) => c.subscription_id === id);
    assert.equal(charges.length, slots, `${id}: ${slots} slots`);
    assert.ok(
      charges.every((c) => c.status === 'successful'),
      `${id}: every slot charged`,
    );
    const payments = found.payments.filter((p) => p.subscription_id === id);
    assert.equal(
      payments.filter((p) => p.status === 'successful').length,
      slots,
      `${id}: one successful payment per slot`,
    );
  }
}

test('a process killed mid-run and restarted charges every slot exactly once', { timeout: 360_000 }, async (t) => {
  const s = await store();
  t.after(() => s.drop());
  const { key, ids } = await seed(s.env, 30);
  const db = s.db;
  t.after(() => db.destroy());

  // First charges: kill the worker process as soon as charging has started.
  let proc = await startProcess({ ...s.env, DEMO_MERCHANT: 'false' });
  await waitFor(async () => (await chargesOf(db)).charges.length > 0);
  await stop(proc, 'SIGKILL');
  proc = await startProcess({ ...s.env, DEMO_MERCHANT: 'false' });
  t.after(() => stop(proc, 'SIGKILL'));
  // Jobs the killed process held come back when their 60-second lease runs out.
  await waitFor(
    async () => (await chargesOf(db)).charges.filter((c) => c.status === 'successful').length === ids.length,
    120_000,
  );
  assertExactlyOnce(ids, await chargesOf(db), 1);

  // Two more weeks through the test clock, killed part-way through the advance.
  const api = client(proc.url, key);
  const target = Date.parse((await api('GET', '/v1/test-helpers/clock')).body.clock.now) + 15 * DAY;
  const advancing = api('POST', '/v1/test-helpers/clock/advance', { to: new Date(target).toISOString() }).catch(
    () => null,
  );
  await waitFor(async () => (await chargesOf(db)).charges.length > ids.length);
  await stop(proc, 'SIGKILL');
  await advancing;
  proc = await startProcess({ ...s.env, DEMO_MERCHANT: 'false' });
  const resumed = await client(proc.url, key)('POST', '/v1/test-helpers/clock/advance', {
    to: new Date(target).toISOString(),
  });
  assert.equal(resumed.status, 200, JSON.stringify(resumed.body));
  await waitFor(
    async () => (await chargesOf(db)).charges.filter((c) => c.status === 'successful').length === ids.length * 3,
    120_000,
  );
  assertExactlyOnce(ids, await chargesOf(db), 3);
});

test('two processes on PostgreSQL charge one due set without duplicates', {
  skip: engine !== 'postgres',
  timeout: 240_000,
}, async (t) => {
  const s = await store();
  t.after(() => s.drop());
  const { ids } = await seed(s.env, 60);
  const db = s.db;
  t.after(() => db.destroy());
  const [a, b] = await Promise.all([
    startProcess({ ...s.env, DEMO_MERCHANT: 'false' }),
    startProcess({ ...s.env, DEMO_MERCHANT: 'false' }),
  ]);
  t.after(async () => {
    await stop(a, 'SIGTERM');
    await stop(b, 'SIGTERM');
  });
  await waitFor(
    async () => (await chargesOf(db)).charges.filter((c) => c.status === 'successful').length === ids.length,
  );
  assertExactlyOnce(ids, await chargesOf(db), 1);
});
