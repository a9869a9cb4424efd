import { iso } from '../../shared/time.ts';
import type { CustomerRow } from './customers.repo.ts';
import type { CustInfoRow } from './customers.tables.ts';
import { addressOf } from './customers.rules.ts';

export { addressOf };

/** The CustInfo object of the API (docs/openapi.json). */
export function presentCustInfo(row: CustInfoRow) {
  return {
    id: row.id,
    payment_id: row.payment_id,
    email: row.email ?? '',
    phone: row.phone ?? '',
    first_name: row.first_name ?? '',
    last_name: row.last_name ?? '',
    ...addressOf(row),
    marketing_opt_in: row.marketing_opt_in === 1,
    created_at: iso(row.created_at),
    updated_at: iso(row.updated_at),
  };
}
export type CustInfoObject = ReturnType<typeof presentCustInfo>;

/** The Customer object of the API (docs/openapi.json). */
export function presentCustomer(row: CustomerRow) {
  return {
    id: row.id,
    business_user_id: row.user_id,
    email: row.email,
    phone: row.phone ?? '',
    first_name: row.first_name ?? '',
    last_name: row.last_name ?? '',
    address: addressOf(row),
    created_at: iso(row.created_at),
    updated_at: iso(row.updated_at),
  };
}
export type CustomerObject = ReturnType<typeof presentCustomer>;
