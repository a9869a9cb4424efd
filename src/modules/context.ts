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

/** What a service call needs: who is asking, in which mode, and what time it is for them. */
export type Ctx = {
  deps: Deps;
  db: Db;
  merchant: Merchant;
  mode: Mode;
  clock: Clock;
  log: Logger;
};
