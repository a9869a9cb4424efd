import { test } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { DatabaseSync } from 'node:sqlite';
import { setTimeout as sleep } from 'node:timers/promises';
import { Kysely, sql } from 'kysely';
import { checkpointerOf, nodeSqliteDialect, openSqlite } from './sqlite-dialect.ts';

function autoCheckpointPages(database: DatabaseSync): number {
  return Number((database.prepare('PRAGMA wal_autocheckpoint').get() as { wal_autocheckpoint: number }).wal_autocheckpoint);
}

async function until(condition: () => boolean, what: string): Promise<void> {
  const deadline = Date.now() + 60_000;
  while (!condition()) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await sleep(20);
  }
}

test('a busy database checkpoints on its own thread, and falls back to SQLite checkpoints if the thread dies', async (t) => {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'tono-checkpoint-'));
  t.after(() => fs.rmSync(dir, { recursive: true, force: true }));
  const file = path.join(dir, 'db.sqlite');
  const database = openSqlite(file);
  const db = new Kysely<any>({ dialect: nodeSqliteDialect(database, file) });
  let closed = false;
  t.after(async () => {
    if (!closed) await db.destroy();
  });
  await sql`create table items (id integer primary key, body text not null)`.execute(db);
  const checkpointer = checkpointerOf(database)!;
  assert.ok(checkpointer, 'the dialect registers its checkpointer');

  // A quiet database keeps SQLite's own checkpoints and starts no thread.
  for (let id = 1; id <= 20; id++) await db.insertInto('items').values({ id, body: 'x'.repeat(4000) }).execute();
  assert.equal(checkpointer.running, null);
  assert.equal(autoCheckpointPages(database), 1000);

  // Each insert is its own commit; after a couple of hundred the thread takes over.
  let id = 20;
  const insertMore = async (count: number) => {
    for (let i = 0; i < count; i++) await db.insertInto('items').values({ id: ++id, body: 'x'.repeat(4000) }).execute();
  };
  await insertMore(200);
  await until(() => checkpointer.running !== null, 'the checkpoint thread');
  assert.equal(autoCheckpointPages(database), 0, 'SQLite no longer checkpoints inside a COMMIT');
  // Commits that keep coming are checkpointed by the thread.
  const deadline = Date.now() + 60_000;
  while (checkpointer.stats.framesCopied === 0) {
    assert.ok(Date.now() < deadline, 'the thread checkpoints within a minute');
    await insertMore(20);
    await sleep(50);
  }
  assert.ok(checkpointer.stats.checkpoints >= 1);

  // What was checkpointed is in the database file: a fresh connection sees every row.
  const other = new DatabaseSync(file);
  assert.equal((other.prepare('select count(*) as n from items').get() as { n: number }).n, id);
  other.close();

  // If the thread dies, SQLite checkpoints by itself again.
  await checkpointer.running!.terminate();
  await until(() => autoCheckpointPages(database) === 1000, 'the fallback');
  await insertMore(5);
  await db.destroy();
  closed = true;
  const reopened = new DatabaseSync(file);
  assert.equal((reopened.prepare('select count(*) as n from items').get() as { n: number }).n, id);
  assert.equal((reopened.prepare('PRAGMA integrity_check').get() as { integrity_check: string }).integrity_check, 'ok');
  reopened.close();
});
