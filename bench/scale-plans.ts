// node bench/scale-plans.ts: whether the statements of the hot paths stay index-driven on a full
// database (docs/performance.md, "As data grows"). Fills a database as `npm run bench -- --scale`
// does (BENCH_SCALE_FACTOR, default 0.1; BENCH_SCALE_ENGINES, default sqlite,postgres), runs the
// service in this process and records every statement it prepares while it starts, creates and
// reads requests, authorises a consent and executes on it, and charges due subscriptions; then
// explains each (SQLite: EXPLAIN QUERY PLAN, on a database that, like the service's, has no
// statistics; PostgreSQL: the generic plan of the prepared statement, after ANALYZE) and lists
// those that read a whole table of the service's. Exits 1 when one does.
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { randomBytes } from 'node:crypto';
import { DatabaseSync } from 'node:sqlite';
import pg from 'pg';
import pino from 'pino';
import { loadConfig } from '../src/config.ts';
import { createRuntime } from '../src/runtime.ts';
import { createMerchant } from '../src/modules/merchants/merchants.service.ts';
import { systemClock } from '../src/shared/time.ts';
import { fill } from './scale-fill.ts';
import { recurringToken, setUpDueSubscriptions } from './lib.ts';

const factor = Number(process.env.BENCH_SCALE_FACTOR ?? 0.1);
const base = process.env.BENCH_DATABASE_URL ?? 'postgres://postgres@127.0.0.1:5432/test';
const seen = new Set<string>();
let recording = false;
const origPrepare = DatabaseSync.prototype.prepare;
DatabaseSync.prototype.prepare = function (this: DatabaseSync, sql: string, ...rest: any[]) {
  if (recording) seen.add(sql);
  return (origPrepare as any).call(this, sql, ...rest);
} as any;
const origQuery = pg.Client.prototype.query;
(pg.Client.prototype as any).query = function (config: any, ...rest: any[]) {
  if (recording) {
    const text = typeof config === 'string' ? config : config?.text;
    if (text) seen.add(text);
  }
  return (origQuery as any).call(this, config, ...rest);
};

async function explainAll(engine: 'sqlite' | 'postgres'): Promise<number> {
  seen.clear();
  const dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'tono-plans-'));
  let url = '';
  let schema = '';
  if (engine === 'postgres') {
    schema = `plans_${Date.now()}`;
    const admin = new pg.Client({ connectionString: base });
    await admin.connect();
    await admin.query(`create schema ${schema}`);
    await admin.end();
    url = `${base}?options=${encodeURIComponent(`-c search_path=${schema}`)}`;
  }
  const env = {
    DATA_DIR: dataDir,
    DEMO_MERCHANT: 'false',
    LOG_LEVEL: 'warn',
    RATE_LIMIT_PER_SECOND: '1000000',
    ...(url && { DATABASE_URL: url, SECRET_KEY: randomBytes(32).toString('base64') }),
  };
  let rt = await createRuntime(loadConfig({ ...env, WORKERS: 'false' }), { log: pino({ level: 'warn' }) });
  const m = await createMerchant(rt.deps.db, systemClock, {
    name: 'Bench',
    email: 'bench@example.com',
    password: 'bench-password',
    bankAccount: '12-3456-7890138-00',
  });
  const endpointSecret = rt.deps.secrets.seal(randomBytes(32).toString('base64'));
  await rt.close();
  let run: (sql: string) => Promise<void>;
  let end: () => Promise<void>;
  if (engine === 'sqlite') {
    const w = new DatabaseSync(path.join(dataDir, 'tono.db'));
    w.exec('PRAGMA synchronous=OFF');
    w.exec('BEGIN');
    run = async (s) => {
      w.exec(s);
    };
    end = async () => {
      w.exec('COMMIT');
      w.close();
    };
  } else {
    const c = new pg.Client({ connectionString: url });
    await c.connect();
    run = async (s) => {
      await c.query(s);
    };
    end = async () => {
      await c.query('vacuum analyze');
      await c.end();
    };
  }
  await fill({
    engine,
    factor,
    now: Date.now(),
    measured: { userId: m.user_id, bankAccountId: m.bank_account_id! },
    endpointSecret,
    run,
  });
  await end();
  recording = true;
  rt = await createRuntime(loadConfig({ ...env, PORT: '0' }), { log: pino({ level: 'warn' }) });
  const address = await rt.app.listen({ port: 0, host: '127.0.0.1' });
  const svc = address.replace('localhost', '127.0.0.1');
  rt.deps.config.publicBaseUrl = svc;
  await new Promise((r) => setTimeout(r, 3000));
  const h = { authorization: `Bearer ${m.test_key}`, 'content-type': 'application/json' };
  const { token } = await recurringToken(svc, m.test_key, m.bank_account_id!);
  await setUpDueSubscriptions(rt.deps, {
    count: 3,
    testKey: m.test_key,
    bankAccountId: m.bank_account_id!,
    redirectUri: `${svc}/pay/return`,
  });
  await new Promise((r) => setTimeout(r, 3000));
  const r = (await (
    await fetch(`${svc}/v1/requests`, {
      method: 'POST',
      headers: h,
      body: JSON.stringify({ bank_account_id: m.bank_account_id, amount: '12.50 NZD', message: 'x', reference: 'R' }),
    })
  ).json()) as any;
  await fetch(`${svc}/v1/requests`, {
    method: 'POST',
    headers: { ...h, 'idempotency-key': 'ik-1' },
    body: JSON.stringify({ bank_account_id: m.bank_account_id, amount: '12.50 NZD', message: 'x', reference: 'R' }),
  });
  for (let i = 0; i < 3; i++) await fetch(`${svc}/v1/requests/${r.request.id}`, { headers: h });
  for (let i = 0; i < 3; i++) {
    const e = await fetch(`${svc}/v1/payments`, {
      method: 'POST',
      headers: h,
      body: JSON.stringify({ token, amount: '1.00 NZD', idempotency_key: `e-${i}` }),
    });
    if (!e.ok) console.error(await e.text());
  }
  await new Promise((res) => setTimeout(res, 3000));
  recording = false;
  await rt.close();
  const big = [
    'requests',
    'payments',
    'events',
    'webhook_deliveries',
    'webhook_attempts',
    'recurring_consents',
    'subscriptions',
    'subscription_charges',
    'cust_infos',
    'customers',
    'jobs',
    'mail_messages',
    'idempotency_keys',
    'enduring_payer_accounts',
    'api_keys',
    'users',
    'bank_accounts',
    'webhook_endpoints',
  ];
  const out: string[] = [];
  let bad = 0;
  if (engine === 'sqlite') {
    const db = new DatabaseSync(path.join(dataDir, 'tono.db'));
    for (const sql of seen) {
      if (/^\s*(begin|commit|rollback|savepoint|release|pragma)/i.test(sql)) continue;
      let plan: string[];
      try {
        plan = (db.prepare(`EXPLAIN QUERY PLAN ${sql}`).all() as any[]).map((row) => row.detail);
      } catch (e) {
        out.push(`?? ${sql}: ${(e as Error).message}`);
        continue;
      }
      const scans = plan.filter((line) => /^SCAN (\w+)/.test(line) && big.includes(/^SCAN (\w+)/.exec(line)![1]));
      if (scans.length) bad++;
      out.push(
        `${scans.length ? 'SCAN' : 'ok  '} ${sql.replace(/\s+/g, ' ').slice(0, 220)}\n      ${plan.join(' | ')}`,
      );
    }
  } else {
    const c = new pg.Client({ connectionString: url });
    await c.connect();
    await c.query('set plan_cache_mode = force_generic_plan');
    let k = 0;
    for (const text of seen) {
      if (/^\s*(begin|commit|rollback|savepoint|release|set|select 1$)/i.test(text)) continue;
      const params = Math.max(0, ...[...text.matchAll(/\$(\d+)/g)].map((x) => Number(x[1])));
      let plan: string[];
      try {
        const name = `p${k++}`;
        await c.query(`prepare ${name} as ${text}`);
        plan = (
          await c.query(`explain execute ${name}${params ? `(${Array(params).fill('null').join(',')})` : ''}`)
        ).rows.map((row: any) => row['QUERY PLAN']);
      } catch (e) {
        out.push(`?? ${text.slice(0, 200)}: ${(e as Error).message}`);
        continue;
      }
      const scans = plan.filter((line) => {
        const m2 = /Seq Scan on (\w+)/.exec(line);
        return m2 && big.includes(m2[1]);
      });
      if (scans.length) bad++;
      out.push(
        `${scans.length ? 'SCAN' : 'ok  '} ${text.replace(/\s+/g, ' ').slice(0, 220)}\n      ${plan
          .map((l) => l.trim())
          .join(' | ')
          .slice(0, 600)}`,
      );
    }
    await c.end();
    const admin = new pg.Client({ connectionString: base });
    await admin.connect();
    await admin.query(`drop schema ${schema} cascade`);
    await admin.end();
  }
  console.log(
    `${engine}:\n${out.join('\n')}\n${engine}: ${seen.size} statements, ${bad} reading a whole table of the service's\n`,
  );
  fs.rmSync(dataDir, { recursive: true, force: true });
  return bad;
}

let bad = 0;
for (const engine of (process.env.BENCH_SCALE_ENGINES ?? 'sqlite,postgres').split(',') as Array<'sqlite' | 'postgres'>)
  bad += await explainAll(engine);
process.exit(bad > 0 ? 1 : 0);
