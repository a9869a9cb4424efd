import { sql } from 'kysely';
import { engineOf, type Db } from './db.ts';

// Token buckets kept in the database, so that every process on it enforces one rate per key
// (docs/security.md, "Limits"). A process does not ask before each call: it lets calls through
// against the level it last read and reports how many every few tens of milliseconds
// (src/http/rate-limit.ts, SharedTokenBuckets). A report refills the bucket for the time since the
// last one, takes the calls off, and answers the level, which may go below zero: calls that
// processes let through before they saw one another's are owed, and refused until refilled.

/** One limit: its name, the rate a key's bucket refills at, and how many tokens it holds at most. */
export type BucketRule = { scope: string; perSecond: number; burst: number };

/**
 * Takes `used` calls off each key's bucket at `now`; answers each key's level after them. A bucket
 * never seen starts full; one owes at most a burst.
 */
export async function reportBucketUse(
  db: Db,
  rule: BucketRule,
  uses: ReadonlyArray<{ key: string; used: number }>,
  now: number,
): Promise<Map<string, number>> {
  if (uses.length === 0) return new Map();
  const [greatest, least] = engineOf(db) === 'postgres' ? ['greatest', 'least'] : ['max', 'min'];
  const burst = sql`cast(${rule.burst} as double precision)`;
  const at = sql`cast(${now} as bigint)`;
  const refilled = sql`${sql.raw(least)}(${burst}, rate_buckets.tokens + ${sql.raw(greatest)}(0, ${at} - rate_buckets.at) * cast(${rule.perSecond / 1000} as double precision))`;
  const rows = await db
    .insertInto('rate_buckets')
    // A new row's tokens are a full bucket less the calls; on a clash they tell the update the calls.
    .values(uses.map(({ key, used }) => ({ scope: rule.scope, key, tokens: rule.burst - used, at: now })))
    .onConflict((oc) =>
      oc.columns(['scope', 'key']).doUpdateSet({
        tokens: sql<number>`${sql.raw(greatest)}(-${burst}, ${refilled} - (${burst} - excluded.tokens))`,
        at: sql<number>`${sql.raw(greatest)}(rate_buckets.at, ${at})`,
      }),
    )
    .returning(['key', 'tokens'])
    .execute();
  return new Map(rows.map((row) => [row.key, Number(row.tokens)]));
}

/**
 * Deletes the buckets last used before `before` (an hour ago: long refilled, so they are what an
 * absent row means); answers how many.
 */
export async function pruneRateBuckets(db: Db, before: number): Promise<number> {
  const result = await db.deleteFrom('rate_buckets').where('at', '<', before).executeTakeFirst();
  return Number(result.numDeletedRows);
}
