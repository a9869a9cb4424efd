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
}

export interface MerchantTables {
  users: UsersTable;
  bank_accounts: BankAccountsTable;
  api_keys: ApiKeysTable;
}

declare module '../../store/tables.ts' {
  interface Database extends MerchantTables {}
}
