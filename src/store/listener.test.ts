import { test, type TestContext } from 'node:test';
import assert from 'node:assert/strict';
import { sql } from 'kysely';
import { engine, freshDb, pgUrl } from '../../test/helpers.ts';
import { notifySql } from './postgres/listener.ts';
import { openStore, storeOf, type Store } from './store.ts';

// The store's one listening connection (PostgreSQL LISTEN/NOTIFY). Two stores on one schema stand
// for two processes.

const postgresOnly = { skip: engine !== 'postgres' ? 'notifications are PostgreSQL’s (TEST_ENGINE=postgres)' : false };

async function twoStores(t: TestContext): Promise<{ here: Store; there: Store }> {
  const testDb = await freshDb();
  t.after(() => testDb.drop());
  const there = openStore({ engine: 'postgres', url: pgUrl, schema: testDb.schema, poolSize: 2 });
  t.after(() => there.close());
  return { here: storeOf(testDb.db), there };
}

type Heard = { notices: string[]; listening: number; lost: number };

/** Listens on `store`'s channel `name`; resolves once the connection listens. */
async function listenOn(t: TestContext, store: Store, name: string): Promise<Heard> {
  const heard: Heard = { notices: [], listening: 0, lost: 0 };
  let ready: () => void;
  const listening = new Promise<void>((resolve) => (ready = resolve));
  const stop = store.listen(name, {
    notice: (payload) => heard.notices.push(payload),
    listening: () => {
      heard.listening += 1;
      ready();
    },
    lost: () => (heard.lost += 1),
  });
  assert.ok(stop);
  t.after(stop);
  await listening;
  return heard;
}

async function until(what: string, check: () => boolean, timeoutMs = 10_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!check()) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((resolve) => setTimeout(resolve, 5));
  }
}

/** Time for a notification that was sent to have arrived. */
const settle = () => new Promise((resolve) => setTimeout(resolve, 200));

test(
  'a notification sent in a transaction is heard once it commits, never if it rolls back, and only on its schema',
  postgresOnly,
  async (t) => {
    const { here, there } = await twoStores(t);
    const other = await freshDb();
    t.after(() => other.drop());
    const heard = await listenOn(t, here, 'tono_test');
    const elsewhere = await listenOn(t, storeOf(other.db), 'tono_test');

    await there.transaction(async (trx) => {
      await sql`select ${notifySql('tono_test', 'one')}`.execute(trx);
      await settle();
      assert.deepEqual(heard.notices, [], 'not before the commit');
    });
    await until('the notification', () => heard.notices.length === 1);
    assert.deepEqual(heard.notices, ['one']);

    await assert.rejects(
      there.transaction(async (trx) => {
        await sql`select ${notifySql('tono_test', 'two')}`.execute(trx);
        throw new Error('rolled back');
      }),
    );
    await settle();
    assert.deepEqual(heard.notices, ['one']);
    assert.deepEqual(elsewhere.notices, [], "another schema's channel hears nothing");
  },
);

test('a dropped listening connection is made again, and what is sent afterwards is heard', postgresOnly, async (t) => {
  const { here, there } = await twoStores(t);
  const heard = await listenOn(t, here, 'tono_test');
  await sql`select pg_terminate_backend(pid) from pg_stat_activity
            where pid <> pg_backend_pid() and query like 'LISTEN %tono_test_%'`.execute(there.db);
  await until('the connection to be made again', () => heard.lost >= 1 && heard.listening >= 2);
  await sql`select ${notifySql('tono_test', 'after')}`.execute(there.db);
  await until('the notification', () => heard.notices.includes('after'));
});
