import { test } from 'node:test';
import assert from 'node:assert/strict';
import pino from 'pino';
import { listenOn, postgresOnly, settle, twoStores, until } from '../../test/support/listening.ts';
import { enqueue, JOBS_CHANNEL, onJobEnqueued } from './queue.ts';

// Which transactions that queue jobs tell other processes (PostgreSQL LISTEN/NOTIFY). Two stores on
// one schema stand for two processes.

declare module './queue.ts' {
  interface JobPayloads {
    'wake-up.plain': Record<string, never>;
    'wake-up.laned': { i: number };
  }
}

const log = pino({ level: 'silent' });

test(
  'a job due now is announced to other processes only when no runner here can start it, once per lane and transaction',
  postgresOnly,
  async (t) => {
    const { here, there } = await twoStores(t, { migrate: true });
    const heard = await listenOn(t, there, JOBS_CHANNEL);
    const lanesOf = () => heard.notices.map((payload) => payload.split(' ')[1]);

    // No runner of either lane in this process: one notification per lane for three jobs of each.
    await here.transaction(async (trx) => {
      for (let i = 0; i < 3; i++) {
        await enqueue(trx, { kind: 'wake-up.plain', runAt: 0, payload: {} });
        await enqueue(trx, { kind: 'wake-up.laned', runAt: 0, payload: { i }, batched: true });
      }
    });
    await until('two notifications', () => heard.notices.length === 2);
    assert.deepEqual(lanesOf().sort(), ['', 'wake-up.laned']);

    // A job due later, and a duplicate that is not inserted, announce nothing.
    await enqueue(here.db, { kind: 'wake-up.plain', runAt: Date.now() + 60_000, payload: {} });
    await enqueue(here.db, { kind: 'wake-up.plain', runAt: 0, payload: {}, dedupeKey: 'once' });
    await until('the first of the deduplicated jobs', () => heard.notices.length === 3);
    await enqueue(here.db, { kind: 'wake-up.plain', runAt: 0, payload: {}, dedupeKey: 'once' });
    await settle();
    assert.equal(heard.notices.length, 3);

    // A runner here with room takes it itself; a full one leaves it to the others.
    let room = true;
    let pokes = 0;
    const stop = onJobEnqueued(null, { poke: () => (pokes += 1), hasRoom: () => room }, { db: here.db, log });
    t.after(stop);
    await enqueue(here.db, { kind: 'wake-up.plain', runAt: 0, payload: {} });
    await until('the runner here to be woken', () => pokes >= 1);
    await settle();
    assert.equal(heard.notices.length, 3, 'a runner here with room: nobody else is told');
    room = false;
    await enqueue(here.db, { kind: 'wake-up.plain', runAt: 0, payload: {} });
    await until('the notification', () => heard.notices.length === 4);
    assert.equal(lanesOf()[3], '');
  },
);
