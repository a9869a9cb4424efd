import type { Logger } from 'pino';
import { engineOf, type Db } from '../../store/db.ts';
import { afterCommit, storeOf, storeOfOrNull, type Store } from '../../store/store.ts';
import type { Runner } from '../manifest.ts';
import { chainPending, hasPending, merchantsWithPending } from './audit.repo.ts';

// PostgreSQL: a change's audit record commits with the change, unnumbered, in audit_pending; this
// runner numbers and chains it into audit_events right after (docs/audit.md, "Locking"). Commits
// made while a pass runs are chained together by the next one, so the passes grow with the load
// and a merchant's changes never wait for one another's flush at its head. A record whose process
// died before chaining it, or which has no runner (WORKERS=false), is found by the sweep of any
// process that has one.

/** Records chained in one transaction at most. */
const RECORDS_A_PASS = 2000;
/** Merchants chained in one transaction at most. */
const MERCHANTS_A_PASS = 200;
/** How often every merchant's unchained records are looked for. */
const SWEEP_EVERY_MS = 1000;
/** After a pass found a merchant's head held by another process, the wait before it looks again. */
const HELD_RETRY_MS = 20;
/** After a pass failed (the database was out of reach), the wait before the next. */
const RETRY_AFTER_MS = 100;

const chainers = new WeakMap<Store, AuditChainer>();

export class AuditChainer implements Runner {
  private readonly dirty = new Set<string>();
  private draining: Promise<void> | null = null;
  private sweeper: NodeJS.Timeout | null = null;
  private started = false;

  private readonly db: Db;
  private readonly log: Logger;

  constructor(db: Db, log: Logger) {
    this.db = db;
    this.log = log;
  }

  start(): void {
    if (this.started) return;
    this.started = true;
    chainers.set(storeOf(this.db), this);
    this.sweeper = setInterval(() => void this.sweep(), SWEEP_EVERY_MS);
    this.sweeper.unref();
    void this.sweep();
  }

  async stop(): Promise<void> {
    this.started = false;
    if (chainers.get(storeOf(this.db)) === this) chainers.delete(storeOf(this.db));
    if (this.sweeper) clearInterval(this.sweeper);
    this.sweeper = null;
    await this.draining;
  }

  /** Chains the merchant's committed records soon, with whatever else has committed by then. */
  soon(userId: string): void {
    this.dirty.add(userId);
    if (this.started && !this.draining)
      this.draining = this.drain().finally(() => {
        this.draining = null;
      });
  }

  private again(merchants: readonly string[]): void {
    const timer = setTimeout(() => {
      for (const userId of merchants) this.soon(userId);
    }, HELD_RETRY_MS);
    timer.unref();
  }

  private async sweep(): Promise<void> {
    try {
      for (const userId of await merchantsWithPending(this.db, MERCHANTS_A_PASS)) this.soon(userId);
    } catch (error) {
      if (this.started) this.log.warn({ err: error }, 'could not look for unchained audit records');
    }
  }

  private async drain(): Promise<void> {
    while (this.started && this.dirty.size > 0) {
      const merchants = [...this.dirty].slice(0, MERCHANTS_A_PASS);
      for (const userId of merchants) this.dirty.delete(userId);
      try {
        // A head another process holds is left to it rather than waited for; it chains only what
        // had committed when it read, so this process looks again a moment later.
        const pass = await chainPending(this.db, merchants, RECORDS_A_PASS, { skipHeld: true });
        // A full pass may have left records behind: those merchants go round again.
        if (pass.chained === RECORDS_A_PASS) for (const userId of merchants) this.dirty.add(userId);
        if (pass.skipped.length > 0) this.again(pass.skipped);
      } catch (error) {
        for (const userId of merchants) this.dirty.add(userId);
        if (!this.started) return;
        this.log.warn({ err: error }, 'audit records not chained yet; retrying');
        await new Promise((resolve) => setTimeout(resolve, RETRY_AFTER_MS));
      }
    }
  }
}

/** PostgreSQL: has this process's runner chain the merchant's records once `trx` has committed. */
export function chainAfterCommit(trx: Db, userId: string): void {
  const store = engineOf(trx) === 'postgres' ? storeOfOrNull(trx) : null;
  const chainer = store && chainers.get(store);
  if (chainer) afterCommit(trx, () => chainer.soon(userId));
}

/**
 * PostgreSQL: chains the merchant's committed records now, so a read of its trail shows every
 * change that committed before the read began, whether or not a runner has got to it yet.
 */
export async function chainBeforeReading(db: Db, userId: string): Promise<void> {
  if (engineOf(db) !== 'postgres') return;
  while (await hasPending(db, userId)) {
    if ((await chainPending(db, [userId], RECORDS_A_PASS)).chained < RECORDS_A_PASS) return;
  }
}

/**
 * PostgreSQL: chains every merchant's committed records (SQLite chains at commit): before verifying
 * the chains, and before any read of audit_events that goes around this module's reads.
 */
export async function chainCommitted(db: Db): Promise<void> {
  if (engineOf(db) !== 'postgres') return;
  for (;;) {
    const merchants = await merchantsWithPending(db, MERCHANTS_A_PASS);
    if (merchants.length === 0) return;
    await chainPending(db, merchants, RECORDS_A_PASS);
  }
}
