import type { Generated } from 'kysely';
import type { Mode } from '../../shared/mode.ts';

/** One change to a merchant's data (docs/audit.md); never updated, never deleted. */
export interface AuditEventsTable {
  id: string;
  user_id: string;
  /** 1, 2, … per merchant: a gap is a removed record. */
  seq: number;
  at: number;
  /** Null for what has no mode (a merchant's settings, a password). */
  mode: Mode | null;
  actor_kind: ActorKind;
  actor_id: string;
  action: string;
  object_id: string | null;
  ip: string | null;
  user_agent: string | null;
  request_id: string | null;
  /** What changed, as JSON, with secrets masked. */
  summary: string;
  prev_hash: string;
  hash: string;
}

/** The merchant's newest record: what writers lock and chain from, and what the chain must end at. */
export interface AuditHeadsTable {
  user_id: string;
  seq: number;
  prev_hash: string;
  hash: string;
}

/**
 * PostgreSQL: a committed change's record before it is numbered and chained into audit_events,
 * which happens shortly after its commit (docs/audit.md, "Locking"). Empty on SQLite.
 */
export type AuditPendingTable = Omit<AuditEventsTable, 'seq' | 'prev_hash' | 'hash'> & {
  /** The order the records were written in, each just before its COMMIT: the order they are chained in. */
  n: Generated<number>;
};

export type ActorKind = 'api_key' | 'member' | 'payer' | 'operator' | 'service';

export interface AuditTables {
  audit_events: AuditEventsTable;
  audit_heads: AuditHeadsTable;
  audit_pending: AuditPendingTable;
}

declare module '../../store/tables.ts' {
  interface Database extends AuditTables {}
}
