import type { Kysely } from 'kysely';
import { randomSecret } from '../../shared/crypto.ts';
import { newId } from '../../shared/ids.ts';
import { pageOf } from '../../shared/pagination.ts';
import { iso } from '../../shared/time.ts';
import { enqueue } from '../../jobs/queue.ts';
import type { Database } from '../../store/tables.ts';
import { custInfosOfPayments, findCustInfoOfPayment, paymentIdsByPayerEmail } from '../customers/customers.service.ts';
import { emitEvent } from '../events/events.service.ts';
import { getRequest } from '../requests/requests.service.ts';
import { presentPayment } from './payments.present.ts';
import {
  enduringPayerAccount,
  findAwaitingPaymentOfRequest,
  getPayment,
  insertPaymentIfParticularsFree,
  insertPaymentLater,
  listPayments,
  paymentActivitySince,
  requestIdsByParticulars,
  searchPayments,
  updatePayment,
  updatePaymentIfStatus,
  updatePaymentTakingEnduringAccount,
  type PaymentSearch,
} from './payments.repo.ts';
import { isFinal, newParticulars, PCR_CODE, settledCents, type BankWord, type FinalStatus } from './payments.rules.ts';
import { recordAudit, type AuditBy } from '../audit/audit.service.ts';
import type { ListPaymentsQuery, ListRequestPaymentsQuery } from './payments.schemas.ts';
import type { Ctx, Deps } from '../context.ts';
import { connectorFor } from './payments.banks.ts';
import { notFound } from '../../shared/errors.ts';
import * as repo from './payments.repo.ts';
import type { Mode } from '../../shared/mode.ts';
import type { RequestRow } from '../requests/requests.tables.ts';
import type { PaymentRow } from './payments.tables.ts';

// Building blocks every way of paying shares (one-off checkout here; recurring executions and
// subscription charges in their modules): a payment row with its particulars and payment.created,
// and a status change with payment.status_updated, each in the caller's transaction.

type Db = Kysely<Database>;

export { presentPayment, type PaymentObject } from './payments.present.ts';
export { isParticularsClash } from './payments.repo.ts';
export type { PaymentRow } from './payments.tables.ts';

export type NewPayment = {
  request: Pick<RequestRow, 'id' | 'user_id' | 'mode' | 'merchant_identifier' | 'reference'>;
  amountCents: number;
  bankId: string | null;
  channel: 'page' | 'embed' | 'api' | 'dashboard' | null;
  /** Ties the bank's redirect back to this payment; null when no payer redirect is involved. */
  authState?: string | null;
  reference?: string | null;
  merchantIdentifier?: string | null;
  recurringConsentId?: string | null;
  subscriptionId?: string | null;
  idempotencyKey?: string | null;
  fingerprint?: string | null;
};

/** A payment `awaiting-consent` with unique particulars V-XXXXXX, code TONO, and its payment.created. */
/**
 * The payment and its payment.created event, inside `trx`. Its particulars are random; on the rare
 * clash they are drawn again, which costs PostgreSQL a round trip for the insert's answer. With
 * `answer: 'later'` the insert goes with the transaction's next awaited statement instead, and a
 * clash fails the transaction there (isParticularsClash): for a caller that runs it again.
 */
export async function createPaymentRow(
  trx: Db,
  input: NewPayment,
  now: number,
  { answer }: { answer: 'now' | 'later' } = { answer: 'now' },
): Promise<PaymentRow> {
  const row: PaymentRow = {
    id: newId('payment'),
    user_id: input.request.user_id,
    mode: input.request.mode,
    request_id: input.request.id,
    status: 'awaiting-consent',
    amount_cents: input.amountCents,
    settled_cents: settledCents(input.request.mode, input.amountCents),
    bank_id: input.bankId,
    particulars: newParticulars(),
    code: PCR_CODE,
    reference: input.reference !== undefined ? input.reference : input.request.reference,
    merchant_identifier:
      input.merchantIdentifier !== undefined ? input.merchantIdentifier : input.request.merchant_identifier,
    bank_consent_id: null,
    bank_payment_id: null,
    auth_state: input.authState ?? null,
    recurring_consent_id: input.recurringConsentId ?? null,
    subscription_id: input.subscriptionId ?? null,
    idempotency_key: input.idempotencyKey ?? null,
    fingerprint: input.fingerprint ?? null,
    failure_reason: null,
    created_at: now,
    updated_at: now,
    completed_at: null,
    submitted_at: null,
    channel: input.channel,
    payer_account_sealed: null,
    refunded_cents: 0,
    submission_token_sealed: null,
  };
  // The unique index decides a clash, with no lookup first.
  if (answer === 'later') await insertPaymentLater(trx, row);
  else while (!(await insertPaymentIfParticularsFree(trx, row))) row.particulars = newParticulars();
  await emitEvent(
    trx,
    { userId: row.user_id, mode: row.mode },
    'payment.created',
    row.id,
    {
      id: row.id,
      request_id: row.request_id,
      user_id: row.user_id,
      merchant_identifier: row.merchant_identifier,
      status: 'awaiting-consent',
      updated_at: iso(now),
    },
    now,
  );
  return row;
}

/** Job: reads the payer's account of a successful payment from the bank and keeps it sealed. */
export const PAYER_ACCOUNT_JOB = 'payment.payer_account';

declare module '../../jobs/queue.ts' {
  interface JobPayloads {
    'payment.payer_account': { payment_id: string };
  }
}

/** The enduring consent a payment was made under (a recurring consent, or a subscription's), if any. */
export function enduringIdOf(payment: Pick<PaymentRow, 'recurring_consent_id' | 'subscription_id'>): string | null {
  return payment.recurring_consent_id ?? payment.subscription_id;
}

export function newAuthState(): string {
  return randomSecret(24);
}

type StatusExtra = Partial<Pick<PaymentRow, 'failure_reason' | 'bank_payment_id' | 'bank_consent_id'>>;

/**
 * Moves a payment to a new status with payment.status_updated, in the caller's transaction (the
 * caller holds the row lock). Final statuses set completed_at.
 */
export async function setPaymentStatus(
  trx: Db,
  payment: PaymentRow,
  status: FinalStatus,
  now: number,
  extra: StatusExtra = {},
): Promise<PaymentRow> {
  return moveStatus(trx, payment, status, now, extra);
}

/** A payment as moved by setPaymentStatusOrFail: the payer account it took is not read back. */
export type MovedPayment = Omit<PaymentRow, 'payer_account_sealed'>;

/**
 * setPaymentStatus without the row read and locked first, in one round trip: `payment` as the
 * caller last read it, and the update guarded by its status (a payment's other columns change only
 * with its status) and not waited for on PostgreSQL. The caller's transaction fails instead
 * (isNotWritten, at its next awaited statement or its COMMIT) when something moved the payment
 * since, or when it becomes successful under an enduring consent with no payer account kept yet
 * (setPaymentStatus then queues the job that asks the bank). The caller then locks and records it.
 */
export async function setPaymentStatusOrFail(
  trx: Db,
  payment: PaymentRow,
  status: FinalStatus,
  now: number,
  extra: StatusExtra = {},
): Promise<MovedPayment> {
  const changes = changesOf(payment, status, now, extra);
  const wantsAccount = wantsPayerAccount(payment, changes);
  const enduringId = wantsAccount ? enduringIdOf(payment) : null;
  await repo.movePaymentOrFail(trx, payment.id, payment.status, changes, enduringId);
  if (wantsAccount && enduringId === null) await queuePayerAccount(trx, payment, now);
  const { payer_account_sealed: _, ...moved } = { ...payment, ...changes };
  await emitStatusUpdated(trx, payment, moved, status, now);
  return moved;
}

function changesOf(payment: PaymentRow, status: FinalStatus, now: number, extra: StatusExtra): Partial<PaymentRow> {
  const changes: Partial<PaymentRow> = { status, updated_at: now, ...extra };
  if (isFinal(status)) changes.completed_at = now;
  // Kept only until the bank has named the payment or it has ended (one-off.service.ts, claimExecution).
  if (payment.submission_token_sealed && (isFinal(status) || changes.bank_payment_id))
    changes.submission_token_sealed = null;
  return changes;
}

/**
 * The payer's account, for refunds, once a payment has succeeded at a bank that named it. Under an
 * enduring consent it is the account already kept for that consent, if any, taken by the update
 * itself; otherwise it is read from the bank after the fact, never in the payment's way (docs/banks.md).
 */
function wantsPayerAccount(payment: PaymentRow, changes: Partial<PaymentRow>): boolean {
  const bankPaymentId = changes.bank_payment_id ?? payment.bank_payment_id;
  return changes.status === 'successful' && Boolean(bankPaymentId) && !payment.payer_account_sealed;
}

/**
 * Due at once, on real time: asking the bank is not a test-clock event. A live payment's `now` is
 * real time, so its job takes its turn behind jobs due earlier; a test payment's is its clock's,
 * which may be months ahead of the time real-time jobs are due by, so its job is due from the start.
 */
async function queuePayerAccount(trx: Db, payment: PaymentRow, now: number): Promise<void> {
  await enqueue(
    trx,
    {
      kind: PAYER_ACCOUNT_JOB,
      runAt: payment.mode === 'live' ? now : 0,
      clockId: null,
      payload: { payment_id: payment.id },
      dedupeKey: `${PAYER_ACCOUNT_JOB}:${payment.id}`,
    },
    now,
  );
}

async function emitStatusUpdated(
  trx: Db,
  payment: PaymentRow,
  moved: MovedPayment,
  status: FinalStatus,
  now: number,
): Promise<void> {
  await emitEvent(
    trx,
    { userId: payment.user_id, mode: payment.mode },
    'payment.status_updated',
    payment.id,
    {
      id: payment.id,
      request_id: payment.request_id,
      user_id: payment.user_id,
      merchant_identifier: payment.merchant_identifier,
      status,
      updated_at: iso(now),
    },
    now,
    { subject: moved },
  );
}

async function moveStatus(
  trx: Db,
  payment: PaymentRow,
  status: FinalStatus,
  now: number,
  extra: StatusExtra,
): Promise<PaymentRow> {
  const changes = changesOf(payment, status, now, extra);
  const wantsAccount = wantsPayerAccount(payment, changes);
  const enduringId = wantsAccount ? enduringIdOf(payment) : null;
  if (enduringId !== null) {
    const updated = await updatePaymentTakingEnduringAccount(trx, payment.id, changes, enduringId, null);
    changes.payer_account_sealed = updated?.payerAccountSealed ?? null;
  } else await updatePayment(trx, payment.id, changes);
  if (wantsAccount && !changes.payer_account_sealed) await queuePayerAccount(trx, payment, now);
  const moved: PaymentRow = { ...payment, ...changes };
  await emitStatusUpdated(trx, payment, moved, status, now);
  return moved;
}

const ownerOf = (ctx: Ctx) => ({ userId: ctx.merchant.id, mode: ctx.mode });

export async function retrievePayment(ctx: Ctx, id: string) {
  const row = await getPayment(ctx.db, ownerOf(ctx), id);
  return { payment: presentPayment(row, await findCustInfoOfPayment(ctx.db, row.id)) };
}

/**
 * The sandbox bank's consent and payment behind one of the caller's payments (the test helpers' bank
 * hooks). A payment under a recurring consent or a subscription has no consent of its own: the
 * enduring one is theirs, so their ids come too.
 */
export async function bankIdsOfPayment(
  ctx: Ctx,
  id: string,
): Promise<{
  consentId: string | null;
  paymentId: string | null;
  recurringConsentId: string | null;
  subscriptionId: string | null;
}> {
  const row = await getPayment(ctx.db, ownerOf(ctx), id);
  return {
    consentId: row.bank_consent_id,
    paymentId: row.bank_payment_id,
    recurringConsentId: row.recurring_consent_id,
    subscriptionId: row.subscription_id,
  };
}

/** The bank consent a payer of this request is approving now (its newest payment awaiting consent at a bank), if any. */
export async function pendingBankConsentOfRequest(ctx: Ctx, requestId: string): Promise<string | null> {
  const row = await findAwaitingPaymentOfRequest(ctx.db, requestId);
  return row?.bank_consent_id ?? null;
}

async function presentPage(ctx: Ctx, rows: PaymentRow[], limit: number) {
  const { items, hasMore } = pageOf(rows, limit);
  const infos = await custInfosOfPayments(
    ctx.db,
    items.map((row) => row.id),
  );
  return { payments: items.map((row) => presentPayment(row, infos.get(row.id))), has_more: hasMore };
}

export async function listPaymentsFor(ctx: Ctx, query: ListPaymentsQuery) {
  const limit = query.limit ?? 100;
  return presentPage(ctx, await listPayments(ctx.db, ownerOf(ctx), { ...query, limit }), limit);
}

export async function listRequestPayments(ctx: Ctx, requestId: string, query: ListRequestPaymentsQuery) {
  await getRequest(ctx.db, ownerOf(ctx), requestId);
  const limit = query.limit ?? 100;
  return presentPage(ctx, await listPayments(ctx.db, ownerOf(ctx), { ...query, request_id: requestId, limit }), limit);
}

/**
 * The dashboard's list of payments: status, a date range and a search that also finds the payer's
 * email. `payerEmail` keeps a customer's payments.
 */
export async function searchPaymentsFor(
  ctx: Ctx,
  query: Omit<PaymentSearch, 'limit' | 'alsoIds' | 'onlyIds'> & { limit?: number; payerEmail?: string },
) {
  const limit = query.limit ?? 25;
  const search = query.search?.trim();
  const owner = ownerOf(ctx);
  const alsoIds = search ? await paymentIdsByPayerEmail(ctx.db, owner, search, false) : undefined;
  const onlyIds = query.payerEmail ? await paymentIdsByPayerEmail(ctx.db, owner, query.payerEmail, true) : undefined;
  const rows = await searchPayments(ctx.db, owner, { ...query, limit, alsoIds, onlyIds });
  return presentPage(ctx, rows, limit);
}

/** Requests of this owner with a payment whose particulars contain the text (the request search). */
export async function requestIdsWithParticulars(ctx: Ctx, search: string): Promise<string[]> {
  return requestIdsByParticulars(ctx.db, ownerOf(ctx), search);
}

/** The caller's payments created since a time: status, asked amount, times (for the dashboard's charts). */
export async function paymentActivityFor(ctx: Ctx, since: number) {
  const rows = await paymentActivitySince(ctx.db, ownerOf(ctx), since);
  return rows.map((row) => ({
    status: row.status,
    cents: Number(row.amount_cents),
    createdAt: Number(row.created_at),
    completedAt: row.completed_at == null ? null : Number(row.completed_at),
  }));
}

// What other modules (recurring executions, subscription charges, checkout, the dashboards) may ask
// of payments: reads by name, and one hold for recording an execution's outcome.

/** Executions left awaiting the bank's answer, oldest first, for the sweep that settles them. */
export function executionsInFlight(db: Db, limit: number) {
  return repo.executionsInFlight(db, limit);
}

export function findPaymentById(db: Db, id: string): Promise<PaymentRow | undefined> {
  return repo.findPaymentById(db, id);
}

/**
 * A merchant's successful payments completed in [from, to), oldest first, at most `limit`: what
 * reconciliation matches statement lines to (particulars, code, reference, settled_cents).
 */
export function successfulPaymentsBetween(
  db: Db,
  owner: { userId: string; mode: Mode },
  window: { from: number; to: number },
  limit: number,
): Promise<PaymentRow[]> {
  return repo.successfulPaymentsCompletedBetween(db, owner, window, limit);
}

/** The payment a merchant's execution with this idempotency key created, if any. */
export function findPaymentByIdempotencyKey(
  db: Db,
  owner: { userId: string; mode: Mode },
  key: string,
): Promise<PaymentRow | undefined> {
  return repo.findPaymentByIdempotencyKey(db, owner, key);
}

/** A subscription's charge payments, newest first. */
export function listPaymentsOfSubscription(
  db: Db,
  owner: { userId: string; mode: Mode },
  subscriptionId: string,
  page: { limit?: number; starting_after?: string },
) {
  return repo.listPaymentsOfSubscription(db, owner, subscriptionId, page);
}

/** The newest payments taken under a recurring consent or a subscription, newest first. */
export function paymentsUnder(
  db: Db,
  under: { recurringConsentId: string } | { subscriptionId: string },
  limit = 50,
): Promise<PaymentRow[]> {
  return repo.paymentsUnder(db, under, limit);
}

/** What a consent's payments of these statuses add up to in a window (its usage against its limits). */
export function sumPaymentsOfConsent(
  db: Db,
  consentId: string,
  window: { start: number; end: number },
  statuses: readonly string[],
  exceptPaymentId?: string,
) {
  return repo.sumPaymentsOfConsent(db, consentId, window, statuses, exceptPaymentId);
}

/** The payer's account as kept for refunds: scheme, account number and name. */
export type PayerAccount = { scheme_name: string; identification: string; name: string | null };
/** What asking for a payer's account came to: the account, the bank's refusal, or try again later. */
export type PayerAccountLookup = { found: PayerAccount } | { refused: string } | { retry: string };

/**
 * The payer's account of a successful payment: the one kept for it, else the one kept for its
 * enduring consent, else read from the bank now (GET debtor-account) and kept sealed, also for the
 * consent, whose later payments debit the same account (docs/banks.md).
 */
export async function payerAccountOfPayment(deps: Deps, paymentId: string): Promise<PayerAccountLookup> {
  const payment = await repo.findPaymentById(deps.db, paymentId);
  if (payment?.status !== 'successful') return { refused: 'the payment is not successful' };
  const open = (sealed: string): PayerAccountLookup => ({
    found: JSON.parse(deps.secrets.open(sealed)) as PayerAccount,
  });
  if (payment.payer_account_sealed) return open(payment.payer_account_sealed);
  const enduringId = enduringIdOf(payment);
  const kept = enduringId ? await enduringPayerAccount(deps.db, enduringId) : undefined;
  if (kept) {
    await updatePayment(deps.db, payment.id, { payer_account_sealed: kept });
    return open(kept);
  }
  if (!payment.bank_payment_id) return { refused: 'the bank never named the payment' };
  const connector = connectorFor(deps, payment.bank_id, payment.mode);
  if (!connector) return { retry: 'bank not connected' };
  const result = await connector.getDebtorAccount({
    paymentId: payment.bank_payment_id,
    trace: { payment_id: payment.id },
  });
  if (!result.ok) {
    if (result.unknown) return { retry: result.message };
    deps.log.warn(
      { payment_id: payment.id, reason: result.reason, bank_code: result.bankCode },
      'the bank did not release the payer account',
    );
    return { refused: result.reason };
  }
  const account: PayerAccount = {
    scheme_name: result.account.schemeName,
    identification: result.account.identification,
    name: result.account.name,
  };
  const sealed = deps.secrets.seal(JSON.stringify(account));
  await deps.store.transaction(async (trx) => {
    // Not kept for a payment deleted while the bank was asked (the merchant's test data).
    if (!(await updatePaymentIfStatus(trx, payment.id, 'successful', { payer_account_sealed: sealed }))) return;
    // Later payments under the same enduring consent debit the same account: they take it from here.
    if (enduringId) await repo.keepEnduringPayerAccount(trx, enduringId, sealed, deps.clock.now());
  });
  return { found: account };
}

/**
 * The payers' accounts kept for these payments (or for their enduring consents), without asking
 * the bank, by payment id: three reads whatever the number of payments. A payment with none kept
 * is left out.
 */
export async function keptPayerAccountsOf(
  deps: Deps,
  paymentIds: readonly string[],
): Promise<Map<string, PayerAccount>> {
  const payments = await repo.payerAccountsOfPayments(deps.db, paymentIds);
  const enduringIds = payments.flatMap((row) => {
    const enduringId = row.payer_account_sealed ? null : enduringIdOf(row);
    return enduringId ? [enduringId] : [];
  });
  const byEnduring = await repo.enduringPayerAccounts(deps.db, enduringIds);
  const kept = new Map<string, PayerAccount>();
  for (const row of payments) {
    const enduringId = enduringIdOf(row);
    const sealed = row.payer_account_sealed ?? (enduringId ? byEnduring.get(enduringId) : undefined);
    if (sealed) kept.set(row.id, JSON.parse(deps.secrets.open(sealed)) as PayerAccount);
  }
  return kept;
}

/**
 * A payment of the caller's, held (row-locked) for the rest of the transaction while a refund of
 * it is counted: refunds of one payment queue here, so they never add up to more than it.
 */
export async function holdPaymentToRefund(
  trx: Db,
  owner: { userId: string; mode: Mode },
  id: string,
): Promise<PaymentRow> {
  const row = await repo.lockPayment(trx, id);
  if (!row || row.user_id !== owner.userId || row.mode !== owner.mode) throw notFound('payment', id);
  return row;
}

/** Moves what is refunded of a payment by `deltaCents` (negative when a refund fails), under the caller's hold. */
export async function countRefunded(trx: Db, paymentId: string, deltaCents: number): Promise<void> {
  await repo.addRefunded(trx, paymentId, deltaCents);
}

/** An execution's payment, held for the rest of the caller's transaction while its outcome is recorded. */
export function holdPaymentToRecord(trx: Db, id: string): Promise<PaymentRow | undefined> {
  return repo.lockPayment(trx, id);
}

/** The columns a payment's end takes from the bank's word an operator recorded. */
export function extrasOfWord(word: BankWord): StatusExtra {
  return word.status === 'successful' ? { bank_payment_id: word.bankPaymentId } : { failure_reason: word.reason };
}

/** A payment settled on the bank's word, in the audit trail as the operator's change (action `payment.settle`). */
export function auditSettledByHand(
  trx: Db,
  before: PaymentRow,
  after: Pick<PaymentRow, 'status' | 'failure_reason' | 'bank_payment_id'>,
  at: number,
  by: AuditBy,
): Promise<void> {
  return recordAudit(trx, {
    userId: before.user_id,
    mode: before.mode,
    ...by,
    action: 'payment.settle',
    objectId: before.id,
    summary: {
      status: { from: before.status, to: after.status },
      failure_reason: after.failure_reason,
      bank_payment_id: after.bank_payment_id,
    },
    at,
  });
}

/**
 * Unconfirmed payments the bank never named, oldest first: the candidates for the bank's word
 * (waitsForBankWord, and for a subscription's charge its own rule). A scan of the payments, for
 * the operator's occasional look (`npm run cli -- payments unanswered`).
 */
export function unconfirmedPaymentsNeverNamed(db: Db, limit: number): Promise<PaymentRow[]> {
  return repo.unconfirmedPaymentsNeverNamed(db, limit);
}
