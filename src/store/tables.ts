// Kysely row types. Times are epoch milliseconds, money is integer cents, booleans are 0/1 and
// structured values are JSON text, so one schema serves SQLite and PostgreSQL alike.
import type { Mode } from '../shared/mode.ts';

export type Flag = number;

/** One-off data tasks already done in this database (store/seal-at-rest.ts). */
export interface StoreTasksTable {
  name: string;
  done_at: number;
}

export interface SecretKeyCheckTable {
  name: string;
  /** A constant sealed under the service key (src/store/key-check.ts). */
  sealed: string;
  created_at: number;
}

export interface IdempotencyKeysTable {
  user_id: string;
  mode: Mode;
  key: string;
  endpoint: string;
  fingerprint: string;
  status_code: number | null;
  response: string | null;
  created_at: number;
  expires_at: number;
}

/** Attempts under one limit by one key in the current window (store/attempts.ts). */
export interface AttemptWindowsTable {
  scope: string;
  /** SHA-256 (hex) of the key: an email or a client address, which this table need not hold. */
  key_hash: string;
  window_start: number;
  attempts: number;
}

/** A key's token bucket under one rate limit, shared by the processes on one database (store/rate-buckets.ts). */
export interface RateBucketsTable {
  scope: string;
  /** An API key's id. */
  key: string;
  /** Tokens left at `at`; below zero while the key owes calls let through before a process saw the others'. */
  tokens: number;
  at: number;
}

/**
 * Every table, by name. The store owns only the tables below; each module adds its own tables to
 * this interface from its *.tables.ts file (declaration merging), so the store never imports a module.
 */
export interface Database {
  store_tasks: StoreTasksTable;
  secret_key_check: SecretKeyCheckTable;
  idempotency_keys: IdempotencyKeysTable;
  attempt_windows: AttemptWindowsTable;
  rate_buckets: RateBucketsTable;
}
