import type { Kysely } from 'kysely';
import { notFound } from '../../shared/errors.ts';
import { lockForUpdate } from '../../store/db.ts';
import { prepared, preparedOfShape } from '../../store/prepared.ts';
import type { Database } from '../../store/tables.ts';
import type { Mode } from '../../shared/mode.ts';
import type { RequestRow } from './requests.tables.ts';
import { containsText } from '../../store/search.ts';
import { andThen, type NowOrLater } from '../../shared/now-or-later.ts';
import { countOwned, deleteOwned, holdOwned, idsOfOwned } from '../../store/owned-rows.ts';

export type Owner = { userId: string; mode: Mode };
type Db = Kysely<Database>;

// The bank account is looked up in the insert itself: one that is not the merchant's leaves the
// column null, and the insert fails (isNotMerchantsBankAccount) with its whole transaction. Prepared
// per set of columns, as insertRow is.
function insertRequestQuery(row: RequestRow) {
  const columns = Object.keys(row) as Array<keyof RequestRow & string>;
  return preparedOfShape<RequestRow>(`requests: insert ${columns.join(',')} into the merchant's account`, (db, arg) =>
    db.insertInto('requests').values({
      ...(Object.fromEntries(columns.map((column) => [column, arg(column)])) as RequestRow),
      bank_account_id: db
        .selectFrom('bank_accounts')
        .select('id')
        .where('id', '=', arg('bank_account_id'))
        .where('user_id', '=', arg('user_id')),
    }),
  );
}

/**
 * A new request under a fresh id, into one of its merchant's bank accounts, without waiting for
 * PostgreSQL's answer: an account that is not the merchant's fails the transaction
 * (isNotMerchantsBankAccount tells that failure), and nothing else but the whole transaction can.
 */
export async function insertRequest(db: Db, row: RequestRow): Promise<void> {
  await insertRequestQuery(row).later(db, row);
}

/** Whether an error is insertRequest's, for a bank account that is not the request's merchant's. */
export function isNotMerchantsBankAccount(error: unknown): boolean {
  const e = error as { code?: string; table?: string; column?: string; message?: string } | null;
  if (e?.code === '23502') return e.table === 'requests' && e.column === 'bank_account_id';
  return /NOT NULL constraint failed: requests\.bank_account_id/.test(e?.message ?? '');
}

const findRequestQuery = prepared<{ id: string; userId: string; mode: Mode }, RequestRow>((db, arg) =>
  db
    .selectFrom('requests')
    .selectAll()
    .where('id', '=', arg('id'))
    .where('user_id', '=', arg('userId'))
    .where('mode', '=', arg('mode')),
);

/** The owner's request, in hand when the database answers at once (prepared.ts, firstNow). */
export function requestNow(db: Db, owner: Owner, id: string): NowOrLater<RequestRow> {
  return andThen(findRequestQuery.firstNow(db, { id, userId: owner.userId, mode: owner.mode }), (row) => {
    if (!row) throw notFound('request', id);
    return row;
  });
}

export async function getRequest(db: Db, owner: Owner, id: string): Promise<RequestRow> {
  return requestNow(db, owner, id);
}

/** By id alone, for the public payment page (the id is the unguessable capability). */
const findRequestByIdQuery = prepared<{ id: string }, RequestRow>((db, arg) =>
  db.selectFrom('requests').selectAll().where('id', '=', arg('id')),
);

export async function findRequestById(db: Db, id: string): Promise<RequestRow | undefined> {
  return findRequestByIdQuery.first(db, { id });
}

export async function lockRequest(db: Db, id: string): Promise<RequestRow | undefined> {
  return lockForUpdate(db, db.selectFrom('requests').selectAll().where('id', '=', id)).executeTakeFirst();
}

export type RequestFilters = {
  status?: string;
  type?: string;
  merchant_identifier?: string;
  limit: number;
  starting_after?: string;
};

export async function listRequests(db: Db, owner: Owner, filters: RequestFilters): Promise<RequestRow[]> {
  let query = db.selectFrom('requests').selectAll().where('user_id', '=', owner.userId).where('mode', '=', owner.mode);
  if (filters.status) query = query.where('status', '=', filters.status);
  if (filters.type) query = query.where('type', '=', filters.type);
  if (filters.merchant_identifier !== undefined)
    query = query.where('merchant_identifier', '=', filters.merchant_identifier);
  if (filters.starting_after) query = query.where('id', '<', filters.starting_after);
  return query
    .orderBy('id', 'desc')
    .limit(filters.limit + 1)
    .execute();
}

export async function setRequestStatus(
  db: Db,
  id: string,
  status: string,
  now: number,
  extra: Partial<RequestRow> = {},
): Promise<void> {
  await db
    .updateTable('requests')
    .set({ status, updated_at: now, ...extra })
    .where('id', '=', id)
    .execute();
}

/** Names the single request's payment at the bank, or (null) lets it go. */
export async function setPaymentAtBank(db: Db, id: string, paymentId: string | null): Promise<void> {
  await db.updateTable('requests').set({ payment_at_bank: paymentId }).where('id', '=', id).execute();
}

export type RequestSearch = {
  status?: string;
  type?: string;
  search?: string;
  createdFrom?: number | null;
  createdBefore?: number | null;
  limit: number;
  starting_after?: string;
  /** Requests the search also matches by something another module holds (the particulars of their payments). */
  alsoIds?: string[];
};

/** The dashboard's list: the API's filters plus a date range and a search of id, reference, merchant_identifier and message. */
export async function searchRequests(db: Db, owner: Owner, filters: RequestSearch): Promise<RequestRow[]> {
  let query = db.selectFrom('requests').selectAll().where('user_id', '=', owner.userId).where('mode', '=', owner.mode);
  if (filters.status) query = query.where('status', '=', filters.status);
  if (filters.type) query = query.where('type', '=', filters.type);
  if (filters.createdFrom != null) query = query.where('created_at', '>=', filters.createdFrom);
  if (filters.createdBefore != null) query = query.where('created_at', '<', filters.createdBefore);
  const search = filters.search?.trim();
  if (search) {
    query = query.where((eb) =>
      eb.or([
        eb('id', '=', search),
        containsText('reference', search),
        containsText('merchant_identifier', search),
        containsText('message', search),
        ...(filters.alsoIds?.length ? [eb('id', 'in', filters.alsoIds)] : []),
      ]),
    );
  }
  if (filters.starting_after) query = query.where('id', '<', filters.starting_after);
  return query
    .orderBy('id', 'desc')
    .limit(filters.limit + 1)
    .execute();
}

// A merchant's test-mode requests, counted, held and deleted with the rest of their test data
// (manifest.ts, TestData).

export function countTestRequests(db: Db, userId: string): Promise<number> {
  return countOwned(db, 'requests', { userId, mode: 'test' });
}

export function holdTestRequests(db: Db, userId: string): Promise<void> {
  return holdOwned(db, 'requests', { userId, mode: 'test' });
}

export function deleteTestRequests(db: Db, userId: string): Promise<number> {
  return deleteOwned(db, 'requests', { userId, mode: 'test' });
}

/** The ids of the owner's requests, as a subquery. */
export function requestIdsOfOwner(db: Db, owner: Owner) {
  return idsOfOwned(db, 'requests', owner);
}
