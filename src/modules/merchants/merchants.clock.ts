import type { Mode } from '../../shared/mode.ts';
import { shiftedClock, type Clock } from '../../shared/time.ts';
import type { Db } from '../../store/db.ts';
import type { Deps } from '../context.ts';
import { testClockOffsetOf } from './merchants.repo.ts';

// What time it is for a merchant in a mode, asked one way everywhere: real time live; in test mode
// the merchant's test clock, real time plus the offset kept on the merchant (docs/api-conventions.md,
// "Test mode and the test clock"). Rows of every kind carry the `user_id` and `mode` asked with.

export type ClockOwner = { user_id: string; mode: Mode | string };

/** The clock when the merchant's offset is at hand already (read with the API key, or the dashboard session). */
export function clockAt(realClock: Clock, mode: Mode | string, offsetMs: number): Clock {
  return mode === 'test' ? shiftedClock(realClock, offsetMs) : realClock;
}

/** The clock an owner's objects live on, reading the test clock's offset (in `db`, a transaction's when given). */
export async function clockOf(deps: Pick<Deps, 'db' | 'clock'>, owner: ClockOwner, db: Db = deps.db): Promise<Clock> {
  return owner.mode === 'test' ? shiftedClock(deps.clock, await testClockOffsetOf(db, owner.user_id)) : deps.clock;
}

/** Which clock a job of this owner runs on: the merchant's test clock (its id) in test mode, real time (null) live. */
export function clockIdOf(owner: ClockOwner): string | null {
  return owner.mode === 'test' ? owner.user_id : null;
}
