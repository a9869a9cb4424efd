import type { Generated } from 'kysely';

export interface JobsTable {
  id: string;
  kind: string;
  run_at: number;
  clock_id: string | null;
  payload: string;
  /** The batched lane that claims this job (its kind), or null for the generic worker. */
  lane: string | null;
  dedupe_key: string | null;
  attempts: Generated<number>;
  locked_by: string | null;
  locked_until: number | null;
  last_error: string | null;
  failed_at: number | null;
  created_at: number;
}

export interface JobTables {
  jobs: JobsTable;
}

declare module '../store/tables.ts' {
  interface Database extends JobTables {}
}
