import type { Selectable } from 'kysely';
import type { Mode } from '../../shared/mode.ts';

export interface StatementsTable {
  id: string;
  user_id: string;
  mode: Mode;
  /** anz | asb | bnz | westpac | kiwibank | ofx (statement-files.ts) */
  layout: string;
  filename: string | null;
  /** The account the file is of, when the file says (ASB's preamble, BNZ's and Kiwibank's columns, OFX). */
  account: string | null;
  /** The file's content, hashed: the same file imported again is this statement. */
  file_sha256: string;
  /** The first and last dates of its lines (YYYY-MM-DD). */
  first_date: string;
  last_date: string;
  /** Lines in the file, lines it added (the rest were known from an earlier file), and lines matched on import. */
  line_count: number;
  added_count: number;
  matched_count: number;
  /** Who imported it: the dashboard member's email, or the API key's name and id. */
  imported_by: string;
  created_at: number;
}

export interface StatementLinesTable {
  id: string;
  user_id: string;
  mode: Mode;
  /** The statement that first brought this line. */
  statement_id: string;
  /** A hash of what the bank shows of the line (reconciliation.rules.ts, lineKeyOf). */
  line_key: string;
  /** 1 for the first of identical lines on one day, 2 for the second… */
  occurrence: number;
  account: string;
  posted_on: string;
  /** Positive for money in (a credit), negative for money out. */
  amount_cents: number;
  particulars: string;
  code: string;
  reference: string;
  other_party: string;
  description: string;
  bank_transaction_id: string;
  /** The line of the file it was read from (of the statement that brought it). */
  file_line: number;
  /** 0 once the merchant unmatched it by hand: automatic matching leaves it alone after that. */
  auto_match: number;
  created_at: number;
}

export interface StatementMatchesTable {
  id: string;
  user_id: string;
  mode: Mode;
  line_id: string;
  /** payment | refund */
  kind: string;
  /** The payment's or the refund's id. */
  target_id: string;
  /** particulars | reference | amount_date | manual */
  method: string;
  /** `tono` for an automatic match, else who matched it by hand. */
  matched_by: string;
  created_at: number;
}

export interface ReconciliationTables {
  statements: StatementsTable;
  statement_lines: StatementLinesTable;
  statement_matches: StatementMatchesTable;
}

declare module '../../store/tables.ts' {
  interface Database extends ReconciliationTables {}
}

export type StatementRow = Selectable<StatementsTable>;
export type StatementLineRow = Selectable<StatementLinesTable>;
export type StatementMatchRow = Selectable<StatementMatchesTable>;
