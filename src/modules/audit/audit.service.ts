import type { Kysely } from 'kysely';
import { stringify } from 'safe-stable-stringify';
import type { Database } from '../../store/tables.ts';
import { newId } from '../../shared/ids.ts';
import type { Mode } from '../../shared/mode.ts';
import { invalidParam } from '../../shared/errors.ts';
import { NO_ORIGIN, type Actor, type Ctx, type Origin } from '../context.ts';
import { chainWalk, type ChainBreak, type ChainReport } from './audit.chain.ts';
import { chainAfterCommit, chainBeforeReading, chainCommitted } from './audit.chainer.ts';
import {
  appendRecord,
  chainHead,
  chainPage,
  hasAuditRecord,
  listAudit,
  merchantsWithChains,
  type AuditFilters,
  type AuditRow,
} from './audit.repo.ts';
import type { ActorKind } from './audit.tables.ts';

// The audit trail (docs/audit.md). Every module records its own changes here, in the transaction
// of the change, so a record exists exactly when its change does.

/** What changed, for the record's `summary`: plain values; secrets are masked before it is stored. */
export type AuditSummary = Record<string, unknown>;

/** Who made a change where no `Ctx` is at hand: an actor, and where the change came from. */
export type AuditBy = { actor: Actor; origin?: Origin };

/** One change, as a module records it. */
export type AuditEntry = {
  /** The merchant whose data changed. */
  userId: string;
  /** The mode of what changed; null for what has none (a merchant's settings, a password). */
  mode: Mode | null;
  /** Who made the change. */
  actor: Actor;
  /** Where it came from (ip, user agent, request id); none for jobs and the CLI. */
  origin?: Origin;
  /** What was done, dotted: `<object>.<verb>` (`request.create`, `consent.revoke`). */
  action: string;
  /** The object changed, if it has an id. */
  objectId: string | null;
  summary?: AuditSummary;
  /** When, in epoch milliseconds (the clock of whoever made the change). */
  at: number;
};

/**
 * Records one change in `trx`, the transaction that makes it. Call it as the transaction's last
 * statement: on PostgreSQL it is sent with the COMMIT, and numbered and chained right after it; on
 * SQLite it is chained at the batch's commit (docs/audit.md, "Locking"). A transaction that rolls
 * back leaves no record.
 */
export async function recordAudit(trx: Kysely<Database>, entry: AuditEntry): Promise<void> {
  const origin = entry.origin ?? NO_ORIGIN;
  const actor = actorColumns(entry.actor);
  await appendRecord(trx, {
    id: newId('audit'),
    user_id: entry.userId,
    at: entry.at,
    mode: entry.mode,
    actor_kind: actor.kind,
    actor_id: actor.id,
    action: entry.action,
    object_id: entry.objectId,
    ip: origin.ip,
    user_agent: origin.userAgent,
    request_id: origin.requestId,
    summary: summaryText(entry.summary ?? {}),
  });
  chainAfterCommit(trx, entry.userId);
}

/**
 * `recordAudit` for a use case with a caller's `ctx`: its merchant, mode (unless `mode` says
 * otherwise: null for what has no mode), actor, origin and clock.
 */
export function recordAuditFor(
  trx: Kysely<Database>,
  ctx: Ctx,
  action: string,
  objectId: string | null,
  summary: AuditSummary = {},
  mode: Mode | null = ctx.mode,
): Promise<void> {
  return recordAudit(trx, {
    userId: ctx.merchant.id,
    mode,
    actor: ctx.actor,
    origin: ctx.origin,
    action,
    objectId,
    summary,
    at: ctx.clock.now(),
  });
}

/**
 * For a change made outside this database (a test hook at the sandbox bank, over HTTP): no
 * transaction can hold both, so it is recorded in one of its own once the change has succeeded.
 */
export async function recordAuditAfter(
  ctx: Ctx,
  action: string,
  objectId: string | null,
  summary: AuditSummary = {},
): Promise<void> {
  await ctx.deps.store.transaction((trx) => recordAuditFor(trx, ctx, action, objectId, summary));
}

export function actorColumns(actor: Actor): { kind: ActorKind; id: string } {
  switch (actor.kind) {
    case 'api_key':
      return { kind: 'api_key', id: actor.id };
    case 'member':
      return { kind: 'member', id: actor.id };
    case 'payer':
      return { kind: 'payer', id: actor.email };
    case 'operator':
      return { kind: 'operator', id: actor.name };
    case 'service':
      return { kind: 'service', id: actor.job };
  }
}

// Secrets never reach a record: these keys' values are masked as the API and dashboard show them
// (a prefix and the last four characters), or hidden entirely for what a person types.
const HIDDEN = /password|passcode|otp|recovery|^code$/i;
const MASKED = /secret|token|^key$|api_key$/i;

export function maskSecret(secret: string): string {
  return `${secret.slice(0, secret.indexOf('_') + 1)}…${secret.slice(-4)}`;
}

/** Either of the above: most keys match neither, and are then tested once. */
const SENSITIVE = new RegExp(`${HIDDEN.source}|${MASKED.source}`, 'i');

/** The value with secrets masked; copied only where something is masked (most summaries are kept as they are). */
function masked(value: unknown, key: string): unknown {
  if (value === null || value === undefined) return value;
  if (SENSITIVE.test(key)) {
    if (HIDDEN.test(key)) return '•••';
    if (typeof value === 'string') return maskSecret(value);
  }
  if (typeof value !== 'object') return value;
  if (Array.isArray(value)) {
    let copy: unknown[] | undefined;
    value.forEach((item, index) => {
      const shown = masked(item, '');
      if (shown !== item) (copy ??= [...value])[index] = shown;
    });
    return copy ?? value;
  }
  let copy: Record<string, unknown> | undefined;
  for (const [name, inner] of Object.entries(value)) {
    const shown = masked(inner, name);
    if (shown !== inner) (copy ??= { ...value })[name] = shown;
  }
  return copy ?? value;
}

/** The summary as stored: JSON with sorted keys, secrets masked. */
export function summaryText(summary: AuditSummary): string {
  return stringify(masked(summary, '')) as string;
}

export type AuditListQuery = Omit<AuditFilters, 'limit' | 'createdGte' | 'createdLt'> & {
  limit?: number;
  created_gte?: number;
  created_lt?: number;
};

/** A merchant's records, newest first, a page at a time (`mode` null: every mode). */
export async function listAuditEvents(
  db: Kysely<Database>,
  userId: string,
  mode: Mode | null,
  query: AuditListQuery,
): Promise<{ items: AuditRow[]; hasMore: boolean }> {
  const limit = query.limit ?? 100;
  await chainBeforeReading(db, userId);
  // An unknown cursor would page from nowhere: an empty page that looks like the end.
  if (query.starting_after && !(await hasAuditRecord(db, userId, query.starting_after)))
    throw invalidParam('starting_after', 'starting_after must be the id of one of your audit records');
  const rows = await listAudit(db, userId, mode, {
    ...query,
    createdGte: query.created_gte,
    createdLt: query.created_lt,
    limit,
  });
  return rows.length > limit ? { items: rows.slice(0, limit), hasMore: true } : { items: rows, hasMore: false };
}

/** One object's history, newest first (the dashboard's object pages). */
export async function historyOf(db: Kysely<Database>, userId: string, objectId: string): Promise<AuditRow[]> {
  return (await listAuditEvents(db, userId, null, { object_id: objectId, limit: 50 })).items;
}

export { chainCommitted };

export type MerchantChainReport = ChainReport & { userId: string };

const VERIFY_PAGE = 5000;

/**
 * Walks each merchant's chain (or one merchant's), a page at a time, and says where each first
 * breaks; records committed and not yet chained are chained first.
 */
export async function verifyChains(db: Kysely<Database>, userId?: string): Promise<MerchantChainReport[]> {
  if (userId) await chainBeforeReading(db, userId);
  else await chainCommitted(db);
  const merchants = userId ? [userId] : await merchantsWithChains(db);
  const reports: MerchantChainReport[] = [];
  for (const merchant of merchants) {
    const walk = chainWalk(await chainHead(db, merchant));
    let records = 0;
    let broken: ChainBreak | null = null;
    let afterSeq = 0;
    for (;;) {
      const page = await chainPage(db, merchant, afterSeq, VERIFY_PAGE);
      for (const record of page) {
        records += 1;
        broken = walk.step(record);
        if (broken) break;
      }
      if (broken || page.length < VERIFY_PAGE) break;
      afterSeq = Number(page.at(-1)!.seq);
    }
    reports.push({ userId: merchant, records, broken: broken ?? walk.finish() });
  }
  return reports;
}

export type { AuditRow };
