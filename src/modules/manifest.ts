import type { App } from '../http/app-type.ts';
import type { Backoff } from '../jobs/backoff.ts';
import type { JobKindName, JobPayloads } from '../jobs/queue.ts';
import type { JobHandler } from '../jobs/worker.ts';
import type { SealSecrets } from '../store/seal-at-rest.ts';
import type { CheckoutStrategy } from './checkout/checkout.strategies.ts';
import type { Deps } from './context.ts';
import type { EventSubscriber } from './events/events.subscribers.ts';
import type { PayHelper } from './test-helpers/pay.service.ts';

// What a module is, to the rest of Tono: one manifest per module, listed in src/modules/index.ts,
// from which the HTTP app, the runtime, the CLI and the tests are all built (docs/architecture.md).

/** A kind of durable job: its name, what runs it (taking that kind's payload), and how it retries when it throws. */
export type JobKind<K extends JobKindName = JobKindName> = {
  name: K;
  handler(deps: Deps): JobHandler<JobPayloads[K]>;
  /** Waits between tries when the handler throws (default: 2 s doubling to an hour). */
  backoff?: Backoff;
  /** Tries before the job is kept as failed (default 12). */
  maxAttempts?: number;
};

/** What modules contribute to one another, gathered from every manifest. */
export type Contributions = {
  /** How the hosted page takes each kind of request (payment, recurring, subscription). */
  checkout: ReadonlyMap<string, CheckoutStrategy>;
  /** How the pay test helper pays each kind of request the way a payer would. */
  payHelpers: ReadonlyMap<string, PayHelper>;
};

/** Something a process with workers keeps running beside the job worker (a batched job lane). */
export type Runner = { start(): void; stop(): Promise<void> };

export type ModuleManifest = {
  name: string;
  /** Its HTTP routes; `contributions` holds what other modules plug into this one. */
  routes?(app: App, deps: Deps, contributions: Contributions): Promise<void>;
  jobs?: Array<{ [K in JobKindName]: JobKind<K> }[JobKindName]>;
  runners?(deps: Deps): Runner[];
  /** Checkout strategies this module provides, by request kind. */
  checkout?: Record<string, (deps: Deps) => CheckoutStrategy>;
  /** Pay test helpers this module provides, by request kind. */
  payHelpers?: Record<string, PayHelper>;
  /** Seals this module's secrets stored in clear before secrets were sealed at rest (once per database). */
  sealSecrets?: SealSecrets;
  /** Runs for every event as it is written, in its transaction (webhooks' fan-out). */
  onEvent?: EventSubscriber;
  /** Work to set going once in a process that runs workers (scheduling a recurring job). */
  start?(deps: Deps): Promise<void>;
};
