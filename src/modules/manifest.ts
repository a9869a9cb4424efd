import type { App } from '../http/app-type.ts';
import type { Backoff } from '../jobs/backoff.ts';
import type { JobKindName, JobPayloads } from '../jobs/queue.ts';
import type { JobHandler } from '../jobs/worker.ts';
import type { SealSecrets } from '../store/seal-at-rest.ts';
import type { Kysely } from 'kysely';
import type { Mode } from '../shared/mode.ts';
import type { Db } from '../store/db.ts';
import type { Database } from '../store/tables.ts';
import type { Ctx, Deps } from './context.ts';
import type { PayerDetails } from './customers/customers.rules.ts';
import type { RequestRow } from './requests/requests.tables.ts';
import type { PayBody } from './test-helpers/pay.schemas.ts';

// What a module is, to the rest of Tono: one manifest per module, listed in src/modules/index.ts,
// from which the HTTP app, the runtime, the CLI and the tests are all built (docs/architecture.md).
// What modules contribute to one another is typed here, beside the manifest that declares it: the
// manifest names no module, only the shapes of their rows and forms.

// Checkout: what differs between kinds of request on the hosted page (the summary the payer reads,
// the consent to create at the bank, what happens when the payer comes back). One-off payments are
// the checkout module's own; recurring consents and subscriptions provide theirs in their manifests.

export type SummaryLine = { label: string; value: string };
export type Summary = {
  /** The big line: the amount, or what the payer is agreeing to. */
  headline: string | null;
  lines: SummaryLine[];
  /** The consent wording above the bank choice. */
  consentText: string;
  /** Label of the continue button. */
  action: string;
};

export type StartInput = {
  amountCents: number | null;
  bankId: string;
  details: PayerDetails | null;
  channel: 'page' | 'embed' | 'api';
};
export type StartOutcome =
  | { ok: true; redirectUrl: string; paymentId: string | null }
  | { ok: false; message: string; paymentId: string | null };
export type ReturnInput = { state: string; code?: string | null; error?: string | null };
/** Where the payer's return ended: the request, the payment (if one was made) and its status. */
export type ReturnOutcome = { requestId: string; paymentId: string | null; status: string; channel: string | null };

/** What the payer reads on the page of a request that set something up (a consent, a subscription). */
export type SetUpView = { heading: string; paragraphs: string[] };

export type CheckoutStrategy = {
  summary(request: RequestRow): Summary;
  /** Null when the page can take this request; otherwise a plain message for the payer. */
  unavailable(request: RequestRow): string | null;
  start(deps: Deps, request: RequestRow, input: StartInput): Promise<StartOutcome>;
  /** Completes a return whose state this strategy issued; null when the state is not its own. */
  completeReturn(deps: Deps, input: ReturnInput): Promise<ReturnOutcome | null>;
  /**
   * For kinds whose approval moves no money: what was set up, for the page of the request once it
   * is done (right after approval and on every later visit). Absent for one-off payments.
   */
  setUpView?(deps: Deps, request: RequestRow, merchantName: string): Promise<SetUpView | null>;
};

/** An event as written: enough for a subscriber to decide what to do, without reading it back. */
export type EmittedEvent = {
  id: string;
  userId: string;
  mode: Mode;
  type: string;
  /** The id of the object the event is about (a payment, a refund). */
  objectId: string;
  hasSecret: boolean;
  /**
   * The object as the event's transaction has left it, when the emitter has it at hand (for
   * `payment.status_updated`, the payment's row): a subscriber uses it rather than reading it again.
   */
  subject?: unknown;
};

/** Runs for every event as it is written, in the event's transaction. */
export type EventSubscriber = (db: Kysely<Database>, event: EmittedEvent) => Promise<void>;

/** How the pay test helper pays one kind of request the way a payer would. */
export type PayHelper = (ctx: Ctx, request: RequestRow, body: PayBody) => Promise<Record<string, unknown>>;

/** A kind of durable job: its name, what runs it (taking that kind's payload), and how it retries when it throws. */
export type JobKind<K extends JobKindName = JobKindName> = {
  name: K;
  handler(deps: Deps): JobHandler<JobPayloads[K]>;
  /** Waits between tries when the handler throws (default: 2 s doubling to an hour). */
  backoff?: Backoff;
  /** Tries before the job is kept as failed (default 12). */
  maxAttempts?: number;
};

/**
 * A module's part of a merchant's test-mode data, which the merchant can delete all at once
 * (src/modules/test-helpers/test-data.service.ts): the rows of its own tables in test mode. What a
 * merchant set up rather than made by testing (API keys, webhook endpoints, bank accounts) is
 * settings, and no module declares it here. Every function works on the merchant's test mode only.
 */
export type TestData = {
  /** The kinds it counts, by their name in the API's answer (snake_case), each with what the dashboard calls it. */
  kinds: Record<string, string>;
  /** How many of each kind the merchant has in test mode. */
  count(db: Db, userId: string): Promise<Record<string, number>>;
  /**
   * Locks the rows its jobs lock before they write (PostgreSQL; nothing on SQLite, whose writers
   * take turns already), before any module deletes anything: a job that got there first finishes
   * first, and its writes are deleted with the rest; one that comes later finds its object gone.
   */
  hold?(trx: Db, userId: string): Promise<void>;
  /**
   * Deletes them in the one transaction of the whole deletion, writing no event and queueing no
   * email; returns how many of each kind it deleted. Modules are called in the reverse order of
   * src/modules/index.ts, so the rows that point at a module's rows are gone first.
   */
  delete(trx: Db, userId: string): Promise<Record<string, number>>;
};

/** Completes a bank return whose state the module issued; null when it is not its own. */
export type BankReturn = (deps: Deps, input: ReturnInput) => Promise<string | null>;

/** What modules contribute to one another, gathered from every manifest. */
export type Contributions = {
  /** How the hosted page takes each kind of request (payment, recurring, subscription). */
  checkout: ReadonlyMap<string, CheckoutStrategy>;
  /** How the pay test helper pays each kind of request the way a payer would. */
  payHelpers: ReadonlyMap<string, PayHelper>;
  /** Bank returns that are not a payer's checkout (BankReturn). */
  bankReturns: ReadonlyArray<BankReturn>;
  /** Each module's test-mode data, in the order it is deleted (the reverse of the module list). */
  testData: ReadonlyArray<TestData & { module: string }>;
};

/** Something a process with workers keeps running beside the job worker (a batched job lane). */
export type Runner = { start(): void; stop(): Promise<void> };

export type ModuleManifest = {
  name: string;
  /** Its HTTP routes; `contributions` holds what other modules plug into this one. */
  routes?(app: App, deps: Deps, contributions: Contributions): Promise<void>;
  jobs?: Array<{ [K in JobKindName]: JobKind<K> }[JobKindName]>;
  runners?(deps: Deps): Runner[];
  /**
   * Handlers of the bank's redirect back to PUBLIC_BASE_URL/pay/return for what is not a payer's
   * checkout (a merchant approving its refund authority): each answers where to send the browser,
   * or null when the state is not its own.
   */
  bankReturns?: BankReturn[];
  /** Checkout strategies this module provides, by request kind. */
  checkout?: Record<string, (deps: Deps) => CheckoutStrategy>;
  /** Pay test helpers this module provides, by request kind. */
  payHelpers?: Record<string, PayHelper>;
  /** Its tables' rows of a merchant's test mode, for deleting them all at once. */
  testData?: TestData;
  /** Seals this module's secrets stored in clear before secrets were sealed at rest (once per database). */
  sealSecrets?: SealSecrets;
  /** Runs for every event as it is written, in its transaction (webhooks' fan-out). */
  onEvent?: EventSubscriber;
  /** Work to set going once in a process that runs workers (scheduling a recurring job). */
  start?(deps: Deps): Promise<void>;
};
