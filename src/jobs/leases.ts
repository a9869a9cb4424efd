import type { Kysely } from 'kysely';
import type { Logger } from 'pino';
import { lockSkipLocked } from '../store/db.ts';
import type { Database } from '../store/tables.ts';
import type { Clock } from '../shared/time.ts';

const CHUNK = 500;

/**
 * A claimed job holds a lease: until it ends no other claim takes the job, and once it ends
 * (its process died) any process may. The runner renews the leases of the jobs it still holds
 * every third of a lease, so a lease can be short, and a dead process's jobs wait that long at
 * most, however long a job runs: a renewal missed twice in a row (a loop held for two thirds of a
 * lease) is what lets a job run twice, which every handler allows for.
 *
 * A job whose row another transaction holds is skipped, not waited for: that is the runner
 * finishing it (which deletes it), and its lease is renewed at the next beat if it is still under
 * way. A renewal that waited would hold the rows it had already updated meanwhile; a finish, which
 * deletes a batch's rows in another order, could wait on those, and PostgreSQL would end that
 * deadlock after a second by failing one of the two.
 *
 * Returns what stops the renewals.
 */
export function keepLeases(options: {
  db: Kysely<Database>;
  log: Logger;
  clock: Clock;
  owner: string;
  leaseMs: number;
  /** The ids of the jobs the runner holds now. */
  held: () => Iterable<string>;
  /** Named in the log line of a renewal that failed. */
  jobKind?: string;
}): () => void {
  const { db, log, clock, owner, leaseMs, held } = options;
  const renew = async () => {
    const ids = [...held()];
    if (ids.length === 0) return;
    const until = clock.now() + leaseMs;
    try {
      for (let i = 0; i < ids.length; i += CHUNK) {
        const ours = db
          .selectFrom('jobs')
          .select('id')
          .where('id', 'in', ids.slice(i, i + CHUNK))
          .where('locked_by', '=', owner);
        await db.updateTable('jobs').set({ locked_until: until }).where('id', 'in', lockSkipLocked(db, ours)).execute();
      }
    } catch (error) {
      log.warn({ err: error, job_kind: options.jobKind }, 'could not renew job leases');
    }
  };
  const heartbeat = setInterval(() => void renew(), Math.max(50, Math.floor(leaseMs / 3)));
  heartbeat.unref?.();
  return () => clearInterval(heartbeat);
}
