import { ulid } from '../shared/ids.ts';
import { transact } from '../store/store.ts';
import type { DomesticInitiation, DomesticPaymentRequest } from '../shared/open-banking.wire.ts';
import type { BankTime, SandboxDeps, SandboxDb } from './sandbox.context.ts';
import { BankApiError, unknownId } from './sandbox.errors.ts';
import { fingerprintOf, holdIdempotencyKey } from './sandbox.idempotency.ts';
import { checkLimitTotals, periodWindow, type Period, type UsageTotals } from './sandbox.limits.ts';
import { centsOf, consentCreditorAccounts, effectiveStatus, hasEnded } from './consents.service.ts';
import { canonicalAccountNumber } from './sandbox.accounts.ts';
import {
  adjustBalance,
  uncountPayment,
  windowUsage,
  findConsent,
  debitIfFunded,
  findPayerByAccountNumber,
  findPayerById,
  findPayment,
  insertPayment,
  lockPayers,
  updateConsent,
  updatePayment,
  type ConsentRow,
  type PayerRow,
  type PaymentRow,
} from './sandbox.repo.ts';

const ENDPOINT = 'domestic-payments';

/**
 * Executes a payment under an authorised consent. One processing per x-idempotency-key; the
 * consent row is locked, so limit checks hold under concurrent executions. A refusal before any
 * money moves is an error (4xx); a bank decision about the money is a Rejected payment.
 */
export async function submitDomesticPayment(
  deps: SandboxDeps,
  auth: { clientId: string; consentId: string },
  body: DomesticPaymentRequest,
  key: string,
  bankNow: BankTime,
): Promise<{ payment: PaymentRow; replayed: boolean }> {
  if (body.Data.ConsentId !== auth.consentId) {
    throw new BankApiError(
      403,
      'Resource.Consent.Mismatch',
      'The access token was issued for another consent',
      'Data.ConsentId',
    );
  }
  const now = deps.clock.now();
  const id = `dp-${ulid()}`;
  return transact(deps.db, async (trx) => {
    const held = await holdIdempotencyKey(trx, {
      clientId: auth.clientId,
      endpoint: ENDPOINT,
      key,
      fingerprint: fingerprintOf(body),
      newId: id,
      now,
    });
    if (held.replayOf) return { payment: (await findPayment(trx, held.replayOf))!, replayed: true };

    const consent = await findConsent(trx, body.Data.ConsentId, { forUpdate: true });
    if (!consent || consent.client_id !== auth.clientId) throw unknownId('Data.ConsentId', body.Data.ConsentId);
    const initiation = body.Data.Initiation;
    const amountCents = centsOf(initiation.InstructedAmount.Amount, 'Data.Initiation.InstructedAmount.Amount');
    refuseUnlessExecutable(consent, bankNow);
    refuseMismatch(consent, initiation, amountCents, await mayPayAnyAccount(trx, consent));
    const usage = consent.kind === 'enduring' ? await refuseOverLimits(deps, trx, consent, amountCents, bankNow) : null;

    const payment = await decide(trx, consent, { id, amountCents, body, now, bankNow });
    await insertPayment(trx, payment);
    const consentChanges: Partial<ConsentRow> = { updated_at: now };
    if (consent.kind === 'domestic') Object.assign(consentChanges, { status: 'Consumed', status_updated_at: now });
    if (consent.decline_next > 0) consentChanges.decline_next = consent.decline_next - 1;
    if (usage) Object.assign(consentChanges, countedUsage(usage, payment));
    await updateConsent(trx, consent.id, consentChanges);
    return { payment, replayed: false };
  });
}

function refuseUnlessExecutable(consent: ConsentRow, bankNow: BankTime): void {
  const status = effectiveStatus(consent, bankNow);
  if (status === 'Authorised' && hasEnded(consent, bankNow)) {
    throw new BankApiError(
      400,
      'Resource.Consent.Exceed.Dates',
      'The consent ended at its ToDateTime',
      'Data.ConsentId',
    );
  }
  if (status !== 'Authorised') {
    throw new BankApiError(
      400,
      'Resource.Consent.InvalidStatus',
      `Consent status is ${status}; payments need an Authorised consent`,
      'Data.ConsentId',
    );
  }
}

/** An enduring consent approved by a holder with the refund arrangement may pay any account. */
async function mayPayAnyAccount(trx: SandboxDb, consent: ConsentRow): Promise<boolean> {
  if (consent.kind !== 'enduring' || !consent.payer_id) return false;
  return (await findPayerById(trx, consent.payer_id))?.refund_arrangement === 1;
}

function refuseMismatch(
  consent: ConsentRow,
  initiation: DomesticInitiation,
  amountCents: number,
  anyCreditor: boolean,
): void {
  const mismatch = (path: string, what: string) =>
    new BankApiError(400, 'Resource.Consent.Mismatch', `${what} differs from the consent`, path);
  if (!anyCreditor && !consentCreditorAccounts(consent).includes(initiation.CreditorAccount.Identification)) {
    throw mismatch('Data.Initiation.CreditorAccount.Identification', 'The creditor account');
  }
  if (consent.kind !== 'domestic') return;
  if (amountCents !== consent.amount_cents) throw mismatch('Data.Initiation.InstructedAmount.Amount', 'The amount');
  const block = initiation.RemittanceInformation.Reference?.CreditorReference ?? {};
  if (
    (block.Particulars ?? '') !== consent.particulars ||
    (block.Code ?? '') !== consent.code ||
    (block.Reference ?? '') !== consent.reference
  ) {
    throw mismatch('Data.Initiation.RemittanceInformation.Reference.CreditorReference', 'The statement reference');
  }
}

const breachMessages = {
  Dates: 'The payment falls outside the consent FromDateTime and ToDateTime',
  MaximumAmount: 'The amount is over the consent MaximumAmount per payment',
  TotalCount: 'The consent TotalCount of payments has been reached',
  TotalAmount: 'The payment would take the total over the consent TotalAmount',
  Frequency: 'The payment would go over the consent limit for this period',
} as const;

type WindowedUsage = { used: UsageTotals; window: { start: number; end: number } };

/** The consent's usage, its period counters read from the row when they hold the current window. */
async function usageOf(
  trx: SandboxDb,
  consent: ConsentRow,
  window: { start: number; end: number },
): Promise<UsageTotals> {
  const period =
    consent.period_start === window.start && consent.period_end === window.end
      ? { count: consent.period_count, amountCents: consent.period_cents }
      : await windowUsage(trx, consent.id, window);
  return {
    count: consent.used_count,
    amountCents: consent.used_cents,
    periodCount: period.count,
    periodAmountCents: period.amountCents,
  };
}

/** The consent's counters once this payment is made (a rejected one counts for nothing). */
function countedUsage({ used, window }: WindowedUsage, payment: PaymentRow): Partial<ConsentRow> {
  const counts = payment.status === 'Rejected' ? 0 : 1;
  return {
    used_count: used.count + counts,
    used_cents: used.amountCents + counts * payment.amount_cents,
    period_start: window.start,
    period_end: window.end,
    period_count: used.periodCount + counts,
    period_cents: used.periodAmountCents + counts * payment.amount_cents,
  };
}

async function refuseOverLimits(
  deps: SandboxDeps,
  trx: SandboxDb,
  consent: ConsentRow,
  amountCents: number,
  bankNow: BankTime,
): Promise<WindowedUsage> {
  const limits = {
    fromAt: consent.from_at!,
    toAt: consent.to_at,
    maxPerPaymentCents: consent.max_per_payment_cents,
    period: consent.period as Period,
    maxPerPeriodCents: consent.max_per_period_cents!,
    maxCountPerPeriod: consent.max_count_per_period,
    totalCount: consent.total_count,
    totalAmountCents: consent.total_amount_cents,
  };
  const window = periodWindow(limits.period, bankNow, deps.zone, limits.fromAt);
  const used = await usageOf(trx, consent, window);
  const breach = checkLimitTotals(limits, used, amountCents, bankNow);
  if (breach)
    throw new BankApiError(
      400,
      `Resource.Consent.Exceed.${breach}`,
      breachMessages[breach],
      'Data.Initiation.InstructedAmount',
    );
  return { used, window };
}

/** The bank's decision on the money: a scripted decline, insufficient funds, or a transfer. */
async function decide(
  trx: SandboxDb,
  consent: ConsentRow,
  input: { id: string; amountCents: number; body: DomesticPaymentRequest; now: number; bankNow: number },
): Promise<PaymentRow> {
  const base: PaymentRow = {
    id: input.id,
    consent_id: consent.id,
    client_id: consent.client_id,
    payer_id: consent.payer_id!,
    status: 'AcceptedSettlementCompleted',
    status_reason: null,
    amount_cents: input.amountCents,
    debited: 0,
    credited_payer_id: null,
    request_body: JSON.stringify(input.body),
    executed_at: input.bankNow,
    release_at: null,
    held: 0,
    created_at: input.now,
    updated_at: input.now,
  };
  if (consent.decline_next > 0)
    return { ...base, status: 'Rejected', status_reason: consent.decline_reason ?? 'declined' };
  const creditor = await creditorHolderId(trx, input.body.Data.Initiation);
  if (!consent.payer_id || !(await transfer(trx, consent.payer_id, creditor, input.amountCents))) {
    return { ...base, status: 'Rejected', status_reason: 'insufficient_funds' };
  }
  const moved: PaymentRow = { ...base, debited: 1, credited_payer_id: creditor };
  if (consent.hold_seconds === null) return moved;
  return {
    ...moved,
    held: 1,
    status: consent.hold_status ?? 'AcceptedSettlementInProcess',
    release_at: consent.hold_seconds < 0 ? null : input.bankNow + consent.hold_seconds * 1000,
  };
}

/** The holder of the payment's creditor account, when this bank holds it; else the money leaves the bank. */
async function creditorHolderId(trx: SandboxDb, initiation: DomesticInitiation): Promise<string | null> {
  const accountNumber = canonicalAccountNumber(initiation.CreditorAccount.Identification);
  return (await findPayerByAccountNumber(trx, accountNumber))?.id ?? null;
}

/** Debits the payer and credits the creditor's holder (if any) as one; false, and nothing moved, without the funds. */
async function transfer(trx: SandboxDb, payerId: string, creditorId: string | null, amountCents: number) {
  if (creditorId) await lockPayers(trx, [payerId, creditorId]);
  if (!(await debitIfFunded(trx, payerId, amountCents))) return false;
  if (creditorId) await adjustBalance(trx, creditorId, amountCents);
  return true;
}

/**
 * Undoes a payment's transfer: the payer gets the amount back, and the holder credited gives it up
 * even if that takes their balance below zero, as a reversal is not the holder's to refuse.
 */
async function reverseTransfer(trx: SandboxDb, payment: PaymentRow): Promise<void> {
  const creditorId = payment.credited_payer_id;
  if (creditorId) await lockPayers(trx, [payment.payer_id, creditorId]);
  await adjustBalance(trx, payment.payer_id, payment.amount_cents);
  if (creditorId) await adjustBalance(trx, creditorId, -payment.amount_cents);
}

/** A payment of this client, settled first if its hold has run out by the bank's time. */
export async function getDomesticPayment(
  deps: SandboxDeps,
  clientId: string,
  id: string,
  bankNow: BankTime,
): Promise<PaymentRow> {
  const row = await findPayment(deps.db, id);
  if (!row || row.client_id !== clientId) throw unknownId('DomesticPaymentId', id);
  if (row.held && row.release_at !== null && bankNow >= row.release_at) {
    return releasePayment(deps, id, { outcome: 'completed' });
  }
  return row;
}

/**
 * The account a payment of this client came from, released only when its consent asked for it
 * (DebtorAccountRelease) and the payment was not rejected.
 */
export async function debtorAccountOf(deps: SandboxDeps, clientId: string, id: string): Promise<PayerRow> {
  const payment = await findPayment(deps.db, id);
  if (!payment || payment.client_id !== clientId) throw unknownId('DomesticPaymentId', id);
  const consent = await findConsent(deps.db, payment.consent_id);
  const sent = consent ? (JSON.parse(consent.request_body) as { Consent?: { DebtorAccountRelease?: boolean } }) : {};
  if (!sent.Consent?.DebtorAccountRelease) {
    throw new BankApiError(
      403,
      'Resource.Consent.DebtorAccount',
      'The consent did not ask for the debtor account (DebtorAccountRelease)',
      'DomesticPaymentId',
    );
  }
  if (payment.status === 'Rejected')
    throw new BankApiError(
      400,
      'Resource.Invalid',
      'The payment was rejected: no account was debited',
      'DomesticPaymentId',
    );
  const payer = await findPayerById(deps.db, payment.payer_id);
  if (!payer) throw unknownId('DomesticPaymentId', id);
  return payer;
}

/** Ends a hold: settles the payment, or rejects it and moves the money back where it came from. */
export async function releasePayment(
  deps: SandboxDeps,
  id: string,
  decision: { outcome: 'completed' | 'rejected'; reason?: string },
): Promise<PaymentRow> {
  return transact(deps.db, async (trx) => {
    const row = await findPayment(trx, id, { forUpdate: true });
    if (!row) throw unknownId('DomesticPaymentId', id);
    if (!row.held) return row;
    const now = deps.clock.now();
    const changes: Partial<PaymentRow> =
      decision.outcome === 'completed'
        ? { status: 'AcceptedSettlementCompleted', held: 0, updated_at: now }
        : {
            status: 'Rejected',
            status_reason: decision.reason ?? 'declined',
            held: 0,
            debited: 0,
            credited_payer_id: null,
            updated_at: now,
          };
    // The consent before the balances, in the order a new payment takes them, so neither waits on the other.
    if (decision.outcome === 'rejected') await uncountPayment(trx, row);
    if (decision.outcome === 'rejected' && row.debited) await reverseTransfer(trx, row);
    await updatePayment(trx, id, changes);
    return { ...row, ...changes };
  });
}
