// A migrated database in one step, for the tests that only need one: running every migration on a
// new PostgreSQL schema takes about a second (a few on a loaded machine), and hundreds of tests
// each make one. scripts/test.ts migrates one schema before the PostgreSQL pass and keeps it as a
// script (pg_dump's, with the schema's name a placeholder); a test replays it into a new schema in
// a quarter of the time. On SQLite a test process migrates one file and copies it. Tests of
// migrations, and of a first start, still get an empty database (freshDb).
import { execFileSync } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import pg from 'pg';
import { migrateToLatest } from '../../src/store/migrate.ts';
import { openDb } from '../../src/store/store.ts';

/** Where scripts/test.ts leaves the PostgreSQL script for the test processes it starts. */
export const TEMPLATE_ENV = 'TEST_POSTGRES_TEMPLATE';
const PLACEHOLDER = '__tono_schema_template__';

/**
 * Migrates a new schema of `url`'s database, dumps it (tables, indexes, the migrations' own rows)
 * as SQL and drops it; the script is written to a file, whose path is returned. Null, and the
 * tests migrate each schema themselves, when pg_dump is not installed.
 */
export async function writePostgresTemplate(url: string): Promise<string | null> {
  try {
    execFileSync('pg_dump', ['--version'], { stdio: 'ignore' });
  } catch {
    return null;
  }
  const schema = `tpl_${randomBytes(6).toString('hex')}`;
  const admin = new pg.Client({ connectionString: url });
  await admin.connect();
  try {
    await admin.query(`create schema "${schema}"`);
    const db = openDb({ engine: 'postgres', url, schema, poolSize: 1 });
    try {
      await migrateToLatest(db);
    } finally {
      await db.destroy();
    }
    const dump = execFileSync(
      'pg_dump',
      ['--schema', schema, '--inserts', '--no-owner', '--no-privileges', '--dbname', url],
      { encoding: 'utf8', maxBuffer: 64 << 20 },
    );
    // psql's own commands (\restrict) are not SQL; the schema's name is random, so it stands for itself.
    const script = dump
      .split('\n')
      .filter((line) => !line.startsWith('\\'))
      .join('\n')
      .replaceAll(schema, PLACEHOLDER);
    const file = path.join(fs.mkdtempSync(path.join(os.tmpdir(), 'tono-test-template-')), 'schema.sql');
    fs.writeFileSync(file, script);
    return file;
  } finally {
    await admin.query(`drop schema if exists "${schema}" cascade`).catch(() => {});
    await admin.end();
  }
}

let postgresScript: string | null | undefined;

/** Makes `schema`, migrated, from the template scripts/test.ts wrote; false when there is none. */
export async function createMigratedSchema(url: string, schema: string): Promise<boolean> {
  if (postgresScript === undefined) {
    const file = process.env[TEMPLATE_ENV];
    postgresScript = file && fs.existsSync(file) ? fs.readFileSync(file, 'utf8') : null;
  }
  if (postgresScript === null) return false;
  const client = new pg.Client({ connectionString: url });
  await client.connect();
  try {
    // One simple query: the script's statements travel and run together, in one transaction.
    await client.query(`begin;\n${postgresScript.replaceAll(PLACEHOLDER, schema)}\ncommit;`);
    templateColumns ??= await columnsOf(client, schema, templateRelations(postgresScript));
  } finally {
    await client.end();
  }
  return true;
}

// A schema made from the template costs PostgreSQL about 0.2 s of work (56 tables, 69 indexes); one
// a test finished with is emptied in milliseconds. So a test process keeps the migrated schemas its
// tests are done with, emptied, and hands them to its next tests, unless a test changed their tables'
// columns or triggers, or shared them with processes that may still be connected (test/process.ts).

/** Migrated schemas of this process, emptied, ready for the next test. */
const spareSchemas: string[] = [];
/** The template's tables and sequences but the migrations' own, by name: the same in every schema made from it. */
let relations: { tables: string[]; sequences: string[] } | null = null;
/** The columns of the template's tables, as a schema made from it has them. */
let templateColumns: string | null = null;
/** Off once emptying failed for a reason that would fail again (the role may not set session_replication_role). */
let recycling = true;

function templateRelations(script: string): { tables: string[]; sequences: string[] } {
  const named = (kind: string) =>
    [...script.matchAll(new RegExp(`^CREATE ${kind} ${PLACEHOLDER}\\.(\\w+)`, 'gm'))]
      .map((match) => match[1])
      .filter((name) => !name.startsWith('kysely_migration'));
  relations ??= { tables: named('TABLE'), sequences: named('SEQUENCE') };
  return relations;
}

/**
 * Every column of the tables, in order, and the triggers a test added to them, found by the tables'
 * names through the catalogue's indexes (a scan of a schema's relations reads every schema's: the
 * tests leave hundreds).
 */
async function columnsOf(client: pg.Client, schema: string, { tables }: { tables: string[] }): Promise<string> {
  const { rows } = await client.query<{ columns: string }>(
    `with tables as (
       select to_regclass(quote_ident($2) || '.' || quote_ident(name)) as oid from unnest($1::text[]) as t(name)
     )
     select (select string_agg(a.attrelid::regclass::text || '.' || a.attname || ' ' || a.atttypid::text || ' ' || a.attnotnull::text, ',' order by a.attrelid, a.attnum)
               from pg_attribute a join tables t on a.attrelid = t.oid
              where a.attnum > 0 and not a.attisdropped)
            || ' triggers ' ||
            (select count(*) from pg_trigger g join tables t on g.tgrelid = t.oid where not g.tgisinternal)::text as columns`,
    [tables, schema],
  );
  return rows[0].columns;
}

/** A migrated schema a finished test left, emptied; undefined when there is none. */
export function takeSpareSchema(): string | undefined {
  return spareSchemas.pop();
}

/**
 * Empties a migrated schema a test has finished with (its connections closed) and keeps it for the
 * next test: every row but the migrations' own, its sequences restarted. Not kept when its tables'
 * columns or triggers are not the template's any more, or when emptying fails (a connection still
 * holding a lock).
 */
export async function recycleSchema(url: string, schema: string): Promise<void> {
  if (!recycling || templateColumns === null || relations === null) return;
  const { tables, sequences } = relations;
  const client = new pg.Client({ connectionString: url });
  await client.connect();
  try {
    await client.query("set lock_timeout = '2s'");
    if ((await columnsOf(client, schema, relations)) !== templateColumns) return;
    const name = (relation: string) => `"${schema}"."${relation}"`;
    // Foreign keys are triggers, which a replica role does not fire: the rows go in any order.
    await client.query(
      [
        'begin',
        'set local session_replication_role = replica',
        ...tables.map((table) => `delete from ${name(table)}`),
        ...sequences.map((sequence) => `alter sequence ${name(sequence)} restart`),
        'commit',
      ].join(';\n'),
    );
    spareSchemas.push(schema);
  } catch (error) {
    if ((error as { code?: string }).code === '42501') recycling = false;
  } finally {
    await client.end();
  }
}

/** The process's migrated SQLite file, made once even when tests ask for it at the same time. */
let sqliteTemplate: Promise<string> | null = null;

async function migratedSqliteFile(scratchDir: string): Promise<string> {
  const template = path.join(scratchDir, 'migrated-template.db');
  const db = openDb({ engine: 'sqlite', file: template });
  await migrateToLatest(db);
  // Closing the last connection folds the WAL into the file, so the file alone is the database.
  await db.destroy();
  return template;
}

/** A copy, at `file`, of a SQLite database this process migrated once. */
export async function copyMigratedSqlite(file: string, scratchDir: string): Promise<void> {
  sqliteTemplate ??= migratedSqliteFile(scratchDir);
  fs.copyFileSync(await sqliteTemplate, file);
}
