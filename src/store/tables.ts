// Kysely row types. Times are epoch milliseconds, money is integer cents, booleans are 0/1 and
// structured values are JSON text, so one schema serves SQLite and PostgreSQL alike.
import type { Generated } from 'kysely';
import type { SubscriptionTables } from '../modules/subscriptions/subscriptions.tables.ts';
import type { WebhookTables } from '../modules/webhooks/webhooks.tables.ts';
import type { SandboxTables } from '../modules/banks/sandbox-bank/sandbox.tables.ts';
import type { ConsentTables } from '../modules/consents/consents.tables.ts';
import type { MailTables } from '../modules/mail/mail.tables.ts';
import type { PayerTables } from '../modules/payer/payer.tables.ts';
import type { DashboardTables } from '../modules/dashboard/dashboard.tables.ts';

export type Mode = 'live' | 'test';
export type Flag = number;

export interface UsersTable {
  id: string;
  name: string;
  email: string;
  password_hash: string;
  test_clock_offset_ms: Generated<number>;
  created_at: number;
  updated_at: number;
}

export interface BankAccountsTable {
  id: string;
  user_id: string;
  account_number: string;
  name: string | null;
  created_at: number;
}

export interface ApiKeysTable {
  id: string;
  user_id: string;
  mode: Mode;
  key_hash: string;
  hint: string;
  created_at: number;
  revoked_at: number | null;
  /** Real time of the last call with the key, kept to the minute (migration 0017). */
  last_used_at: number | null;
}

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
}

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

/** One-off data tasks already done in this database (store/seal-at-rest.ts). */
export interface StoreTasksTable {
  name: string;
  done_at: number;
}

export interface JobsTable {
  id: string;
  kind: string;
  run_at: number;
  clock_id: string | null;
  payload: string;
  dedupe_key: string | null;
  attempts: Generated<number>;
  locked_by: string | null;
  locked_until: number | null;
  last_error: string | null;
  failed_at: number | null;
  created_at: number;
}

export interface IdempotencyKeysTable {
  user_id: string;
  mode: Mode;
  key: string;
  endpoint: string;
  fingerprint: string;
  status_code: number | null;
  response: string | null;
  created_at: number;
  expires_at: number;
}

export interface PaymentsTable {
  id: string;
  user_id: string;
  mode: Mode;
  request_id: string;
  /** awaiting-consent | successful | failed | cancelled | unconfirmed */
  status: string;
  /** What was asked for; limits and caps use this. */
  amount_cents: number;
  /** What moves at the bank: the same, except 1 cent in test mode. */
  settled_cents: number;
  bank_id: string | null;
  particulars: string;
  code: string;
  reference: string | null;
  merchant_identifier: string | null;
  bank_consent_id: string | null;
  bank_payment_id: string | null;
  /** OAuth-style state tying the bank's redirect back to this payment. */
  auth_state: string | null;
  recurring_consent_id: string | null;
  subscription_id: string | null;
  idempotency_key: string | null;
  fingerprint: string | null;
  failure_reason: string | null;
  created_at: number;
  updated_at: number;
  completed_at: number | null;
  /** When execution at the bank was claimed (migration 0005); null until then. */
  submitted_at: number | null;
  /** 'page' | 'embed' | 'api' (migration 0005). */
  channel: string | null;
  /** The payer's account from the bank, sealed JSON { scheme_name, identification, name } (migration 0016); null until read. */
  payer_account_sealed: string | null;
}

export interface CustInfosTable {
  id: string;
  payment_id: string;
  email: string | null;
  phone: string | null;
  first_name: string | null;
  last_name: string | null;
  address1: string;
  address2: string;
  address3: string;
  address4: string;
  city: string;
  postcode: string;
  marketing_opt_in: Flag;
  created_at: number;
  updated_at: number;
}

export interface CustomersTable {
  id: string;
  user_id: string;
  mode: Mode;
  email: string;
  phone: string | null;
  first_name: string | null;
  last_name: string | null;
  address1: string;
  address2: string;
  address3: string;
  address4: string;
  city: string;
  postcode: string;
  created_at: number;
  updated_at: number;
}

export interface CoreTables {
  users: UsersTable;
  bank_accounts: BankAccountsTable;
  api_keys: ApiKeysTable;
  requests: RequestsTable;
  events: EventsTable;
  store_tasks: StoreTasksTable;
  jobs: JobsTable;
  idempotency_keys: IdempotencyKeysTable;
  payments: PaymentsTable;
  cust_infos: CustInfosTable;
  customers: CustomersTable;
}

export interface Database extends CoreTables, WebhookTables, SandboxTables, ConsentTables, SubscriptionTables, MailTables, PayerTables, DashboardTables {}
