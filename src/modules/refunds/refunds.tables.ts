import type { Selectable } from 'kysely';
import type { Mode } from '../../shared/mode.ts';

export interface RefundsTable {
  id: string;
  user_id: string;
  mode: Mode;
  payment_id: string;
  request_id: string;
  /** pending | successful | failed | requires_action (refunds.rules.ts) */
  status: string;
  /** What the merchant refunds, counted against the payment's amount. */
  amount_cents: number;
  /** What moves at the bank: the same, except 1 cent in test mode (as for payments). */
  settled_cents: number;
  reason: string | null;
  failure_reason: string | null;
  /** Why the merchant must pay it by hand: payer_account_unknown | no_refund_authority | … */
  action_reason: string | null;
  particulars: string;
  code: string;
  reference: string;
  /** The refund authority it was counted against, if it goes through one. */
  authority_id: string | null;
  bank_payment_id: string | null;
  /**
   * When it was first sent to the merchant's bank (recorded before the call): from then on the bank
   * may hold a payment under its key, so it is only sent again under that key and authority.
   */
  submitted_at: number | null;
  /** When the money left the merchant's account: the bank accepted it, or the merchant paid it by hand. */
  sent_at: number | null;
  /** Who marked a refund that required action as paid by hand (the dashboard user's email). */
  paid_by: string | null;
  created_at: number;
  updated_at: number;
  completed_at: number | null;
}

export interface RefundAuthoritiesTable {
  id: string;
  user_id: string;
  mode: Mode;
  /** awaiting_approval | active | declined | revoked */
  status: string;
  bank_id: string;
  bank_account_id: string | null;
  /** The merchant's account the refunds are paid from. */
  account_number: string;
  account_name: string;
  /** daily | weekly | monthly */
  period: string;
  max_per_refund_cents: number;
  max_per_period_cents: number;
  /** The calendar window period_used_cents counts, [start, end); null before the first refund. */
  period_start: number | null;
  period_end: number | null;
  /** What pending and successful refunds created in that window add up to. */
  period_used_cents: number;
  bank_consent_id: string | null;
  /** Sealed (docs/security.md). */
  bank_access_token: string | null;
  /** The refresh token that renews it, sealed; null when the bank gave none (docs/banks.md, "Consent tokens that expire"). */
  bank_refresh_token: string | null;
  /** When the access token expires (epoch ms, real time), when the bank said; null: not known to expire. */
  bank_token_expires_at: number | null;
  /** Ties the bank's redirect back to this authority while it awaits approval. */
  auth_state: string | null;
  /** merchant | bank, for a revoked one. */
  revoked_by: string | null;
  created_at: number;
  updated_at: number;
  approved_at: number | null;
  ended_at: number | null;
}

export interface RefundTables {
  refunds: RefundsTable;
  refund_authorities: RefundAuthoritiesTable;
}

declare module '../../store/tables.ts' {
  interface Database extends RefundTables {}
}

export type RefundRow = Selectable<RefundsTable>;
export type RefundAuthorityRow = Selectable<RefundAuthoritiesTable>;
