import type { Selectable } from 'kysely';
import type { Mode } from '../../shared/mode.ts';

/** A merchant's tax settings, one row for both modes (docs/receipts.md). */
export interface TaxSettingsTable {
  user_id: string;
  /** The supplier's name on every document. */
  legal_name: string;
  /** The GST (IRD) number, 8 or 9 digits without separators; null when not registered. */
  gst_number: string | null;
  /** 1 when the merchant's prices include GST (documents show the total and the GST in it). */
  prices_include_gst: number;
  /** 1 when documents are tax invoices (a GST number is then required). */
  issue_tax_invoices: number;
  /** 1 when the payer is emailed each receipt and credit note. */
  email_receipts: number;
  created_at: number;
  updated_at: number;
}

/** The last number issued per merchant, mode and kind, moved in the transaction that issues the next. */
export interface ReceiptCountersTable {
  user_id: string;
  mode: Mode;
  /** receipt | credit_note */
  kind: string;
  last_number: number;
}

export interface ReceiptsTable {
  id: string;
  user_id: string;
  mode: Mode;
  /** receipt | credit_note */
  kind: string;
  /** 1, 2, … per merchant, mode and kind. */
  number: number;
  payment_id: string;
  /** A credit note's refund. */
  refund_id: string | null;
  /** A credit note's receipt (the payment's). */
  receipt_id: string | null;
  total_cents: number;
  /** The GST in the total, on a document that shows it. */
  gst_cents: number | null;
  /** JSON ReceiptDocument (receipts.rules.ts): what the document shows, frozen when it was issued. */
  document: string;
  /** Who it was emailed to, if anyone. */
  payer_email: string | null;
  issued_at: number;
}

export interface ReceiptTables {
  tax_settings: TaxSettingsTable;
  receipt_counters: ReceiptCountersTable;
  receipts: ReceiptsTable;
}

declare module '../../store/tables.ts' {
  interface Database extends ReceiptTables {}
}

export type TaxSettingsRow = Selectable<TaxSettingsTable>;
export type ReceiptRow = Selectable<ReceiptsTable>;
