// Row types of the payer dashboard, merged into the store's Database in src/store/tables.ts.

export interface PayerCodesTable {
  id: string;
  email: string;
  code_sealed: string;
  tries_left: number;
  /** 10 minutes after it was made, or after it was sent again (once at most, when asked for while live). */
  expires_at: number;
  used_at: number | null;
  /** SHA-256 of the pre-session token of the browser that used it: its repeat of the same post signs in again. */
  used_with: string | null;
  /** Set when five wrong tries killed it. */
  dead_at: number | null;
  created_at: number;
}

export interface PayerSessionsTable {
  /** SHA-256 (hex) of the session cookie's value; the value itself is stored nowhere. */
  id_hash: string;
  email: string;
  csrf_token: string;
  created_at: number;
  last_seen_at: number;
  expires_at: number;
  ended_at: number | null;
}

export interface PayerTables {
  payer_codes: PayerCodesTable;
  payer_sessions: PayerSessionsTable;
}

declare module '../../store/tables.ts' {
  interface Database extends PayerTables {}
}
