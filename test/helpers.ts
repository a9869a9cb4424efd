import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { randomBytes } from 'node:crypto';
import type { TestContext } from 'node:test';
import { sql } from 'kysely';
import pino from 'pino';
import { STANDALONE_CLIENT_SECRET } from '../src/sandbox-bank/sandbox-bank.app.ts';
import { loadConfig, type Config } from '../src/config.ts';
import { createRuntime, type Runtime } from '../src/runtime.ts';
import type { Db } from '../src/store/db.ts';
import { openDb } from '../src/store/store.ts';
import { createMerchant } from '../src/modules/merchants/merchants.service.ts';
import { copyMigratedSqlite, createMigratedSchema, recycleSchema, takeSpareSchema } from './support/schema-template.ts';

export const engine = process.env.TEST_ENGINE === 'postgres' ? 'postgres' : 'sqlite';
export const pgUrl = process.env.TEST_DATABASE_URL ?? 'postgres://postgres@127.0.0.1:5432/test';
export const VALID_ACCOUNT = '12-3456-7890138-00';

export type TestDb = {
  db: Db;
  file?: string;
  schema?: string;
  drop(): Promise<void>;
  /** PostgreSQL: the schema may be emptied and given to a later test once dropped (schema-template.ts). */
  recyclable?: boolean;
};

/**
 * A fresh database: a new SQLite file, or a new PostgreSQL schema when TEST_ENGINE=postgres. Empty,
 * or with `migrated` already migrated (test/support/schema-template.ts), as a service that started
 * on it once would have it.
 */
export async function freshDb(options: { migrated?: boolean } = {}): Promise<TestDb> {
  if (engine === 'postgres') {
    const spare = options.migrated ? takeSpareSchema() : undefined;
    const schema = spare ?? `t_${randomBytes(6).toString('hex')}`;
    const admin = openDb({ engine: 'postgres', url: pgUrl, poolSize: 1 });
    const migrated = spare !== undefined || (options.migrated === true && (await createMigratedSchema(pgUrl, schema)));
    if (!migrated) await sql`create schema ${sql.id(schema)}`.execute(admin);
    const db = openDb({ engine: 'postgres', url: pgUrl, schema });
    const testDb: TestDb = {
      db,
      schema,
      recyclable: migrated,
      // The schema is left in place, as a service process a test started may still be closing
      // its connections to it; scripts/test.ts drops them all before the next PostgreSQL pass.
      // A migrated one that no process shared is emptied and handed to a later test instead.
      async drop() {
        await db.destroy().catch(() => {});
        await admin.destroy();
        if (testDb.recyclable) await recycleSchema(pgUrl, schema);
      },
    };
    return testDb;
  }
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'tono-test-'));
  const file = path.join(dir, 'tono.db');
  if (options.migrated) await copyMigratedSqliteTo(file);
  const db = openDb({ engine: 'sqlite', file });
  return {
    db,
    file,
    async drop() {
      await db.destroy().catch(() => {});
      fs.rmSync(dir, { recursive: true, force: true });
    },
  };
}

/** A copy, at `file`, of the SQLite database this test process migrated once. */
export const copyMigratedSqliteTo = (file: string) => copyMigratedSqlite(file, dataDirOfThisProcess());

/** One service key per test process, so tests never write a key file into the working directory. */
export const TEST_SECRET_KEY = process.env.SECRET_KEY ?? randomBytes(32).toString('base64');

/** This test process's DATA_DIR (outgoing mail without SMTP lands here), removed when it exits. */
let testDataDir: string | null = null;
function dataDirOfThisProcess(): string {
  if (!testDataDir) {
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'tono-test-data-'));
    process.on('exit', () => fs.rmSync(dir, { recursive: true, force: true }));
    testDataDir = dir;
  }
  return testDataDir;
}

/**
 * A live bank for tests that make live objects: the API refuses live requests when no live bank is
 * connected. Nothing listens at its address; a test that pays in live mode names its own bank, and
 * a test of the refusal sets `banksFile: null`.
 */
function liveBanksFileOfThisProcess(): string {
  const file = path.join(dataDirOfThisProcess(), 'live-banks.json');
  if (!fs.existsSync(file)) {
    const bank = {
      id: 'kauri',
      name: 'Kauri Bank',
      base_url: 'http://127.0.0.1:9',
      client_id: 'tono',
      client_secret: 'unused',
    };
    fs.writeFileSync(file, JSON.stringify({ banks: [bank] }));
  }
  return file;
}

export function testConfig(overrides: Partial<Config> = {}): Config {
  return {
    ...loadConfig({
      PORT: '0',
      LOG_LEVEL: 'silent',
      DEMO_MERCHANT: 'false',
      RATE_LIMIT_PER_SECOND: '0',
      AUTH_FAILURES_PER_MINUTE: '0',
      SECRET_KEY: TEST_SECRET_KEY,
      DATA_DIR: dataDirOfThisProcess(),
    }),
    // Tests make endpoints at made-up public names (no DNS here) and receive on this machine in
    // both modes; the tests of the outbound policy set the reach they test.
    targetReach: { live: 'any', test: 'any' },
    // The sandbox bank's documented standalone secret, so tests can call its hooks directly; the
    // secret a real start makes is tested in src/modules/banks/sandbox-client.test.ts.
    sandboxClientSecret: STANDALONE_CLIENT_SECRET,
    banksFile: liveBanksFileOfThisProcess(),
    ...overrides,
  };
}

export type TestApp = Runtime & { testDb: TestDb };

/** A whole service on a fresh database, closed when the test ends. Workers off unless asked. */
export async function buildTestApp(t: TestContext, overrides: Partial<Config> = {}): Promise<TestApp> {
  const testDb = await freshDb({ migrated: true });
  const config = testConfig({ workers: false, ...overrides });
  const runtime = await createRuntime(config, {
    db: testDb.db,
    log: pino({ level: process.env.TEST_LOG_LEVEL ?? 'silent' }),
  });
  t.after(async () => {
    await runtime.close();
    await testDb.drop();
  });
  return { ...runtime, testDb };
}

export type TestMerchant = { userId: string; liveKey: string; testKey: string; bankAccountId: string };

let merchantCounter = 0;
export async function createTestMerchant(runtime: Runtime, name = 'Test Merchant'): Promise<TestMerchant> {
  merchantCounter += 1;
  const created = await createMerchant(runtime.deps.db, runtime.deps.clock, {
    name,
    email: `merchant-${merchantCounter}-${randomBytes(4).toString('hex')}@example.com`,
    password: 'correct horse battery',
    bankAccount: VALID_ACCOUNT,
  });
  return {
    userId: created.user_id,
    liveKey: created.live_key,
    testKey: created.test_key,
    bankAccountId: created.bank_account_id!,
  };
}

type InjectOptions = { headers?: Record<string, string>; query?: Record<string, string> };

/** A small API client over app.inject for one key. */
export function apiClient(runtime: Runtime, key: string) {
  const call = async (
    method: 'GET' | 'POST' | 'PUT' | 'PATCH' | 'DELETE',
    url: string,
    body?: unknown,
    options: InjectOptions = {},
  ) => {
    const response = await runtime.app.inject({
      method,
      url,
      query: options.query,
      headers: {
        authorization: `Bearer ${key}`,
        ...(body !== undefined && { 'content-type': 'application/json' }),
        ...options.headers,
      },
      payload: body === undefined ? undefined : typeof body === 'string' ? body : JSON.stringify(body),
    });
    const text = response.body;
    let json: any;
    try {
      json = text ? JSON.parse(text) : undefined;
    } catch {
      json = undefined;
    }
    return { status: response.statusCode, body: json, text, headers: response.headers };
  };
  return {
    get: (url: string, options?: InjectOptions) => call('GET', url, undefined, options),
    post: (url: string, body?: unknown, options?: InjectOptions) => call('POST', url, body ?? {}, options),
    put: (url: string, body?: unknown, options?: InjectOptions) => call('PUT', url, body, options),
    patch: (url: string, body?: unknown, options?: InjectOptions) => call('PATCH', url, body, options),
    delete: (url: string, options?: InjectOptions) => call('DELETE', url, undefined, options),
  };
}
export type ApiClient = ReturnType<typeof apiClient>;

/**
 * Calls `stop` while something it must wait for is held, lets that go with `release` 50 ms later,
 * and waits for `stop` either way. Returns whether it had returned before the release (it should not).
 */
export async function stoppedBeforeRelease(stop: () => Promise<void>, release: () => void): Promise<boolean> {
  let stopped = false;
  const stopping = stop().then(() => (stopped = true));
  await new Promise((resolve) => setTimeout(resolve, 50));
  const early = stopped;
  release();
  await stopping;
  return early;
}
