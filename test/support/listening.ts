// Two stores on one PostgreSQL schema stand for two processes; what one hears on a channel.
import type { TestContext } from 'node:test';
import assert from 'node:assert/strict';
import { engine, freshDb, pgUrl } from '../helpers.ts';
import { migrateToLatest } from '../../src/store/migrate.ts';
import { openStore, storeOf, type Store } from '../../src/store/store.ts';

export const postgresOnly = {
  skip: engine !== 'postgres' ? 'notifications are PostgreSQL’s (TEST_ENGINE=postgres)' : false,
};

/** A fresh schema (migrated when asked) seen through the test's store and a second one of its own. */
export async function twoStores(
  t: TestContext,
  options: { migrate?: boolean } = {},
): Promise<{ here: Store; there: Store }> {
  const testDb = await freshDb();
  t.after(() => testDb.drop());
  if (options.migrate) await migrateToLatest(testDb.db);
  const there = openStore({ engine: 'postgres', url: pgUrl, schema: testDb.schema, poolSize: 2 });
  t.after(() => there.close());
  return { here: storeOf(testDb.db), there };
}

export type Heard = { notices: string[]; listening: number; lost: number };

/** Listens on `store`'s channel `name`; resolves once the connection listens. */
export async function listenOn(t: TestContext, store: Store, name: string): Promise<Heard> {
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

export async function until(what: string, check: () => boolean | Promise<boolean>, timeoutMs = 10_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!(await check())) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((resolve) => setTimeout(resolve, 5));
  }
}

/** Time for a notification that was sent to have arrived. */
export const settle = () => new Promise((resolve) => setTimeout(resolve, 200));
