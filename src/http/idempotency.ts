import { sql, type Transaction } from 'kysely';
import { stringify as canonicalJson } from 'safe-stable-stringify';
import { AppError } from '../shared/errors.ts';
import { sha256Hex } from '../shared/crypto.ts';
import { DAY_MS } from '../shared/time.ts';
import type { Database } from '../store/tables.ts';
import { transact } from '../store/store.ts';
import { openStored, type SecretBox } from '../shared/secret-box.ts';
import type { Clock } from '../shared/time.ts';
import type { Mode } from '../shared/mode.ts';
import type { Db } from '../store/db.ts';
import { countOwned, deleteOwned } from '../store/owned-rows.ts';
import { prepared } from '../store/prepared.ts';

/** Who is asking: the fields of a service context that idempotency needs. */
export type IdempotencyScope = {
  db: Db;
  clock: Clock;
  merchant: { id: string };
  mode: Mode;
  deps: { secrets: SecretBox };
};

export type Reply<T> = { status: number; body: T; replayed: boolean };

/**
 * Runs `work` at most once per (merchant, mode, Idempotency-Key) for 24 hours. The key row is
 * inserted in the same transaction as the work, so a concurrent duplicate waits on it and then
 * reads the stored result; the same key with a different body is a 409. Bodies are compared as
 * parsed JSON with their keys sorted, so the same object sent with its keys in another order or
 * other whitespace is the same request.
 */
export async function idempotent<T>(
  ctx: IdempotencyScope,
  key: string | undefined,
  endpoint: string,
  input: unknown,
  status: number,
  work: (trx: Transaction<Database>) => Promise<T>,
): Promise<Reply<T>> {
  if (!key) return transact(ctx.db, async (trx) => ({ status, body: await work(trx), replayed: false }));
  const fingerprint = fingerprintOf(endpoint, input);
  const now = ctx.clock.now();
  const scope = { user_id: ctx.merchant.id, mode: ctx.mode, key };
  return transact(ctx.db, async (trx) => {
    const claimed = await claimKey.first(trx, {
      ...scope,
      endpoint,
      fingerprint,
      created_at: now,
      expires_at: now + DAY_MS,
    });
    if (!claimed) {
      const existing = await keyRow(trx, scope);
      if (!existing) throw new Error(`idempotency key ${key} neither claimed nor found`);
      return replayOf<T>(ctx, existing, endpoint, fingerprint);
    }
    const body = await work(trx);
    // Sealed: a stored reply may hold a secret shown once (a new webhook endpoint's).
    await storeReply.later(trx, {
      ...scope,
      status_code: status,
      response: ctx.deps.secrets.seal(JSON.stringify(body)),
    });
    return { status, body, replayed: false };
  });
}

type KeyScope = { user_id: string; mode: Mode; key: string };
type KeyRow = { key: string; endpoint: string; fingerprint: string; response: string | null; expires_at: number };

function keyRow(db: Db, scope: KeyScope): Promise<KeyRow | undefined> {
  return db
    .selectFrom('idempotency_keys')
    .select(['key', 'endpoint', 'fingerprint', 'response', 'expires_at'])
    .where('user_id', '=', scope.user_id)
    .where('mode', '=', scope.mode)
    .where('key', '=', scope.key)
    .executeTakeFirst();
}

/** The first call's reply again, or 409 when the key was used for another request. */
function replayOf<T>(ctx: IdempotencyScope, row: KeyRow, endpoint: string, fingerprint: string): Reply<T> {
  if (row.endpoint !== endpoint || row.fingerprint !== fingerprint) {
    throw new AppError('conflict.idempotency_key_reused', 'This Idempotency-Key was used with a different request', {
      idempotency_key: row.key,
    });
  }
  return {
    status: 200,
    body: JSON.parse(row.response === null ? 'null' : openStored(ctx.deps.secrets, row.response)) as T,
    replayed: true,
  };
}

/**
 * The reply a live key already has, read before a call does work that cannot wait inside its
 * transaction (a webhook URL's DNS check): a retry answers as its first call did, whatever the
 * world says now. Null when the key is new, expired, or its first call has not committed yet;
 * idempotent() then decides.
 */
export async function replayIfAnswered<T>(
  ctx: IdempotencyScope,
  key: string | undefined,
  endpoint: string,
  input: unknown,
): Promise<Reply<T> | null> {
  if (!key) return null;
  const row = await keyRow(ctx.db, { user_id: ctx.merchant.id, mode: ctx.mode, key });
  if (!row || row.response === null || Number(row.expires_at) < ctx.clock.now()) return null;
  return replayOf<T>(ctx, row, endpoint, fingerprintOf(endpoint, input));
}

function fingerprintOf(endpoint: string, input: unknown): string {
  return sha256Hex(`${endpoint}\n${canonicalJson(input ?? null)}`);
}

/**
 * Takes the key for this call: a new row, or the row of a key that has expired (on the merchant's
 * clock, as `created_at` is) made new. No row comes back when the key is live, used by another
 * call: then the caller reads what it stored. A concurrent call with the same key waits here on
 * the first's row until that one commits or rolls back.
 */
const claimKey = prepared<KeyScope & { endpoint: string; fingerprint: string; created_at: number; expires_at: number }>(
  (db, arg) => {
    const fresh = {
      endpoint: arg('endpoint'),
      fingerprint: arg('fingerprint'),
      status_code: null,
      response: null,
      created_at: arg('created_at'),
      expires_at: arg('expires_at'),
    };
    return db
      .insertInto('idempotency_keys')
      .values({ user_id: arg('user_id'), mode: arg('mode'), key: arg('key'), ...fresh })
      .onConflict((oc) =>
        oc
          .columns(['user_id', 'mode', 'key'])
          .doUpdateSet(fresh)
          .where('idempotency_keys.expires_at', '<', arg('created_at')),
      )
      .returning('key');
  },
);

/** The reply kept for the key; sent with the transaction's COMMIT on PostgreSQL. */
const storeReply = prepared<KeyScope & { status_code: number; response: string }>((db, arg) =>
  db
    .updateTable('idempotency_keys')
    .set({ status_code: arg('status_code'), response: arg('response') })
    .where('user_id', '=', arg('user_id'))
    .where('mode', '=', arg('mode'))
    .where('key', '=', arg('key')),
);

/** How many keys a merchant's mode has a reply kept for (their test data, when it is deleted). */
export function countIdempotencyKeys(db: Db, owner: { userId: string; mode: Mode }): Promise<number> {
  return countOwned(db, 'idempotency_keys', owner);
}

/** Forgets the replies kept for a merchant's mode, so a key used before names nothing deleted; how many. */
export function forgetIdempotencyKeys(db: Db, owner: { userId: string; mode: Mode }): Promise<number> {
  return deleteOwned(db, 'idempotency_keys', owner);
}

/**
 * Deletes up to `limit` stored replies whose key has expired, and answers how many: a live key by
 * real time, a test key by its merchant's test clock (as the key is read). Each row is deleted only
 * as it was read, so a key reused meanwhile (a new reply, a new expiry) stays.
 */
export async function pruneExpiredIdempotencyKeys(db: Db, realNow: number, limit: number): Promise<number> {
  const expired = await db
    .selectFrom('idempotency_keys as k')
    .innerJoin('users as u', 'u.id', 'k.user_id')
    .select(['k.user_id', 'k.mode', 'k.key', 'k.expires_at'])
    .where((eb) =>
      eb.or([
        eb.and([eb('k.mode', '=', 'live'), eb('k.expires_at', '<', realNow)]),
        eb.and([eb('k.mode', '=', 'test'), eb('k.expires_at', '<', sql<number>`${realNow} + u.test_clock_offset_ms`)]),
      ]),
    )
    .limit(limit)
    .execute();
  if (expired.length === 0) return 0;
  const result = await db
    .deleteFrom('idempotency_keys')
    .where(({ eb, refTuple, tuple }) =>
      eb(
        refTuple('user_id', 'mode', 'key', 'expires_at'),
        'in',
        expired.map((row) => tuple(row.user_id, row.mode, row.key, row.expires_at)),
      ),
    )
    .executeTakeFirst();
  return Number(result.numDeletedRows);
}
