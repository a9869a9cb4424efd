// npm test: every test on SQLite, then, when TEST_DATABASE_URL is set, every test that touches the
// database again on PostgreSQL. Pass file paths or globs to run fewer.
import { spawnSync } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import pg from 'pg';
import { TEMPLATE_ENV, writePostgresTemplate } from '../test/support/schema-template.ts';

function findTests(dir: string): string[] {
  if (!fs.existsSync(dir)) return [];
  return fs.readdirSync(dir, { withFileTypes: true }).flatMap((entry) => {
    const full = path.join(dir, entry.name);
    if (entry.isDirectory()) return entry.name === 'node_modules' ? [] : findTests(full);
    return entry.name.endsWith('.test.ts') ? [full] : [];
  });
}

const requested = process.argv.slice(2);
/**
 * Files that start processes or a browser take the longest, so they are started first: begun last,
 * one of them would keep a pass waiting on it alone while the other cores had nothing to run.
 */
const startsProcesses = /process\.ts'|spawn(Sync)?\(|support\/chromium/;
const slowFirst = (list: string[]) => {
  const slow = new Set(list.filter((file) => startsProcesses.test(fs.readFileSync(file, 'utf8'))));
  return [...slow, ...list.filter((file) => !slow.has(file))];
};
const files = slowFirst((requested.length > 0 ? requested : [...findTests('src'), ...findTests('test')]).sort());
const databaseMarker = /buildTestApp|freshDb|TEST_ENGINE/;
/**
 * A test file touches the database when it builds a service or a store, itself or through a
 * helper of its own (test/helpers.ts, which every test imports, is looked at only in the file).
 */
function usesDatabase(file: string): boolean {
  const text = fs.readFileSync(file, 'utf8');
  if (databaseMarker.test(text)) return true;
  for (const [, spec] of text.matchAll(/from '(\.[^']+\.ts)'/g)) {
    const helper = path.resolve(path.dirname(file), spec);
    if (
      !helper.endsWith('.test.ts') &&
      path.basename(helper) !== 'helpers.ts' &&
      fs.existsSync(helper) &&
      databaseMarker.test(fs.readFileSync(helper, 'utf8'))
    )
      return true;
  }
  return false;
}
const concurrency = process.env.TEST_CONCURRENCY ?? '3';
// Services the tests spawn on PostgreSQL need the service key (SQLite ones make a key file).
const secretKey = process.env.SECRET_KEY ?? randomBytes(32).toString('base64');
/**
 * Every test file, and every service and CLI run the tests spawn, loads the service's modules: with
 * a compile cache shared by all of them, only the first compiles them (about half of a load's CPU).
 * A folder of its own, as V8 keeps one compilation of a file per cache and `npm start` runs with
 * other flags.
 */
const compileCache = process.env.NODE_COMPILE_CACHE ?? path.resolve('node_modules/.cache/tono-test-compile');

function run(engine: 'sqlite' | 'postgres', list: string[], extraEnv: Record<string, string> = {}): number {
  if (list.length === 0) return 0;
  process.stdout.write(`\n# ${list.length} test files on ${engine}\n`);
  const result = spawnSync(
    process.execPath,
    ['--test', `--test-concurrency=${concurrency}`, '--test-timeout=600000', '--test-reporter=spec', ...list],
    {
      stdio: 'inherit',
      env: {
        ...process.env,
        TEST_ENGINE: engine,
        SECRET_KEY: secretKey,
        NODE_COMPILE_CACHE: compileCache,
        ...extraEnv,
      },
    },
  );
  return result.status ?? 1;
}

/** Test schemas (t_ + 12 hex digits) of earlier runs; tests leave theirs, see test/helpers.ts. */
async function dropTestSchemas(url: string): Promise<void> {
  const client = new pg.Client({ connectionString: url });
  await client.connect();
  try {
    const { rows } = await client.query<{ name: string }>(
      "select nspname as name from pg_namespace where nspname ~ '^t_[0-9a-f]{12}$'",
    );
    for (const { name } of rows) await client.query(`drop schema "${name}" cascade`);
  } finally {
    await client.end();
  }
}

let status = run('sqlite', files);
if (process.env.TEST_DATABASE_URL) {
  await dropTestSchemas(process.env.TEST_DATABASE_URL);
  const template = await writePostgresTemplate(process.env.TEST_DATABASE_URL);
  if (!template) process.stdout.write('\n# pg_dump is not installed: each test schema is migrated on its own\n');
  const pgStatus = run('postgres', files.filter(usesDatabase), template ? { [TEMPLATE_ENV]: template } : {});
  if (template) fs.rmSync(path.dirname(template), { recursive: true, force: true });
  status = status || pgStatus;
} else {
  process.stdout.write('\n# TEST_DATABASE_URL is not set: PostgreSQL pass skipped\n');
}
process.exit(status);
