import { sql } from 'kysely';
import { sha256Hex } from '../shared/crypto.ts';
import type { Db } from './db.ts';
import { transact } from './store.ts';

// Attempt limits kept in the database, so every process and every instance on one database shares
// them (docs/security.md, "Limits"). An attempt is taken before the work it limits (a password
// check, a code check, a code sent), in one atomic statement, so concurrent attempts cannot all
// pass a check made before any of them was counted. A window begins with its first attempt and
// lasts `windowMs`; past `max` attempts in it, the key is refused until it ends.

/** One limit: a name of its own, how many attempts a key may make, and over how long. */
export type AttemptLimit = { scope: string; max: number; windowMs: number };

/** Taken: when its window began, and how many attempts the window holds with it. */
export type TakenAttempt = { ok: true; windowStart: number; attempts: number } | { ok: false; retryAfterMs: number };

/** Keys are stored as hashes: the table need not hold addresses or emails. */
const keyHash = (key: string) => sha256Hex(key);

/**
 * Takes one attempt of `key` under `limit`, or refuses it. The count stops one past `max`, which
 * marks the window as refusing; windows that have ended are dropped on the way.
 */
export async function takeAttempt(db: Db, limit: AttemptLimit, key: string, now: number): Promise<TakenAttempt> {
  if (limit.max <= 0) return { ok: true, windowStart: now, attempts: 0 };
  const ended = now - limit.windowMs;
  // One commit for both statements (on SQLite each would be its own otherwise).
  const row = await transact(db, async (trx) => {
    await trx
      .deleteFrom('attempt_windows')
      .where('scope', '=', limit.scope)
      .where('window_start', '<=', ended)
      .execute();
    return trx
      .insertInto('attempt_windows')
      .values({ scope: limit.scope, key_hash: keyHash(key), window_start: now, attempts: 1 })
      .onConflict((oc) =>
        oc.columns(['scope', 'key_hash']).doUpdateSet({
          window_start: sql<number>`case when attempt_windows.window_start <= ${ended} then ${now} else attempt_windows.window_start end`,
          attempts: sql<number>`case when attempt_windows.window_start <= ${ended} then 1 when attempt_windows.attempts > ${limit.max} then attempt_windows.attempts else attempt_windows.attempts + 1 end`,
        }),
      )
      .returning(['window_start', 'attempts'])
      .executeTakeFirstOrThrow();
  });
  const windowStart = Number(row.window_start);
  const attempts = Number(row.attempts);
  if (attempts <= limit.max) return { ok: true, windowStart, attempts };
  return { ok: false, retryAfterMs: Math.max(1, windowStart + limit.windowMs - now) };
}

/** Gives back an attempt taken in the window that began at `windowStart`: it turned out not to count (a right password). */
export async function giveBackAttempt(db: Db, limit: AttemptLimit, key: string, windowStart: number): Promise<void> {
  if (limit.max <= 0) return;
  await db
    .updateTable('attempt_windows')
    .set((eb) => ({ attempts: eb('attempts', '-', 1) }))
    .where('scope', '=', limit.scope)
    .where('key_hash', '=', keyHash(key))
    .where('window_start', '=', windowStart)
    .where('attempts', '>', 0)
    .where('attempts', '<=', limit.max)
    .execute();
}

/**
 * How long `key` would be refused under `limit` if it tried now (0: it would not be), taking
 * nothing: for work that a later limited check would refuse anyway, such as sending a code that
 * could not be checked.
 */
export async function refusedForMs(db: Db, limit: AttemptLimit, key: string, now: number): Promise<number> {
  if (limit.max <= 0) return 0;
  const row = await db
    .selectFrom('attempt_windows')
    .select(['window_start', 'attempts'])
    .where('scope', '=', limit.scope)
    .where('key_hash', '=', keyHash(key))
    .where('window_start', '>', now - limit.windowMs)
    .executeTakeFirst();
  if (!row || Number(row.attempts) < limit.max) return 0;
  return Math.max(1, Number(row.window_start) + limit.windowMs - now);
}
