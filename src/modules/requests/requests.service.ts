import type { Kysely } from 'kysely';
import type { Mode } from '../../shared/mode.ts';
import { idempotent, type Reply } from '../../http/idempotency.ts';
import { AppError, invalidParam, invalidState } from '../../shared/errors.ts';
import { newId } from '../../shared/ids.ts';
import { pageOf } from '../../shared/pagination.ts';
import { andThen } from '../../shared/now-or-later.ts';
import { iso, isoOrNull } from '../../shared/time.ts';
import { bringQueuedJobForward, enqueue, realTimeOf } from '../../jobs/queue.ts';
import type { JobHandler } from '../../jobs/worker.ts';
import type { Database } from '../../store/tables.ts';
import { transact } from '../../store/store.ts';
import { emitEvent } from '../events/events.service.ts';
import { recordAuditFor } from '../audit/audit.service.ts';
import { qrDataUri } from './qr.ts';
import {
  insertRequest,
  isNotMerchantsBankAccount,
  listRequests,
  findRequestById as requestById,
  getRequest as ownRequest,
  lockRequest,
  requestIdsOfOwner,
  requestNow,
  searchRequests,
  setPaymentAtBank,
  setRequestStatus,
  type RequestSearch,
} from './requests.repo.ts';

import { presentRequest, requestUrl, type RequestObject } from './requests.present.ts';
import { normaliseCreateRequest, type NormalisedRequest } from './requests.rules.ts';
import type { CreateRequestBody, ListRequestsQuery } from './requests.schemas.ts';
import type { Ctx } from '../context.ts';
import { clockIdOf } from '../merchants/merchants.clock.ts';
import type { RequestRow } from './requests.tables.ts';

export const EXPIRE_REQUEST_JOB = 'request.expire';

declare module '../../jobs/queue.ts' {
  interface JobPayloads {
    'request.expire': { request_id: string };
  }
}

const owner = (ctx: Ctx) => ({ userId: ctx.merchant.id, mode: ctx.mode });
const bool = (value: boolean | undefined) => (value ? 1 : 0);

/** A live request no payer could pay: the operator has connected no live bank (docs/banks.md). */
export function noLiveBankError(): AppError {
  return new AppError(
    'conflict.no_live_bank',
    'Live mode has no bank to pay with: the operator of this service has not connected a live bank (BANKS_FILE, see docs/banks.md), so no payer could pay this request. Use a test key, or ask the operator to connect a bank',
    { setting: 'BANKS_FILE' },
  );
}

export function createRequest(
  ctx: Ctx,
  body: CreateRequestBody,
  idempotencyKey?: string,
): Promise<Reply<{ request: RequestObject }>> {
  // The insert checks the bank account (insertRequest), so a create costs no read of it.
  return createIntoCheckedAccount(ctx, body, idempotencyKey).catch((error: unknown) => {
    if (!isNotMerchantsBankAccount(error)) throw error;
    throw invalidParam('bank_account_id', 'bank_account_id must be one of your bank accounts (GET /v1/bank-accounts)');
  });
}

async function createIntoCheckedAccount(
  ctx: Ctx,
  body: CreateRequestBody,
  idempotencyKey?: string,
): Promise<Reply<{ request: RequestObject }>> {
  const now = ctx.clock.now();
  const zone = ctx.deps.config.serviceTimeZone;
  // With an Idempotency-Key the parameters are checked after the key is claimed: a retry of a
  // request made earlier answers with it, even when its times have passed since or no live bank is
  // connected now (a refusal rolls the claim back). Without one, a refusal costs nothing more.
  const checked = idempotencyKey ? null : normaliseCreateRequest(body, now, zone);
  const id = newId('request');
  const publicBaseUrl = ctx.deps.config.publicBaseUrl;
  const qrData = await qrDataUri(requestUrl(publicBaseUrl, id));

  return idempotent(ctx, idempotencyKey, 'POST /v1/requests', body, 201, async (trx) => {
    const normalised = checked ?? normaliseCreateRequest(body, now, zone);
    const row = requestRowOf(ctx, id, body, normalised, { qrData, now });
    if (ctx.mode === 'live' && ctx.deps.banks.list('live').length === 0) throw noLiveBankError();
    await insertRequest(trx, row);
    await emitEvent(
      trx,
      owner(ctx),
      'request.created',
      id,
      {
        id,
        merchant_identifier: row.merchant_identifier,
        user_id: row.user_id,
        created_at: iso(now),
        expires_at: isoOrNull(row.expires_at),
      },
      now,
    );
    if (row.expires_at !== null) {
      await enqueue(
        trx,
        {
          kind: EXPIRE_REQUEST_JOB,
          runAt: realTimeOf(row.expires_at, ctx.clock),
          clockId: clockIdOf({ user_id: ctx.merchant.id, mode: ctx.mode }),
          payload: { request_id: id },
          dedupeKey: `${EXPIRE_REQUEST_JOB}:${id}`,
        },
        ctx.deps.clock.now(),
      );
    }
    await recordAuditFor(trx, ctx, 'request.create', id, {
      kind: row.kind,
      type: row.type,
      amount_cents: row.amount_cents,
      reference: row.reference,
      merchant_identifier: row.merchant_identifier,
    });
    return { request: presentRequest(row, publicBaseUrl) };
  });
}

/** The row of a new request, from its checked parameters. */
function requestRowOf(
  ctx: Ctx,
  id: string,
  body: CreateRequestBody,
  normalised: NormalisedRequest,
  made: { qrData: string; now: number },
): RequestRow {
  return {
    id,
    user_id: ctx.merchant.id,
    mode: ctx.mode,
    status: 'active',
    type: normalised.type,
    kind: normalised.kind,
    message: body.message,
    amount_cents: normalised.amountCents,
    bank_account_id: body.bank_account_id,
    merchant_identifier: body.merchant_identifier ?? null,
    reference: body.reference ?? null,
    flow: 'link',
    qr_data: made.qrData,
    logo_image_url: body.logo_image_url ?? null,
    banner_image_url: body.banner_image_url ?? null,
    min_payment_cents: normalised.minCents,
    max_payment_cents: normalised.maxCents,
    suggested_amounts: normalised.suggestedAmounts,
    is_donation: bool(body.is_donation),
    add_surcharge: bool(body.add_surcharge),
    surcharge_optional: bool(body.surcharge_optional),
    allow_dynamic_amount: bool(body.allow_dynamic_amount),
    allow_marketing_opt_in: bool(body.allow_marketing_opt_in),
    collect_customer_phone: bool(body.collect_customer_phone || body.require_customer_phone),
    require_customer_phone: bool(body.require_customer_phone),
    require_customer_basic_info: bool(body.require_customer_basic_info),
    require_customer_address: bool(body.require_customer_address),
    success_redirect_url: body.success_redirect_url ?? null,
    failure_redirect_url: body.failure_redirect_url ?? null,
    recurring_options: normalised.recurring ? JSON.stringify(normalised.recurring) : null,
    subscription_options: normalised.subscription ? JSON.stringify(normalised.subscription) : null,
    cust_info: normalised.custInfo ? JSON.stringify(normalised.custInfo) : null,
    created_at: made.now,
    updated_at: made.now,
    expires_at: normalised.expiresAt,
    deleted_at: null,
    payment_at_bank: null,
  };
}

/** The request as the API shows it; in hand when the database answers at once (the hottest read). */
export function retrieveRequest(ctx: Ctx, id: string) {
  return andThen(requestNow(ctx.db, owner(ctx), id), (row) => ({
    request: presentRequest(row, ctx.deps.config.publicBaseUrl),
  }));
}

export async function listRequestsFor(ctx: Ctx, query: ListRequestsQuery) {
  const limit = query.limit ?? 100;
  const { items, hasMore } = pageOf(await listRequests(ctx.db, owner(ctx), { ...query, limit }), limit);
  return { requests: items.map((row) => presentRequest(row, ctx.deps.config.publicBaseUrl)), has_more: hasMore };
}

export async function deleteRequest(ctx: Ctx, id: string) {
  return transact(ctx.db, async (trx) => {
    await getRequest(trx, owner(ctx), id);
    const row = (await lockRequest(trx, id))!;
    // A delete repeated (after a timeout, say) answers with the request as it is, and does nothing again.
    if (row.status === 'deleted') return { request: presentRequest(row, ctx.deps.config.publicBaseUrl) };
    if (row.status !== 'active') throw invalidState('request', row.status, 'delete');
    if (row.payment_at_bank) throw paymentAtBankError(row.payment_at_bank);
    const now = ctx.clock.now();
    await setRequestStatus(trx, id, 'deleted', now, { deleted_at: now });
    await emitEvent(
      trx,
      owner(ctx),
      'request.status_updated',
      id,
      {
        id,
        user_id: row.user_id,
        merchant_identifier: row.merchant_identifier,
        status: 'deleted',
        updated_at: iso(now),
      },
      now,
    );
    await recordAuditFor(trx, ctx, 'request.delete', id, { status: { from: row.status, to: 'deleted' } });
    return {
      request: presentRequest(
        { ...row, status: 'deleted', updated_at: now, deleted_at: now },
        ctx.deps.config.publicBaseUrl,
      ),
    };
  });
}

function paymentAtBankError(paymentId: string): AppError {
  return new AppError(
    'conflict.payment_at_bank',
    `A payer has approved payment ${paymentId} of this request and it is at their bank: the request can be deleted only if that payment fails, and becomes paid if it succeeds`,
    { payment_id: paymentId },
  );
}

/** Marks an active single request paid (its first successful payment), with its event. */
export async function markRequestPaid(trx: Kysely<Database>, row: RequestRow, now: number): Promise<void> {
  await setRequestStatus(trx, row.id, 'paid', now, { payment_at_bank: null });
  await emitEvent(
    trx,
    { userId: row.user_id, mode: row.mode },
    'request.status_updated',
    row.id,
    {
      id: row.id,
      user_id: row.user_id,
      merchant_identifier: row.merchant_identifier,
      status: 'paid',
      updated_at: iso(now),
    },
    now,
  );
}

/** How long an expiry waiting for a payment at the bank sleeps: the payment's end wakes it sooner. */
const EXPIRY_WAITS_FOR_BANK_MS = 60 * 60_000;

/** Job: at expires_at an active request becomes expired, with request.expired. Safe to run twice. */
export const expireRequestJob: JobHandler = async (payload: { request_id: string }, { db, clock, finishIn }) => {
  const now = clock.now();
  return transact(db, async (trx) => {
    const row = await lockRequest(trx, payload.request_id);
    if (row && row.status === 'active' && row.expires_at !== null) {
      if (row.expires_at > now) return { retryAt: Date.now() + (row.expires_at - now) };
      // A payment approved before the request expired is at the bank: paid or not, it decides first.
      if (row.payment_at_bank) return { retryAt: Date.now() + EXPIRY_WAITS_FOR_BANK_MS };
      await setRequestStatus(trx, row.id, 'expired', now);
      await emitEvent(
        trx,
        { userId: row.user_id, mode: row.mode },
        'request.expired',
        row.id,
        {
          id: row.id,
          user_id: row.user_id,
          merchant_identifier: row.merchant_identifier,
          status: 'expired',
          updated_at: iso(now),
        },
        now,
      );
    }
    await finishIn(trx);
  });
};

/** The dashboard's list of requests: filters, a date range and a search (docs/dashboard.md). */
export async function searchRequestsFor(ctx: Ctx, query: Omit<RequestSearch, 'limit'> & { limit?: number }) {
  const limit = query.limit ?? 25;
  const { items, hasMore } = pageOf(await searchRequests(ctx.db, owner(ctx), { ...query, limit }), limit);
  return { requests: items.map((row) => presentRequest(row, ctx.deps.config.publicBaseUrl)), has_more: hasMore };
}

// What other modules (checkout, payments, authorisations, the test helpers) may ask of a request.

/** A request by its id alone: the public payment page's capability. */
export function findRequestById(db: Kysely<Database>, id: string): Promise<RequestRow | undefined> {
  return requestById(db, id);
}

/** One of this owner's requests; not_found.request otherwise. */
export function getRequest(
  db: Kysely<Database>,
  owner: { userId: string; mode: Mode },
  id: string,
): Promise<RequestRow> {
  return ownRequest(db, owner, id);
}

/**
 * The request, held for the rest of the caller's transaction while a payer's payment or approval
 * claims it: a single request takes one successful payment, however many payers approve at once.
 */
export function holdRequestToPay(trx: Kysely<Database>, id: string): Promise<RequestRow | undefined> {
  return lockRequest(trx, id);
}

/**
 * A single request's payment claimed for the bank, in the caller's transaction (which holds the
 * request): until it settles the request is neither deleted nor expired.
 */
export async function notePaymentAtBank(trx: Kysely<Database>, requestId: string, paymentId: string): Promise<void> {
  await setPaymentAtBank(trx, requestId, paymentId);
}

/**
 * Its payment at the bank ended without success (the caller holds the request): it may be deleted
 * again, and an expiry that was waiting for the bank runs now.
 */
export async function releasePaymentAtBank(trx: Kysely<Database>, row: RequestRow, paymentId: string): Promise<void> {
  if (row.payment_at_bank !== paymentId) return;
  await setPaymentAtBank(trx, row.id, null);
  if (row.expires_at !== null) await bringQueuedJobForward(trx, `${EXPIRE_REQUEST_JOB}:${row.id}`, Date.now());
}

/** Whether the merchant has made any request in this mode (the dashboard opens in live mode once it has). */
export async function hasAnyRequest(db: Kysely<Database>, owner: { userId: string; mode: Mode }): Promise<boolean> {
  return (await listRequests(db, owner, { limit: 0 })).length > 0;
}

/**
 * The ids of an owner's requests, as a subquery: how another module finds its rows that belong to
 * them, to delete a merchant's test data with theirs.
 */
export function requestIdsOf(db: Kysely<Database>, owner: { userId: string; mode: Mode }) {
  return requestIdsOfOwner(db, owner);
}
