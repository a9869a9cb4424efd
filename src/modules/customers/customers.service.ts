import type { Kysely } from 'kysely';
import { newId } from '../../shared/ids.ts';
import { pageOf } from '../../shared/pagination.ts';
import { iso } from '../../shared/time.ts';
import type { Database } from '../../store/tables.ts';
import { emitEvent } from '../events/events.service.ts';
import { addressOf, presentCustomer } from './customers.present.ts';
import {
  custInfosOfPayments as custInfosOf,
  findCustInfoOfPayment as custInfoOf,
  getCustomer,
  paymentIdsByPayerEmail as paymentIdsByEmail,
  insertCustInfo,
  insertCustomerIfNew,
  listCustomers,
  lockCustomerByEmail,
  searchCustomers,
  updateCustomer,
  type CustomerRow,
} from './customers.repo.ts';
import {
  customerChanges,
  filledFromCustomer,
  merchantReplacements,
  normaliseEmail,
  type CustomerFields,
  type PayerDetails,
} from './customers.rules.ts';
import type { Mode } from '../../shared/mode.ts';
import type { Ctx } from '../context.ts';
import type { CustInfoRow } from './customers.tables.ts';

export type { PayerDetails } from './customers.rules.ts';
export { EMPTY_DETAILS } from './customers.rules.ts';
export { presentCustInfo, presentCustomer, type CustInfoObject, type CustomerObject } from './customers.present.ts';

type Db = Kysely<Database>;
export type CustomerScope = { userId: string; mode: Mode };

/** Records the payer's details against a payment (in the caller's transaction). */
export async function recordCustInfo(
  trx: Db,
  scope: CustomerScope,
  paymentId: string,
  details: PayerDetails,
  now: number,
): Promise<CustInfoRow> {
  const row: CustInfoRow = {
    id: newId('custInfo'),
    payment_id: paymentId,
    user_id: scope.userId,
    mode: scope.mode,
    email: details.email === null ? null : normaliseEmail(details.email),
    phone: details.phone,
    first_name: details.first_name,
    last_name: details.last_name,
    ...addressOf(details),
    marketing_opt_in: details.marketing_opt_in ? 1 : 0,
    created_at: now,
    updated_at: now,
  };
  await insertCustInfo(trx, row);
  return row;
}

export type CustomerOutcome = { customer: CustomerRow; change: 'created' | 'updated' | 'unchanged' };

/**
 * The merchant's customer for this email, created from the details of a checkout, or completed by
 * them, with customer.created or customer.updated (only when something changed), in the caller's
 * transaction. Anyone can type anyone's email at checkout, so on a customer that exists the details
 * only fill empty fields (customerChanges); `merchantGiven`, the fields the merchant itself gave
 * with the request, replace stored ones.
 */
export async function upsertCustomer(
  trx: Db,
  scope: CustomerScope,
  details: PayerDetails & { email: string },
  now: number,
  merchantGiven: Partial<PayerDetails> | null = null,
): Promise<CustomerOutcome> {
  const email = normaliseEmail(details.email);
  const typed: CustomerFields = {
    phone: details.phone || null,
    first_name: details.first_name || null,
    last_name: details.last_name || null,
    ...addressOf(details),
  };
  const fresh: CustomerRow = {
    id: newId('customer'),
    user_id: scope.userId,
    mode: scope.mode,
    email,
    ...typed,
    ...merchantReplacements(typed, merchantGiven ?? {}),
    created_at: now,
    updated_at: now,
  };
  if (await insertCustomerIfNew(trx, fresh)) {
    await emitEvent(
      trx,
      scope,
      'customer.created',
      fresh.id,
      {
        id: fresh.id,
        user_id: fresh.user_id,
        created_at: iso(now),
        email,
        first_name: fresh.first_name,
        last_name: fresh.last_name,
        phone: fresh.phone,
        address: addressOf(fresh),
      },
      now,
    );
    return { customer: fresh, change: 'created' };
  }
  const current = (await lockCustomerByEmail(trx, scope, email))!;
  const changes = customerChanges(current, details, merchantGiven ?? {});
  if (Object.keys(changes).length === 0) return { customer: current, change: 'unchanged' };
  const updated: CustomerRow = { ...current, ...changes, updated_at: now };
  await updateCustomer(trx, current.id, { ...changes, updated_at: now });
  await emitEvent(
    trx,
    scope,
    'customer.updated',
    updated.id,
    {
      id: updated.id,
      user_id: updated.user_id,
      updated_at: iso(now),
      email,
      first_name: updated.first_name,
      last_name: updated.last_name,
      phone: updated.phone,
      address: addressOf(updated),
    },
    now,
  );
  return { customer: updated, change: 'updated' };
}

/**
 * After a payment succeeds: the details the payer typed (if they gave an email) create the
 * merchant's customer, or fill what an existing one lacks; `merchantGiven` (the request's own
 * cust_info) replaces what it has. The payment's cust_info keeps the details as given.
 */
export async function recordCustomerOfPayment(
  trx: Db,
  scope: CustomerScope,
  paymentId: string,
  now: number,
  merchantGiven: Partial<PayerDetails> | null = null,
): Promise<CustomerOutcome | null> {
  const info = await custInfoOf(trx, paymentId);
  if (!info?.email) return null;
  const details = { ...info, email: info.email, marketing_opt_in: info.marketing_opt_in === 1 };
  // The merchant's details are about the email it gave: a payer who typed another is not that customer.
  const givenEmail = merchantGiven?.email;
  const aboutThisEmail = typeof givenEmail === 'string' && normaliseEmail(givenEmail) === normaliseEmail(info.email);
  return upsertCustomer(trx, scope, details, now, aboutThisEmail ? merchantGiven : null);
}

const owner = (ctx: Ctx) => ({ userId: ctx.merchant.id, mode: ctx.mode });

export async function retrieveCustomer(ctx: Ctx, id: string) {
  return { customer: presentCustomer(await getCustomer(ctx.db, owner(ctx), id)) };
}

export async function listCustomersFor(ctx: Ctx, query: { email?: string; limit?: number; starting_after?: string }) {
  const limit = query.limit ?? 100;
  const { items, hasMore } = pageOf(await listCustomers(ctx.db, owner(ctx), { ...query, limit }), limit);
  return { customers: items.map(presentCustomer), has_more: hasMore };
}

/** The dashboard's customer list with a search of email and name. */
export async function searchCustomersFor(
  ctx: Ctx,
  query: { search?: string; limit?: number; starting_after?: string },
) {
  const limit = query.limit ?? 25;
  const { items, hasMore } = pageOf(await searchCustomers(ctx.db, owner(ctx), { ...query, limit }), limit);
  return { customers: items.map(presentCustomer), has_more: hasMore };
}

// What payments may ask of the payer details recorded against them.

/** The payer's details given with a payment, if any. */
export function findCustInfoOfPayment(db: Db, paymentId: string): Promise<CustInfoRow | undefined> {
  return custInfoOf(db, paymentId);
}

/** The payer's details of each of these payments that has them, by payment id. */
export function custInfosOfPayments(db: Db, paymentIds: string[]): Promise<Map<string, CustInfoRow>> {
  return custInfosOf(db, paymentIds);
}

/**
 * The details of each of these payments of one customer, completed from the customer record where
 * a payment recorded nothing (a subscription's charges), by payment id.
 */
export async function custInfosOfCustomerPayments(
  db: Db,
  owner: CustomerScope,
  customerId: string | null,
  paymentIds: string[],
): Promise<Map<string, CustInfoRow>> {
  const infos = await custInfosOf(db, paymentIds);
  if (customerId === null || infos.size === 0) return infos;
  const customer = await getCustomer(db, owner, customerId);
  return new Map([...infos].map(([paymentId, info]) => [paymentId, filledFromCustomer(info, customer)]));
}

/** This owner's payments whose payer gave an email containing the text (or exactly it), newest first. */
export function paymentIdsByPayerEmail(db: Db, owner: CustomerScope, email: string, exact: boolean): Promise<string[]> {
  return paymentIdsByEmail(db, owner, email, exact);
}
