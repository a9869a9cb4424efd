import type { Selectable } from 'kysely';
import type { Mode } from '../../shared/mode.ts';
import type { Flag } from '../../store/tables.ts';

export interface CustInfosTable {
  id: string;
  payment_id: string;
  /** The merchant and mode of the payment, so searches by email are scoped in the query. */
  user_id: string;
  mode: Mode;
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

export interface CustomerTables {
  cust_infos: CustInfosTable;
  customers: CustomersTable;
}

declare module '../../store/tables.ts' {
  interface Database extends CustomerTables {}
}

export type CustInfoRow = Selectable<CustInfosTable>;
