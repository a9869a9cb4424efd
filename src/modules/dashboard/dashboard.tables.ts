// Row types of the merchant dashboard, merged into the store's Database in src/store/tables.ts.

export interface DashboardSessionsTable {
  /** SHA-256 (hex) of the session cookie's value; the value itself is stored nowhere. */
  id_hash: string;
  user_id: string;
  /** The team member signed in (migration 0035); the session is good only while they are on the team. */
  member_id: string | null;
  csrf_token: string;
  created_at: number;
  last_seen_at: number;
  expires_at: number;
  /** Set at logout, at a password change, or when revoked from the sessions list. */
  ended_at: number | null;
  /** The browser's User-Agent at sign-in, cut short, so the merchant can tell sessions apart. */
  user_agent: string | null;
  /** A new secret waiting for its one showing after a redirect: sealed JSON { kind, id, value } (migration 0026). */
  shown_once_sealed: string | null;
}

export interface DashboardResetsTable {
  /** SHA-256 (hex) of the emailed token. */
  token_hash: string;
  user_id: string;
  /** The member whose password the link sets (migration 0035). */
  member_id: string | null;
  created_at: number;
  expires_at: number;
  used_at: number | null;
}

export interface DashboardTables {
  dashboard_sessions: DashboardSessionsTable;
  dashboard_resets: DashboardResetsTable;
}

declare module '../../store/tables.ts' {
  interface Database extends DashboardTables {}
}
