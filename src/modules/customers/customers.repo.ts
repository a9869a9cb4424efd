import type { Kysely, Selectable } from 'kysely';
import { notFound } from '../../shared/errors.ts';
import { lockForUpdate } from '../../store/db.ts';
import { insertRow } from '../../store/prepared.ts';
import type { Database } from '../../store/tables.ts';
import type { Mode } from '../../shared/mode.ts';
import type { CustInfoRow, CustomersTable } from './customers.tables.ts';
import { containsText } from '../../store/search.ts';
import { countOwned, deleteOwned } from '../../store/owned-rows.ts';

export type CustomerRow = Selectable<CustomersTable>;
export type Owner = { userId: string; mode: Mode };
type Db = Kysely<Database>;

export async function insertCustInfo(db: Db, row: CustInfoRow): Promise<void> {
  await insertRow(db, 'cust_infos', row);
}

export async function findCustInfoOfPayment(db: Db, paymentId: string): Promise<CustInfoRow | undefined> {
  return db.selectFrom('cust_infos').selectAll().where('payment_id', '=', paymentId).executeTakeFirst();
}

export async function custInfosOfPayments(db: Db, paymentIds: string[]): Promise<Map<string, CustInfoRow>> {
  if (paymentIds.length === 0) return new Map();
  const rows = await db.selectFrom('cust_infos').selectAll().where('payment_id', 'in', paymentIds).execute();
  return new Map(rows.map((row) => [row.payment_id, row]));
}

/** Inserts unless the merchant already has a customer with this email; true when inserted. */
export async function insertCustomerIfNew(db: Db, row: CustomerRow): Promise<boolean> {
  const inserted = await db
    .insertInto('customers')
    .values(row)
    .onConflict((oc) => oc.columns(['user_id', 'mode', 'email']).doNothing())
    .returning('id')
    .executeTakeFirst();
  return inserted !== undefined;
}

export async function lockCustomerByEmail(db: Db, owner: Owner, email: string): Promise<CustomerRow | undefined> {
  return lockForUpdate(
    db,
    db
      .selectFrom('customers')
      .selectAll()
      .where('user_id', '=', owner.userId)
      .where('mode', '=', owner.mode)
      .where('email', '=', email),
  ).executeTakeFirst();
}

export async function updateCustomer(db: Db, id: string, changes: Partial<CustomerRow>): Promise<void> {
  await db.updateTable('customers').set(changes).where('id', '=', id).execute();
}

export async function getCustomer(db: Db, owner: Owner, id: string): Promise<CustomerRow> {
  const row = await db
    .selectFrom('customers')
    .selectAll()
    .where('id', '=', id)
    .where('user_id', '=', owner.userId)
    .where('mode', '=', owner.mode)
    .executeTakeFirst();
  if (!row) throw notFound('customer', id);
  return row;
}

export type CustomerFilters = { email?: string; limit: number; starting_after?: string };

export async function listCustomers(db: Db, owner: Owner, filters: CustomerFilters): Promise<CustomerRow[]> {
  let query = db.selectFrom('customers').selectAll().where('user_id', '=', owner.userId).where('mode', '=', owner.mode);
  if (filters.email) query = query.where('email', '=', filters.email.trim().toLowerCase());
  if (filters.starting_after) query = query.where('id', '<', filters.starting_after);
  return query
    .orderBy('id', 'desc')
    .limit(filters.limit + 1)
    .execute();
}

/** The dashboard's customer search: email or name containing the text. */
export async function searchCustomers(
  db: Db,
  owner: Owner,
  filters: { search?: string; limit: number; starting_after?: string },
): Promise<CustomerRow[]> {
  let query = db.selectFrom('customers').selectAll().where('user_id', '=', owner.userId).where('mode', '=', owner.mode);
  const search = filters.search?.trim();
  if (search)
    query = query.where((eb) =>
      eb.or([
        eb('id', '=', search),
        containsText('email', search),
        containsText('first_name', search),
        containsText('last_name', search),
      ]),
    );
  if (filters.starting_after) query = query.where('id', '<', filters.starting_after);
  return query
    .orderBy('id', 'desc')
    .limit(filters.limit + 1)
    .execute();
}

/** This owner's payments whose payer gave an email containing the text (or exactly it), newest first. */
export async function paymentIdsByPayerEmail(
  db: Db,
  owner: Owner,
  email: string,
  exact: boolean,
  limit = 2000,
): Promise<string[]> {
  const query = db
    .selectFrom('cust_infos')
    .select('payment_id')
    .where('user_id', '=', owner.userId)
    .where('mode', '=', owner.mode);
  const rows = await (exact
    ? query.where('email', '=', email.trim().toLowerCase())
    : query.where(containsText('email', email))
  )
    .orderBy('payment_id', 'desc')
    .limit(limit)
    .execute();
  return rows.map((row) => row.payment_id);
}

// A merchant's test-mode customers, counted and deleted with the rest of their test data
// (manifest.ts, TestData); with them the payers' details recorded on test payments.

export function countTestCustomers(db: Db, userId: string): Promise<number> {
  return countOwned(db, 'customers', { userId, mode: 'test' });
}

export async function deleteTestCustomers(db: Db, userId: string): Promise<number> {
  await deleteOwned(db, 'cust_infos', { userId, mode: 'test' });
  return deleteOwned(db, 'customers', { userId, mode: 'test' });
}
