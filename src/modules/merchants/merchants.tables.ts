import type { Generated } from 'kysely';
import type { Mode } from '../../shared/mode.ts';

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
  /** Real time of the last call with the key, kept to the minute (migration 0018). */
  last_used_at: number | null;
  /** Given at creation (migration 0037). */
  name: string;
  /** Who created it: the signed-in member's email, `operator` at the CLI; null for keys older than 0037. */
  created_by: string | null;
  /** Null: full access; `read_only`; or `resource:access,…` (key-scopes.rules.ts). */
  permissions: string | null;
  /** Set on a rolled key: real time from which it is refused as revoked. */
  expires_at: number | null;
}

export interface MerchantTables {
  users: UsersTable;
  bank_accounts: BankAccountsTable;
  api_keys: ApiKeysTable;
}

declare module '../../store/tables.ts' {
  interface Database extends MerchantTables {}
}
