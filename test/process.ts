import assert from 'node:assert/strict';
import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import fs from 'node:fs';
import http from 'node:http';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';
import type { TestContext } from 'node:test';
import { openDb } from '../src/store/store.ts';
import {
  copyMigratedSqliteTo,
  engine,
  freshDb,
  pgUrl,
  TEST_SECRET_KEY,
  VALID_ACCOUNT,
  type TestDb,
} from './helpers.ts';

// Real processes for tests of start-up, configuration, the CLI and crash durability.

const root = path.resolve(import.meta.dirname, '..');
const nodeBin = process.execPath;

/**
 * How long a spawned service may take to start, or a CLI run to end, before the test fails. A start
 * takes 3 s on an idle 2-core machine, but test files run three at a time beside others that load
 * both cores (the chaos run, the packed client's type-check), and a cluster's primary migrates
 * before its processes load the service. A start that hangs still fails, only later.
 */
const PROCESS_DEADLINE_MS = 120_000;

export async function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = net.createServer();
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => {
      const { port } = server.address() as net.AddressInfo;
      server.close(() => resolve(port));
    });
  });
}

/** The processes whose parent is `pid`, from /proc (Linux). */
export function childrenOf(pid: number): number[] {
  const children: number[] = [];
  for (const entry of fs.readdirSync('/proc')) {
    if (!/^\d+$/.test(entry)) continue;
    try {
      // The parent pid is the second field after the command name, which is in parentheses.
      const stat = fs.readFileSync(`/proc/${entry}/stat`, 'utf8');
      if (Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[1]) === pid) children.push(Number(entry));
    } catch {
      // the process ended meanwhile
    }
  }
  return children.sort((a, b) => a - b);
}

export type Store = { env: Record<string, string>; dataDir: string; engine: 'sqlite' | 'postgres' };

/** The URL a process uses for a test's PostgreSQL schema. */
function schemaUrl(schema: string): string {
  const separator = pgUrl.includes('?') ? '&' : '?';
  return `${pgUrl}${separator}options=${encodeURIComponent(`-c search_path=${schema}`)}`;
}

/** A DATA_DIR of the test's own, removed after it. */
function tempDataDir(t: TestContext): string {
  const dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'tono-proc-'));
  t.after(() => fs.rmSync(dataDir, { recursive: true, force: true }));
  return dataDir;
}

/**
 * A database for processes: a temporary DATA_DIR, plus a fresh PostgreSQL schema when
 * TEST_ENGINE=postgres. Empty, for tests of a first start; `migrated` for the others, which then
 * start without running every migration first (about a second each on PostgreSQL).
 */
export async function processStore(t: TestContext, options: { migrated?: boolean } = {}): Promise<Store> {
  const dataDir = tempDataDir(t);
  const env: Record<string, string> = { DATA_DIR: dataDir };
  if (engine === 'postgres') {
    const testDb = await freshDb({ migrated: options.migrated });
    testDb.recyclable = false;
    await testDb.db.destroy();
    env.DATABASE_URL = schemaUrl(testDb.schema!);
    env.SECRET_KEY = TEST_SECRET_KEY;
    // DATABASE_URL alone turns the demo merchant off; these processes start as a laptop does.
    env.DEMO_MERCHANT = 'true';
    t.after(() => testDb.drop());
  } else if (options.migrated) {
    await copyMigratedSqliteTo(path.join(dataDir, 'tono.db'));
    // A migrated database without its key file is refused a new one (src/store/key-check.ts).
    env.SECRET_KEY = TEST_SECRET_KEY;
  }
  return { env, dataDir, engine };
}

/**
 * The database a test opened with freshDb, for processes to share with it: on SQLite its file's
 * folder is their DATA_DIR; on PostgreSQL they get its schema and a temporary DATA_DIR.
 */
export function storeOfTestDb(t: TestContext, testDb: TestDb): Store {
  if (!testDb.schema) {
    const dataDir = path.dirname(testDb.file!);
    // The test's own runtimes seal under TEST_SECRET_KEY, so the processes must too (not a key file).
    return { env: { DATA_DIR: dataDir, SECRET_KEY: TEST_SECRET_KEY }, dataDir, engine: 'sqlite' };
  }
  // Processes may still be connected to it when the test drops it: never handed to another test.
  testDb.recyclable = false;
  const dataDir = tempDataDir(t);
  return { env: { DATA_DIR: dataDir, DATABASE_URL: schemaUrl(testDb.schema) }, dataDir, engine: 'postgres' };
}

/** The store's database, opened from the test (one connection), to look at what the processes left. */
export function openStoreDb(store: Store) {
  return store.env.DATABASE_URL
    ? openDb({ engine: 'postgres', url: store.env.DATABASE_URL, poolSize: 1 })
    : openDb({ engine: 'sqlite', file: path.join(store.dataDir, 'tono.db') });
}

/** Environment for child processes: nothing inherited that could point them at another database. */
export function childEnv(extra: Record<string, string>): NodeJS.ProcessEnv {
  const {
    DATABASE_URL: _db,
    DATA_DIR: _dir,
    PORT: _port,
    PUBLIC_BASE_URL: _url,
    TEST_ENGINE: _engine,
    SECRET_KEY: _key,
    ...rest
  } = process.env;
  // On SQLite the service makes its own key file under DATA_DIR; PostgreSQL needs SECRET_KEY.
  const key = extra.DATABASE_URL ? { SECRET_KEY: TEST_SECRET_KEY } : {};
  return { ...rest, LOG_LEVEL: 'warn', RATE_LIMIT_PER_SECOND: '0', ...key, ...extra };
}

/**
 * Runs the admin CLI. Asynchronous on purpose: a service running in the test's own process must
 * keep its event loop turning (and so commit its pending writes) while the CLI waits for the database.
 */
export function runCli(
  store: Store,
  args: string[],
  input = '',
): Promise<{ status: number | null; stdout: string; stderr: string }> {
  return new Promise((resolve) => {
    const child = spawn(nodeBin, ['src/cli/main.ts', ...args], {
      cwd: root,
      env: childEnv(store.env),
      timeout: PROCESS_DEADLINE_MS,
    });
    let stdout = '';
    let stderr = '';
    child.stdout!.setEncoding('utf8').on('data', (chunk) => (stdout += chunk));
    child.stderr!.setEncoding('utf8').on('data', (chunk) => (stderr += chunk));
    child.on('close', (status) => resolve({ status, stdout, stderr }));
    child.stdin!.end(input);
  });
}

/** A merchant with a bank account, made as an operator makes one (`cli merchant create --json`): its keys and ids. */
export async function merchantByCli(
  store: Store,
  name: string,
  email: string,
): Promise<{ id: string; test_key: string; live_key: string; bank_account_id: string }> {
  const created = await runCli(store, [
    'merchant',
    'create',
    '--name',
    name,
    '--email',
    email,
    '--bank-account',
    VALID_ACCOUNT,
    '--json',
  ]);
  assert.equal(created.status, 0, created.stderr);
  return JSON.parse(created.stdout);
}

export function runMain(env: Record<string, string>) {
  const result = spawnSync(nodeBin, ['src/main.ts'], {
    cwd: root,
    env: childEnv(env),
    encoding: 'utf8',
    timeout: PROCESS_DEADLINE_MS,
  });
  return { status: result.status, signal: result.signal, stdout: result.stdout, stderr: result.stderr };
}

export type Service = {
  child: ChildProcess;
  baseUrl: string;
  stdout: () => string;
  stderr: () => string;
  exited: Promise<number | null>;
};

/**
 * Starts `node src/main.ts` and resolves once it is listening. The port is picked free just before
 * the start, so another process can take it in between (tests run side by side, and outgoing
 * connections draw from the same range): a start refused for a busy port tries another.
 */
export async function startService(t: TestContext, store: Store, extra: Record<string, string> = {}): Promise<Service> {
  for (let attempt = 1; ; attempt++) {
    const started = await startOnce(t, store, await freePort(), extra);
    if ('service' in started) return started.service;
    if (!started.portTaken || attempt === 5) throw started.error;
  }
}

async function startOnce(
  t: TestContext,
  store: Store,
  port: number,
  extra: Record<string, string>,
): Promise<{ service: Service } | { error: Error; portTaken: boolean }> {
  const child = spawn(nodeBin, ['src/main.ts'], {
    cwd: root,
    env: childEnv({ ...store.env, PORT: String(port), HOST: '127.0.0.1', ...extra }),
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let out = '';
  let err = '';
  child.stdout!.on('data', (chunk) => (out += chunk));
  child.stderr!.on('data', (chunk) => (err += chunk));
  const exited = new Promise<number | null>((resolve) => child.once('exit', (code) => resolve(code)));
  t.after(() => {
    if (child.exitCode === null && child.signalCode === null) child.kill('SIGKILL');
  });
  const listening = new Promise<void>((resolve, reject) => {
    const check = () => {
      if (out.includes('Tono is running at')) resolve();
    };
    child.stdout!.on('data', check);
    child.once('exit', (code) => reject(new Error(`service exited with ${code} before listening: ${err}`)));
    setTimeout(
      () => reject(new Error(`service did not start in ${PROCESS_DEADLINE_MS / 1000} s: ${out} ${err}`)),
      PROCESS_DEADLINE_MS,
    ).unref();
  });
  try {
    await listening;
  } catch (error) {
    return { error: error as Error, portTaken: err.includes(`port ${port} on 127.0.0.1 is already in use`) };
  }
  return { service: { child, baseUrl: `http://127.0.0.1:${port}`, stdout: () => out, stderr: () => err, exited } };
}

export async function stop(service: Service, signal: NodeJS.Signals = 'SIGTERM'): Promise<number | null> {
  service.child.kill(signal);
  return service.exited;
}

/**
 * One API call with `key` over node:http, so the caller picks the connection: `agent: false` opens
 * one of its own (the cluster's primary hands each new connection to the next process), an agent
 * keeps them (from a `localAddress` of its own, another client).
 */
export function apiCall(
  baseUrl: string,
  key: string,
  method: 'GET' | 'POST',
  path: string,
  body?: unknown,
  agent: http.Agent | false = false,
): Promise<{ status: number; body: any }> {
  return new Promise((resolve, reject) => {
    const payload = body === undefined ? undefined : JSON.stringify(body);
    const request = http.request(
      `${baseUrl}${path}`,
      {
        method,
        agent,
        headers: {
          authorization: `Bearer ${key}`,
          ...(payload !== undefined && { 'content-type': 'application/json' }),
        },
      },
      (response) => {
        let text = '';
        response
          .setEncoding('utf8')
          .on('data', (chunk) => (text += chunk))
          .on('end', () => resolve({ status: response.statusCode!, body: text ? JSON.parse(text) : undefined }));
      },
    );
    request.once('error', reject);
    request.end(payload);
  });
}
