import type { Generated } from 'kysely';
import type { Mode } from '../../shared/mode.ts';

export interface EventsTable {
  id: string;
  user_id: string;
  mode: Mode;
  type: string;
  object_id: string;
  /** The envelope as the events API shows it; a secret in it (the recurring token) is masked. */
  body: string;
  /** That secret, sealed; only a delivery allowed to carry it puts it back in clear. */
  secret_sealed: Generated<string | null>;
  created_at: number;
  /**
   * What a subscriber kept of its handling of the event once it pruned its own records of it
   * (webhooks: how the pruned deliveries ended), as JSON this module stores and never reads; null
   * while nothing was pruned (migration 0033).
   */
  delivery_summary: Generated<string | null>;
}

export interface EventTables {
  events: EventsTable;
}

declare module '../../store/tables.ts' {
  interface Database extends EventTables {}
}
