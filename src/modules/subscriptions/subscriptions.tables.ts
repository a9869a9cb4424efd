import type { Mode } from '../../shared/mode.ts';

// Subscription rows (merged into `Database` in src/store/tables.ts). Times are epoch ms on the
// subscription's clock (the merchant's test clock in test mode), money integer cents.

export interface SubscriptionsTable {
  id: string;
  user_id: string;
  mode: Mode;
  request_id: string;
  customer_id: string | null;
  /** The payer's email from the request's cust_info (the customer's key). */
  email: string;
  /** What it is for: the request's message ("Veg box"), its title on every page and email. */
  description: string;
  merchant_identifier: string | null;
  /** The request's statement reference and account, copied so a charge needs no other row. */
  reference: string | null;
  bank_account_id: string;
  /** The payer's details given at authorisation (JSON), recorded as cust_info on every charge. */
  payer_details: string | null;
  /** active | paused | cancelled | completed */
  status: string;
  amount_cents: number;
  /** weekly | fortnightly | monthly | quarterly | annually */
  period: string;
  start_at: number | null;
  end_at: number | null;
  total_count: number | null;
  /** The schedule (schedule.ts Schedule): zone, anchor, first slot and when it was charged. */
  zone: string;
  anchor_date: string;
  anchor_time: string;
  first_slot: number;
  first_charge_at: number;
  /** The slot being charged or next to charge; null once nothing more will be charged. */
  next_slot: number | null;
  /** When the next attempt runs (a slot's time or a retry's); null when none is scheduled. */
  next_charge_at: number | null;
  successful_count: number;
  failed_count: number;
  skipped_count: number;
  bank_id: string;
  bank_consent_id: string;
  /** Consent-bound access token from the bank's code exchange (or its latest renewal), sealed; never leaves the service. */
  bank_access_token: string;
  /** The refresh token that renews it, sealed; null when the bank gave none (docs/banks.md, "Consent tokens that expire"). */
  bank_refresh_token: string | null;
  /** When the access token expires (epoch ms, real time), when the bank said; null: not known to expire. */
  bank_token_expires_at: number | null;
  /** merchant | payer | bank, once cancelled */
  cancelled_by: string | null;
  paused_at: number | null;
  resumed_at: number | null;
  cancelled_at: number | null;
  completed_at: number | null;
  created_at: number;
  updated_at: number;
}

/**
 * One row per slot that was ever attempted. UNIQUE (subscription_id, slot_date) is what makes a
 * schedule run each slot at most once, whatever crashes, restarts or extra processes.
 */
export interface SubscriptionChargesTable {
  id: string;
  subscription_id: string;
  slot: number;
  slot_date: string;
  /** The slot's scheduled time (its first attempt). */
  charge_at: number;
  /** in_flight | retrying | successful | skipped | dropped | cancelled */
  status: string;
  attempts: number;
  /** The payment of the latest attempt; its id is the bank idempotency key of that attempt. */
  last_payment_id: string | null;
  last_error: string | null;
  next_attempt_at: number | null;
  created_at: number;
  updated_at: number;
}

export interface SubscriptionTables {
  subscriptions: SubscriptionsTable;
  subscription_charges: SubscriptionChargesTable;
}

declare module '../../store/tables.ts' {
  interface Database extends SubscriptionTables {}
}
