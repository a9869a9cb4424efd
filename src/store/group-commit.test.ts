import { test, type TestContext } from 'node:test';
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { DatabaseSync } from 'node:sqlite';
import { setImmediate as nextTurn } from 'node:timers/promises';
import { sql } from 'kysely';
import { openDb, openStore, storeOf, transact, type BatchAppender } from './store.ts';
import type { FileSync } from './sqlite/wal-syncer.ts';
import { insertRow, prepared } from './prepared.ts';

type DirectReader = (statement: string, parameters: unknown[]) => Promise<unknown[]> | unknown[] | null;

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
        await trx
          .insertInto('items')
          .values({ id: i, label: `item ${i}` })
          .execute();
        await trx
          .insertInto('items')
          .values({ id: 1000 + i, label: 'second' })
          .execute();
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
    import { openDb, transact } from ${JSON.stringify(path.resolve('src/store/store.ts'))};
    import { sql } from 'kysely';
    const db = openDb({ engine: 'sqlite', file: ${JSON.stringify(file)} });
    await sql\`create table items (id integer primary key)\`.execute(db);
    await Promise.all(Array.from({ length: 50 }, (_, i) => transact(db, (trx) => trx.insertInto('items').values({ id: i }).execute())));
    process.stdout.write('done\\n');
    process.kill(process.pid, 'SIGKILL');
  `;
  const child = spawn(process.execPath, ['--input-type=module', '-e', script], {
    stdio: ['ignore', 'pipe', 'inherit'],
    cwd: process.cwd(),
  });
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
  await storeOf(db).transaction(
    async (trx: any) => {
      await trx.insertInto('leases').values({ id: 1 }).execute();
    },
    { durability: 'relaxed' },
  );
  await transact(db, async (trx: any) => trx.insertInto('leases').values({ id: 2 }).execute());
  await db.destroy();
  const check = new DatabaseSync(file);
  assert.deepEqual(
    (check.prepare('select id from leases order by id').all() as Array<{ id: number }>).map((r) => r.id),
    [1, 2],
  );
  check.close();
});

/** Files this process holds open that SQLite created as temporary files (named etilqs_*, unlinked once open). */
function openSqliteTempFiles(): string[] {
  return fs.readdirSync('/proc/self/fd').flatMap((fd) => {
    try {
      const target = fs.readlinkSync(`/proc/self/fd/${fd}`);
      return target.includes('etilqs_') ? [target] : [];
    } catch {
      return [];
    }
  });
}

test('a unit that changes many pages keeps its savepoint journal in memory, and still rolls back alone', {
  skip: process.platform !== 'linux' && 'reads /proc',
}, async (t) => {
  const { file, cleanup } = tempFile();
  t.after(cleanup);
  const db = openDb({ engine: 'sqlite', file }) as any;
  t.after(() => db.destroy());
  await sql`create table notes (id integer primary key, body text not null)`.execute(db);
  const rows = Array.from({ length: 200 }, (_, id) => ({ id, body: 'a'.repeat(2000) }));
  await transact(db, (trx: any) => trx.insertInto('notes').values(rows).execute());

  // Rewriting every row changes ~100 existing pages (~400 KiB) in one savepoint: past the 64 KiB
  // at which SQLite moves a statement journal to a temporary file unless temp_store is MEMORY.
  let duringRewrite: string[] = [];
  const rewrite = transact(db, async (trx: any) => {
    await trx
      .updateTable('notes')
      .set({ body: 'b'.repeat(2000) })
      .execute();
    duringRewrite = openSqliteTempFiles();
  });
  const failing = transact(db, async (trx: any) => {
    await trx
      .updateTable('notes')
      .set({ body: 'c'.repeat(2000) })
      .execute();
    throw new Error('this unit fails');
  });
  await rewrite;
  await assert.rejects(failing, /this unit fails/);
  assert.deepEqual(duringRewrite, []);
  const bodies = await sql<{ body: string }>`select distinct body from notes`.execute(db);
  assert.deepEqual(
    bodies.rows.map((row) => row.body),
    ['b'.repeat(2000)],
  );
});

/** An fsync the test holds until it lets it finish (or fail), to watch who waits for it. */
function heldFsync() {
  const calls: Array<{ fd: number; finished: boolean; finish(error?: Error): void }> = [];
  const fsync: FileSync = (fd, done) => {
    const call = {
      fd,
      finished: false,
      finish: (error?: Error) => {
        call.finished = true;
        fs.fsync(fd, (e) => done(error ?? e));
      },
    };
    calls.push(call);
  };
  /** Lets every fsync still held go, so the database can close after a failed assertion. */
  const release = () => {
    for (const call of calls.filter((held) => !held.finished)) call.finish();
  };
  return { fsync, calls, release };
}

function settledFlag(promise: Promise<unknown>) {
  const state = { settled: false, error: undefined as unknown };
  promise.then(
    () => {
      state.settled = true;
    },
    (error) => {
      state.settled = true;
      state.error = error;
    },
  );
  return state;
}

async function turns(n = 5) {
  for (let i = 0; i < n; i++) await nextTurn();
}

/** Waits for the real fsync a test let go of to come back from the thread pool. */
async function until(condition: () => boolean) {
  const deadline = Date.now() + 10_000;
  while (!condition()) {
    if (Date.now() > deadline) throw new Error('gave up waiting');
    await new Promise((resolve) => setTimeout(resolve, 1));
  }
}

/**
 * A database whose WAL fsyncs the test holds (closed after the test, letting any held fsync go),
 * with one table `items` created; `read` is its direct read.
 */
async function heldDatabase(t: TestContext) {
  const { file, cleanup } = tempFile();
  t.after(cleanup);
  const held = heldFsync();
  const store = openStore({ engine: 'sqlite', file, fsync: held.fsync });
  const db = store.db as any;
  const read: DirectReader = (statement, parameters) => store.readNow(statement, parameters);
  t.after(async () => {
    const closing = db.destroy();
    held.release();
    await turns();
    held.release();
    await closing;
  });
  const create = sql`create table items (id integer primary key)`.execute(db);
  await until(() => held.calls.length === 1);
  held.calls[0]!.finish();
  await create;
  return { db, held, file, read, store };
}

test('no caller is released before the WAL fsync covering what it wrote or read; batches sync one at a time, in order', async (t) => {
  const { db, held, file } = await heldDatabase(t);
  assert.equal(fs.fstatSync(held.calls[0]!.fd).ino, fs.statSync(`${file}-wal`).ino, 'the fsync is of the WAL file');

  const first = settledFlag(transact(db, (trx: any) => trx.insertInto('items').values({ id: 1 }).execute()));
  await turns();
  assert.equal(held.calls.length, 2, 'the batch committed and asked for its fsync');
  assert.equal(first.settled, false, 'a writer waits for its fsync');

  // A reader sees the committed row at once, but is not answered until that row is durable.
  let seen: unknown[] = [];
  const reader = settledFlag(
    db
      .selectFrom('items')
      .selectAll()
      .execute()
      .then((rows: unknown[]) => (seen = rows)),
  );
  // The next writers' statements run while the first fsync is still under way; their batch stays
  // open until it ends (that fsync cannot cover them), so writers of several turns share it.
  const second = settledFlag(transact(db, (trx: any) => trx.insertInto('items').values({ id: 2 }).execute()));
  await turns();
  const alsoSecond = settledFlag(transact(db, (trx: any) => trx.insertInto('items').values({ id: 20 }).execute()));
  await turns();
  assert.equal(reader.settled, false, 'a reader waits for the fsync of what it saw');
  assert.equal(second.settled, false);
  assert.equal(alsoSecond.settled, false);
  assert.equal(held.calls.length, 2, 'one fsync at a time');
  const committedRows = () => {
    const other = new DatabaseSync(file);
    try {
      return (other.prepare('select count(*) as n from items').get() as { n: number }).n;
    } finally {
      other.close();
    }
  };
  assert.equal(committedRows(), 1, 'the second batch is still open');

  held.calls[1]!.finish();
  await until(() => first.settled && reader.settled);
  await turns();
  assert.deepEqual([first.settled, reader.settled, second.settled, alsoSecond.settled], [true, true, false, false]);
  assert.deepEqual(
    seen.map((row: any) => row.id),
    [1],
    'the reader saw the first batch only',
  );
  assert.equal(committedRows(), 3, 'the second batch committed once the first fsync ended');
  assert.equal(held.calls.length, 3, 'the next fsync starts as soon as the last one ends, and covers both writers');
  held.calls[2]!.finish();
  await until(() => second.settled && alsoSecond.settled);
  assert.equal(second.error, undefined);
  assert.equal(alsoSecond.error, undefined);

  // A failed fsync fails the writers of the batches it covered.
  const failing = settledFlag(transact(db, (trx: any) => trx.insertInto('items').values({ id: 3 }).execute()));
  await turns();
  held.calls[3]!.finish(new Error('EIO: i/o error, fsync'));
  await until(() => failing.settled);
  assert.match(String(failing.error), /EIO/);

  // With nothing left to sync, a read is answered at once.
  assert.equal((await db.selectFrom('items').select('id').where('id', '=', 1).execute()).length, 1);
  assert.equal(held.calls.length, 4);

  // A reader queued behind a writer sees its row before the batch has even committed: it is
  // answered only once that batch is durable.
  const writer = settledFlag(transact(db, (trx: any) => trx.insertInto('items').values({ id: 4 }).execute()));
  let early: unknown[] = [];
  const earlyReader = settledFlag(
    db
      .selectFrom('items')
      .select('id')
      .where('id', '=', 4)
      .execute()
      .then((rows: unknown[]) => (early = rows)),
  );
  await until(() => held.calls.length === 5);
  await turns();
  assert.equal(earlyReader.settled, false, 'a reader of the open batch waits for its fsync');
  held.calls[4]!.finish();
  await until(() => writer.settled && earlyReader.settled);
  assert.equal(early.length, 1);
});

test("a relaxed unit (a job claim) is answered without its own writes' fsync, and says when the rows it read are durable", async (t) => {
  const { db, held, store } = await heldDatabase(t);
  /** Reads every item (the due jobs), then writes one (the lease), in a relaxed transaction. */
  const claim = async (lease: number) => {
    const { result: ids, durable } = await store.transaction(
      async (trx: any) => {
        const rows = await trx.selectFrom('items').select('id').execute();
        await trx.insertInto('items').values({ id: lease }).execute();
        return rows.map((row: { id: number }) => row.id as number);
      },
      { durability: 'relaxed' },
    );
    return { ids, ready: durable };
  };

  // Nothing pending: nothing to wait for, and the lease's own fsync is not waited for either.
  const quiet = await claim(100);
  assert.equal(quiet.ready, null);
  await until(() => held.calls.length === 2);
  assert.equal(held.calls[1]!.finished, false, "the lease's fsync is still held");
  held.calls[1]!.finish();
  await until(() => held.calls[1]!.finished);
  await turns();

  // A job queued a moment ago, its commit's fsync held: the claim is answered, but its `ready`
  // (what the worker waits for before running the job, and sending its webhook or email) only
  // once that row is durable.
  const queued = settledFlag(transact(db, (trx: any) => trx.insertInto('items').values({ id: 1 }).execute()));
  await until(() => held.calls.length === 3);
  const afterCommit = await claim(101);
  assert.deepEqual(
    afterCommit.ids.sort((a: number, b: number) => a - b),
    [1, 100],
  );
  const ready = settledFlag(afterCommit.ready!);
  await turns();
  assert.equal(ready.settled, false, 'not ready before the fsync of the row it read');
  held.calls[2]!.finish();
  await until(() => queued.settled && ready.settled);
  assert.equal(ready.error, undefined);
  await until(() => held.calls.length === 4);
  held.calls[3]!.finish();
  await until(() => held.calls[3]!.finished);
  await turns();

  // A job written in the batch still open: ready with that batch's fsync; and a failed one rejects.
  const same = settledFlag(transact(db, (trx: any) => trx.insertInto('items').values({ id: 2 }).execute()));
  const inBatch = await claim(102);
  const inBatchReady = settledFlag(inBatch.ready!);
  await until(() => held.calls.length === 5);
  await turns();
  assert.deepEqual([same.settled, inBatchReady.settled], [false, false], 'neither before the batch is durable');
  held.calls[4]!.finish(new Error('EIO: i/o error, fsync'));
  await until(() => same.settled && inBatchReady.settled);
  assert.match(String(inBatchReady.error), /EIO/, 'a job read from a batch that failed is never ready');
});

test('a write with RETURNING is part of its unit: answered once durable, and undone with a failed transaction', async (t) => {
  const { db, held } = await heldDatabase(t);
  const returned = settledFlag(db.insertInto('items').values({ id: 1 }).returning('id').execute());
  await until(() => held.calls.length === 2);
  await turns();
  assert.equal(returned.settled, false, 'its caller waits for the fsync covering it');
  held.calls[1]!.finish();
  await until(() => returned.settled);
  assert.equal(returned.error, undefined);

  const { file, cleanup } = tempFile();
  t.after(cleanup);
  const store = openDb({ engine: 'sqlite', file }) as any;
  t.after(() => store.destroy());
  await sql`create table items (id integer primary key, label text not null)`.execute(store);
  await store
    .insertInto('items')
    .values([
      { id: 1, label: 'kept' },
      { id: 2, label: 'kept' },
    ])
    .execute();
  const relabel = prepared<{ id: number; label: string }, { id: number }>((db: any, arg) =>
    db
      .updateTable('items')
      .set({ label: arg('label') })
      .where('id', '=', arg('id'))
      .returning('id'),
  );
  // Each as its transaction's first write (prepared on the unit, and built through Kysely), side by
  // side with a transaction that succeeds and so holds the batch open.
  const outcomes = await Promise.allSettled([
    transact(store, async (trx: any) => {
      assert.deepEqual(await relabel.all(trx, { id: 1, label: 'lost' }), [{ id: 1 }]);
      throw new Error('fails after its write');
    }),
    store.transaction().execute(async (trx: any) => {
      assert.equal((await trx.deleteFrom('items').where('id', '=', 2).returning('id').execute()).length, 1);
      throw new Error('fails after its write');
    }),
    transact(store, (trx: any) => trx.insertInto('items').values({ id: 3, label: 'new' }).returning('id').execute()),
  ]);
  assert.deepEqual(
    outcomes.map((outcome) => outcome.status),
    ['rejected', 'rejected', 'fulfilled'],
  );
  assert.deepEqual(await store.selectFrom('items').selectAll().orderBy('id').execute(), [
    { id: 1, label: 'kept' },
    { id: 2, label: 'kept' },
    { id: 3, label: 'new' },
  ]);
});

test('a direct read waits for the fsync of what it saw, and is refused while a unit holds the connection or for a write', async (t) => {
  const { db, held, read } = await heldDatabase(t);

  // With nothing pending, the rows come back at once, without a promise.
  assert.deepEqual(read('select id from items', []), []);

  // A committed row whose fsync is held: seen, but not answered until it is durable.
  const writer = settledFlag(transact(db, (trx: any) => trx.insertInto('items').values({ id: 1 }).execute()));
  await turns();
  assert.equal(held.calls.length, 2);
  const pending = read('select id from items', []);
  assert.ok(pending instanceof Promise, 'the read waits');
  const reader = settledFlag(pending);
  await turns();
  assert.equal(reader.settled, false, 'not answered before the fsync');
  held.calls[1]!.finish();
  await until(() => reader.settled && writer.settled);
  assert.deepEqual(await pending, [{ id: 1 }]);

  // While a unit of work holds the connection, its writes are not to be seen: the direct read steps aside.
  let inside: unknown = 'not run';
  const unit = transact(db, async (trx: any) => {
    await trx.insertInto('items').values({ id: 2 }).execute();
    inside = read('select id from items', []);
  });
  await until(() => held.calls.length === 3);
  held.calls[2]!.finish();
  await unit;
  assert.equal(inside, null);
  // A write that returns rows is not a read.
  assert.equal(read('insert into items (id) values (3) returning id', []), null);
  assert.deepEqual(await db.selectFrom('items').select('id').orderBy('id').execute(), [{ id: 1 }, { id: 2 }]);
});

test('prepared reads of a database opened by openDb take the direct read, and only outside transactions', async (t) => {
  const { file, cleanup } = tempFile();
  t.after(cleanup);
  const db = openDb({ engine: 'sqlite', file }) as any;
  t.after(() => db.destroy());
  await sql`create table items (id integer primary key, label text not null)`.execute(db);
  await db.insertInto('items').values({ id: 1, label: 'one' }).execute();
  const byId = prepared<{ id: number }, { id: number; label: string }>((base: any, arg) =>
    base.selectFrom('items').selectAll().where('id', '=', arg('id')),
  );
  assert.deepEqual(await byId.first(db, { id: 1 }), { id: 1, label: 'one' });
  await transact(db, async (trx: any) => {
    assert.equal(storeOf(trx).readNow('select 1', []), null, 'a transaction reads through its own connection');
    await trx.updateTable('items').set({ label: 'uno' }).where('id', '=', 1).execute();
    assert.deepEqual(await byId.first(trx, { id: 1 }), { id: 1, label: 'uno' }, 'and sees its own writes');
  });
  assert.deepEqual(await byId.first(db, { id: 1 }), { id: 1, label: 'uno' });

  // firstNow: the row in hand when the direct read answers at once, else a promise of it.
  assert.deepEqual(byId.firstNow(db, { id: 1 }), { id: 1, label: 'uno' });
  assert.equal(byId.firstNow(db, { id: 2 }), undefined);
  let duringUnit: unknown;
  let release!: () => void;
  const unit = transact(db, async (trx: any) => {
    await trx.updateTable('items').set({ label: 'eins' }).where('id', '=', 1).execute();
    assert.deepEqual(
      byId.firstNow(trx, { id: 1 }),
      { id: 1, label: 'eins' },
      'a transaction reads on the connection it holds, at once',
    );
    duringUnit = byId.firstNow(db, { id: 1 });
    await new Promise<void>((resolve) => (release = resolve));
  });
  await until(() => duringUnit !== undefined);
  assert.ok(duringUnit instanceof Promise, 'while a unit holds the connection, the read waits for it');
  release();
  await unit;
  assert.deepEqual(
    await duringUnit,
    { id: 1, label: 'eins' },
    'and sees what the unit committed, never its writes in progress',
  );
});

test('prepared queries in a transaction run straight on its unit of work, and only while it holds the connection', async (t) => {
  const { file, cleanup } = tempFile();
  t.after(cleanup);
  const db = openDb({ engine: 'sqlite', file }) as any;
  t.after(() => db.destroy());
  await sql`create table items (id integer primary key, label text not null unique)`.execute(db);
  const byId = prepared<{ id: number }, { id: number; label: string }>((base: any, arg) =>
    base.selectFrom('items').selectAll().where('id', '=', arg('id')),
  );
  const relabel = prepared<{ id: number; label: string }>((base: any, arg) =>
    base
      .updateTable('items')
      .set({ label: arg('label') })
      .where('id', '=', arg('id')),
  );
  assert.equal(
    storeOf(db).runInTransaction(db, 'select 1', []),
    null,
    'outside a transaction there is no unit to run on',
  );

  let leaked: any;
  await transact(db, async (trx: any) => {
    assert.ok(
      storeOf(trx).runInTransaction(trx, 'select 1', []),
      'a transaction begun by transact runs its statements on its unit',
    );
    leaked = trx;
    const inserted = await insertRow(trx, 'items' as any, { id: 1, label: 'one' } as any);
    assert.equal(inserted.numAffectedRows, 1n);
    const updated = await relabel.run(trx, { id: 1, label: 'uno' });
    assert.equal(updated.numAffectedRows, 1n);
    assert.deepEqual(await byId.first(trx, { id: 1 }), { id: 1, label: 'uno' }, 'and sees its own writes');
  });
  assert.deepEqual(await byId.first(db, { id: 1 }), { id: 1, label: 'uno' }, 'committed');
  await assert.rejects(
    byId.first(leaked, { id: 1 }),
    /already committed/,
    'a transaction used after its end is refused, as Kysely refuses it',
  );
  await assert.rejects(relabel.run(leaked, { id: 1, label: 'late' }), /already committed/);

  // A failing statement rejects (it does not throw), and rolls back its own unit only.
  await transact(db, (trx: any) => insertRow(trx, 'items' as any, { id: 2, label: 'two' } as any));
  await assert.rejects(
    transact(db, async (trx: any) => {
      await relabel.run(trx, { id: 2, label: 'deux' });
      const clash = relabel.run(trx, { id: 2, label: 'uno' });
      assert.ok(clash instanceof Promise);
      await clash;
    }),
    /UNIQUE constraint failed/,
  );
  assert.deepEqual(await byId.first(db, { id: 2 }), { id: 2, label: 'two' }, 'the failed unit left nothing behind');
  assert.deepEqual(await byId.first(db, { id: 1 }), { id: 1, label: 'uno' });

  // Transactions begun without transact go through Kysely as before.
  await db.transaction().execute(async (trx: any) => {
    assert.equal(storeOf(trx).runInTransaction(trx, 'select 1', []), null);
    await relabel.run(trx, { id: 2, label: 'zwei' });
  });
  assert.deepEqual(await byId.first(db, { id: 2 }), { id: 2, label: 'zwei' });
});

test('rows are objects named by their columns, whatever the names: odd characters, __proto__, and a repeated name (the later wins)', async (t) => {
  const { file, cleanup } = tempFile();
  t.after(cleanup);
  const db = openDb({ engine: 'sqlite', file }) as any;
  t.after(() => db.destroy());
  const odd = `it's "odd" \\ name\u2028 ${'$'}{x} */`;
  await sql
    .raw(
      `create table items (id integer primary key, "${odd.replaceAll(`"`, `""`)}" text, "__proto__" text, "constructor" text)`,
    )
    .execute(db);
  await sql.raw(`insert into items values (1, 'a', 'b', 'c')`).execute(db);
  const rows = (await sql.raw(`select *, 'later' as id from items`).execute(db)).rows as Array<Record<string, unknown>>;
  assert.equal(rows.length, 1);
  const row = rows[0]!;
  assert.deepEqual(Object.keys(row), ['id', odd, '__proto__', 'constructor']);
  assert.equal(row.id, 'later', 'a later column of the same name wins');
  assert.equal(row[odd], 'a');
  assert.equal(
    Object.getOwnPropertyDescriptor(row, '__proto__')?.value,
    'b',
    '__proto__ is a column, not the prototype',
  );
  assert.equal(Object.getPrototypeOf(row), Object.prototype);
  assert.equal(row.constructor, 'c');
  // The direct read (outside any unit of work) makes its rows the same way.
  const direct = storeOf(db).readNow(`select * from items`, []) as Array<Record<string, unknown>>;
  assert.deepEqual(Object.keys(direct[0]!), ['id', odd, '__proto__', 'constructor']);
});

test('rows handed over at commit are written with their batch, in the order their units committed; a unit that rolls back hands over none; a flush that throws fails the whole batch', async (t) => {
  const { file, cleanup } = tempFile();
  t.after(cleanup);
  const db = openDb({ engine: 'sqlite', file }) as any;
  t.after(() => db.destroy());
  await sql`create table items (id integer primary key)`.execute(db);
  await sql`create table log (n integer primary key autoincrement, label text not null)`.execute(db);
  const flushes: number[] = [];
  const log: BatchAppender<string> = {
    name: 'log',
    flush(statements, rows) {
      flushes.push(rows.length);
      if (rows.includes('boom')) throw new Error('the log refused its rows');
      for (const row of rows) statements.run('insert into log (label) values (?)', [row]);
    },
  };
  assert.equal(storeOf(db).appendAtCommit(db, log, 'outside'), false, 'outside a transaction: nothing handed over');

  const results = await Promise.allSettled(
    Array.from({ length: 50 }, (_, i) =>
      transact(db, async (trx: any) => {
        await trx.insertInto('items').values({ id: i }).execute();
        assert.equal(storeOf(trx).appendAtCommit(trx, log, `item ${i}`), true);
        if (i % 10 === 0) throw new Error(`unit ${i} fails`);
      }),
    ),
  );
  assert.equal(results.filter((r) => r.status === 'rejected').length, 5);
  const labels = (await sql<{ label: string }>`select label from log order by n`.execute(db)).rows.map((r) => r.label);
  assert.deepEqual(
    labels,
    Array.from({ length: 50 }, (_, i) => i)
      .filter((i) => i % 10 !== 0)
      .map((i) => `item ${i}`),
  );
  assert.ok(flushes.length < 45, `written a batch at a time (${flushes.length} flushes for 45 rows)`);

  // A flush that throws: every unit of its batch fails, and none of their changes is kept.
  const failing = await Promise.allSettled(
    [100, 101, 102].map((id) =>
      transact(db, async (trx: any) => {
        await trx.insertInto('items').values({ id }).execute();
        storeOf(trx).appendAtCommit(trx, log, id === 101 ? 'boom' : `item ${id}`);
      }),
    ),
  );
  assert.deepEqual(
    failing.map((r) => r.status),
    ['rejected', 'rejected', 'rejected'],
  );
  const kept = await sql<{ id: number }>`select id from items where id >= 100`.execute(db);
  assert.deepEqual(kept.rows, []);
  assert.equal((await sql<{ n: number }>`select count(*) as n from log`.execute(db)).rows[0]!.n, 45);
});
