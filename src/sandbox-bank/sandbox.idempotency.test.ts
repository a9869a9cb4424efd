import { test } from 'node:test';
import assert from 'node:assert/strict';
import { freshDb } from '../../test/helpers.ts';
import { migrateToLatest } from '../store/migrate.ts';
import { transact } from '../store/store.ts';
import { holdIdempotencyKey, IDEMPOTENCY_WINDOW_MS } from './sandbox.idempotency.ts';

// The bank's x-idempotency-key: claimed first, looked up only when the claim clashes.

test('a key is held once for its window: replayed with the same body, refused with another, free again after the window', async (t) => {
  const { db, drop } = await freshDb();
  t.after(drop);
  await migrateToLatest(db);
  const hold = (fingerprint: string, newId: string, now: number) =>
    transact(db, (trx) =>
      holdIdempotencyKey(trx as any, {
        clientId: 'tono',
        endpoint: 'domestic-payments',
        key: 'k-1',
        fingerprint,
        newId,
        now,
      }),
    );

  assert.deepEqual(await hold('body-a', 'dp-1', 1_000), { replayOf: null });
  assert.deepEqual(await hold('body-a', 'dp-2', 2_000), { replayOf: 'dp-1' });
  await assert.rejects(hold('body-b', 'dp-3', 3_000), /already used with a different request body/);
  // Another endpoint or client has its own keys.
  assert.deepEqual(
    await transact(db, (trx) =>
      holdIdempotencyKey(trx as any, {
        clientId: 'tono',
        endpoint: 'domestic-payment-consents',
        key: 'k-1',
        fingerprint: 'x',
        newId: 'dpc-1',
        now: 3_000,
      }),
    ),
    { replayOf: null },
  );

  // Still held at the window's last millisecond; free once it has passed, and then held for the new resource.
  assert.deepEqual(await hold('body-a', 'dp-4', 999 + IDEMPOTENCY_WINDOW_MS), { replayOf: 'dp-1' });
  assert.deepEqual(await hold('body-b', 'dp-4', 1_000 + IDEMPOTENCY_WINDOW_MS), { replayOf: null });
  assert.deepEqual(await hold('body-b', 'dp-5', 2_000 + IDEMPOTENCY_WINDOW_MS), { replayOf: 'dp-4' });
});
