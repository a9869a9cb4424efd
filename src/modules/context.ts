import type { Logger } from 'pino';
import type { Config } from '../config.ts';
import type { Worker } from '../jobs/worker.ts';
import type { Clock } from '../shared/time.ts';
import type { Db } from '../store/db.ts';
import type { Store } from '../store/store.ts';
import type { SecretBox } from '../shared/secret-box.ts';
import type { BankRegistry } from './banks/bank-connector.ts';
import type { Mode } from '../shared/mode.ts';

/** Long-lived dependencies, built once in main (or by the test harness). */
export type Deps = {
  config: Config;
  /** Transactions, durability and the engine's extras (docs/store.md). */
  store: Store;
  /** The store's query builder (`store.db`). */
  db: Db;
  log: Logger;
  /** Real time; test-mode work reads the merchant's test clock derived from it. */
  clock: Clock;
  worker: Worker;
  /** The payer's banks: `deps.banks.connectorFor(bankId, mode)`. */
  banks: BankRegistry;
  /** Seals and opens secrets stored at rest (docs/security.md). */
  secrets: SecretBox;
};

export type Merchant = { id: string; name: string };

/**
 * Who made a change, as the audit trail records it (docs/audit.md): an API key, a dashboard member,
 * a payer on the payer dashboard, an operator at the CLI, or the service's own jobs.
 */
export type Actor =
  | { kind: 'api_key'; id: string }
  | { kind: 'member'; id: string; email: string }
  | { kind: 'payer'; email: string }
  | { kind: 'operator'; name: string }
  | { kind: 'service'; job: string };

/** Where a change came from: the client's address and browser for people, and the request's id. */
export type Origin = { ip: string | null; userAgent: string | null; requestId: string | null };

/** The origin of a change no request carried: a job's, the CLI's. */
export const NO_ORIGIN: Origin = { ip: null, userAgent: null, requestId: null };

/** What a service call needs: who is asking, in which mode, and what time it is for them. */
export type Ctx = {
  deps: Deps;
  db: Db;
  merchant: Merchant;
  mode: Mode;
  clock: Clock;
  log: Logger;
  actor: Actor;
  origin: Origin;
};
