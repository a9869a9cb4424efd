import { test } from 'node:test';
import assert from 'node:assert/strict';
import { sql } from 'kysely';
import { freshDb } from '../../test/helpers.ts';
import { listenOn, postgresOnly, settle, twoStores, until } from '../../test/support/listening.ts';
import { storeOf } from './store.ts';
import { notifySql } from './postgres/listener.ts';

// The store's one listening connection (PostgreSQL LISTEN/NOTIFY). Two stores on one schema stand
// for two processes.

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
