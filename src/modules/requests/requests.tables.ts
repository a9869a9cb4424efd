import type { Selectable } from 'kysely';
import type { Mode } from '../../shared/mode.ts';
import type { Flag } from '../../store/tables.ts';

export interface RequestsTable {
  id: string;
  user_id: string;
  mode: Mode;
  status: string;
  type: string;
  kind: string;
  message: string;
  amount_cents: number | null;
  bank_account_id: string;
  merchant_identifier: string | null;
  reference: string | null;
  flow: string;
  qr_data: string;
  logo_image_url: string | null;
  banner_image_url: string | null;
  min_payment_cents: number | null;
  max_payment_cents: number | null;
  suggested_amounts: string | null;
  is_donation: Flag;
  add_surcharge: Flag;
  surcharge_optional: Flag;
  allow_dynamic_amount: Flag;
  allow_marketing_opt_in: Flag;
  collect_customer_phone: Flag;
  require_customer_phone: Flag;
  require_customer_basic_info: Flag;
  require_customer_address: Flag;
  success_redirect_url: string | null;
  failure_redirect_url: string | null;
  recurring_options: string | null;
  subscription_options: string | null;
  cust_info: string | null;
  created_at: number;
  updated_at: number;
  expires_at: number | null;
  deleted_at: number | null;
  /**
   * A single request's payment claimed for the payer's bank and not yet settled: until it settles
   * the request is neither deleted nor expired, so a payment the payer approved still makes it paid.
   */
  payment_at_bank: string | null;
}

export interface RequestTables {
  requests: RequestsTable;
}

declare module '../../store/tables.ts' {
  interface Database extends RequestTables {}
}

export type RequestRow = Selectable<RequestsTable>;
