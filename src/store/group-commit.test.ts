import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { DatabaseSync } from 'node:sqlite';
import { sql } from 'kysely';
import { openDb, relaxDurability } from './db.ts';
import { transact } from './tx.ts';

function tempFile() {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'tono-gc-'));
  return { file: path.join(dir, 'db.sqlite'), cleanup: () => fs.rmSync(dir, { recursive: true, force: true }) };
}

test('concurrent transactions share commits, and a failed one undoes only itself', async (t) => {
  const { file, cleanup } = tempFile();
  t.after(cleanup);
  const db = openDb({ engine: 'sqlite', file }) as any;
  await sql`create table items (id integer primary key, label text not null)`.execute(db);
  const results = await Promise.allSettled(
    Array.from({ length: 200 }, (_, i) =>
      transact(db, async (trx: any) => {
        await trx.insertInto('items').values({ id: i, label: `item ${i}` }).execute();
        await trx.insertInto('items').values({ id: 1000 + i, label: 'second' }).execute();
        if (i % 10 === 0) throw new Error(`unit ${i} fails`);
      }),
    ),
  );
  assert.equal(results.filter((r) => r.status === 'rejected').length, 20);
  await db.destroy();
  const check = new DatabaseSync(file);
  const rows = check.prepare('select id from items where id < 1000 order by id').all() as Array<{ id: number }>;
  assert.equal(rows.length, 180);
  assert.ok(rows.every((row) => row.id % 10 !== 0));
  assert.equal((check.prepare('select count(*) as n from items').get() as { n: number }).n, 360);
  check.close();
});

test('a write is on disk when its promise resolves, even if the process dies right after', async (t) => {
  const { file, cleanup } = tempFile();
  t.after(cleanup);
  const script = `
    import { openDb } from ${JSON.stringify(path.resolve('src/store/db.ts'))};
    import { transact } from ${JSON.stringify(path.resolve('src/store/tx.ts'))};
    import { sql } from 'kysely';
    const db = openDb({ engine: 'sqlite', file: ${JSON.stringify(file)} });
    await sql\`create table items (id integer primary key)\`.execute(db);
    await Promise.all(Array.from({ length: 50 }, (_, i) => transact(db, (trx) => trx.insertInto('items').values({ id: i }).execute())));
    process.stdout.write('done\\n');
    process.kill(process.pid, 'SIGKILL');
  `;
  const child = spawn(process.execPath, ['--input-type=module', '-e', script], { stdio: ['ignore', 'pipe', 'inherit'], cwd: process.cwd() });
  let output = '';
  child.stdout.on('data', (chunk) => (output += chunk));
  await new Promise((resolve) => child.on('exit', resolve));
  assert.equal(output.trim(), 'done');
  const check = new DatabaseSync(file);
  assert.equal((check.prepare('select count(*) as n from items').get() as { n: number }).n, 50);
  check.close();
});

test('a relaxed unit (a job lease) still commits with its batch', async (t) => {
  const { file, cleanup } = tempFile();
  t.after(cleanup);
  const db = openDb({ engine: 'sqlite', file }) as any;
  await sql`create table leases (id integer primary key)`.execute(db);
  await transact(db, async (trx: any) => {
    await trx.insertInto('leases').values({ id: 1 }).execute();
    await relaxDurability(trx);
  });
  await transact(db, async (trx: any) => trx.insertInto('leases').values({ id: 2 }).execute());
  await db.destroy();
  const check = new DatabaseSync(file);
  assert.deepEqual((check.prepare('select id from leases order by id').all() as Array<{ id: number }>).map((r) => r.id), [1, 2]);
  check.close();
});
