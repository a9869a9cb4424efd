import type { Mode } from '../../shared/mode.ts';
import type { Kysely } from 'kysely';
import { storeOfOrNull } from '../../store/store.ts';

/** Changes whenever another process has committed to the database (Store.commitsElsewhere). */
type CommitsElsewhere = () => number;

// The rows of the API keys in use, so that a call with a known key reads no row
// (docs/security.md, "API keys and their revocation"; docs/performance.md). On SQLite only: there
// one process serves, and another process's commit (the CLI's `keys revoke`) moves SQLite's data
// version, which is read again at most once a millisecond. On PostgreSQL several processes serve
// and nothing tells one what another changed, so every call reads its key.
//
// What is cached was read with nothing of this process's writing to keys or merchants under way,
// and was durable when read; every such write empties every cache, once before it runs and once
// after, and no key is cached while one is running (merchants.repo.ts, writingKeys). A revocation
// in the dashboard so holds for the next call, and one by another process for every call that
// starts a millisecond after its commit.

/** What the key check reads of a key and its merchant (merchants.repo.ts, keyByHashQuery). */
export type KeyRow = {
  key_id: string;
  mode: Mode;
  revoked_at: number | null;
  /** Checked on every call against the time of the call, so a cached rolled key stops at its expiry. */
  expires_at: number | null;
  permissions: string | null;
  last_used_at: number | null;
  user_id: string;
  name: string;
  test_clock_offset_ms: number;
};

/** Keys kept at most; past it the cache starts again empty (a key costs a read once more). */
const MAX_KEYS = 10_000;

/** Moves on every write of this process to keys or merchants, before and after it. */
let generation = 0;
/** Writes to keys or merchants under way in this process. */
let writing = 0;

export function keysWriteStarts(): void {
  writing++;
  generation++;
}

export function keysWriteEnds(): void {
  writing--;
  generation++;
}

export class KeyCache {
  private readonly rows = new Map<string, KeyRow>();
  private readonly commitsElsewhere: CommitsElsewhere;
  private seenGeneration = generation;
  private seenDataVersion: number;
  private checkedAtMs = Number.NaN;

  constructor(commitsElsewhere: CommitsElsewhere) {
    this.commitsElsewhere = commitsElsewhere;
    this.seenDataVersion = commitsElsewhere();
  }

  /** The key's row as last read, if it still holds at `nowMs` (real time, in milliseconds). */
  get(keyHash: string, nowMs: number): KeyRow | undefined {
    if (this.seenGeneration !== generation) this.empty();
    if (nowMs !== this.checkedAtMs) {
      this.checkedAtMs = nowMs;
      const version = this.commitsElsewhere();
      if (version !== this.seenDataVersion) {
        this.seenDataVersion = version;
        this.empty();
      }
    }
    return writing > 0 ? undefined : this.rows.get(keyHash);
  }

  /** Keeps a row read at once (so durable), straight after a `get` that missed it. */
  remember(keyHash: string, row: KeyRow): void {
    if (writing > 0 || this.seenGeneration !== generation) return;
    if (this.rows.size >= MAX_KEYS) this.rows.clear();
    this.rows.set(keyHash, row);
  }

  private empty(): void {
    this.rows.clear();
    this.seenGeneration = generation;
  }
}

const caches = new WeakMap<object, KeyCache | null>();

/** The key cache of a SQLite store's database, or null where keys are read on every call. */
export function keyCacheOf(db: Kysely<any>): KeyCache | null {
  let cache = caches.get(db);
  if (cache === undefined) {
    const store = storeOfOrNull(db);
    // Only SQLite can tell that another process committed (Store.commitsElsewhere is a number there).
    cache = !db.isTransaction && store?.engine === 'sqlite' ? new KeyCache(() => store.commitsElsewhere()!) : null;
    caches.set(db, cache);
  }
  return cache;
}
