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
}

export interface EventTables {
  events: EventsTable;
}

declare module '../../store/tables.ts' {
  interface Database extends EventTables {}
}
