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

export type ActorKind = 'api_key' | 'member' | 'payer' | 'operator' | 'service';

export interface AuditTables {
  audit_events: AuditEventsTable;
  audit_heads: AuditHeadsTable;
}

declare module '../../store/tables.ts' {
  interface Database extends AuditTables {}
}
