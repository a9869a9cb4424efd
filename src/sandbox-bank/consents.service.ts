import { ulid } from '../shared/ids.ts';
import { transact } from '../store/store.ts';
import { parseAmount } from '../shared/money.ts';
import type { ConsentStatus, DomesticConsentRequest, EnduringConsentRequest } from '../shared/open-banking.wire.ts';
import type { BankTime, SandboxDeps } from './sandbox.context.ts';
import { BankApiError, fieldInvalid, unknownId } from './sandbox.errors.ts';
import { fingerprintOf, holdIdempotencyKey } from './sandbox.idempotency.ts';
import type { Period } from './sandbox.limits.ts';
import { findConsent, insertConsent, updateConsent, type ConsentRow } from './sandbox.repo.ts';

export type ConsentKind = 'domestic' | 'enduring';

/** Positive cents from the standard's "12.50"; `path` names the field in the error. */
export function centsOf(amount: string, path: string): number {
  const cents = parseAmount(`${amount} NZD`);
  if (cents === null || cents <= 0)
    throw fieldInvalid(path, `${path} must be a positive amount with two decimals, e.g. "12.50"`);
  return cents;
}

/**
 * The status the bank reports. The standard has no Expired: an enduring consent past its
 * ToDateTime stays Authorised, and payments under it are refused with Resource.Consent.Exceed.Dates.
 */
export function effectiveStatus(row: ConsentRow, _now: BankTime): ConsentStatus {
  return row.status as ConsentStatus;
}

/** An enduring consent past its ToDateTime. */
export function hasEnded(row: ConsentRow, now: BankTime): boolean {
  return row.kind === 'enduring' && row.to_at !== null && now > row.to_at;
}

/** The standard's Frequency.Period to the bank's calendar period. */
const periodOf: Record<EnduringConsentRequest['Data']['Consent']['Frequency']['Period'], Period> = {
  Daily: 'Day',
  Weekly: 'Week',
  Fortnightly: 'Fortnight',
  Monthly: 'Month',
  Annual: 'Year',
};

/** The creditor accounts an enduring consent allows payments to. */
export function consentCreditorAccounts(row: ConsentRow): string[] {
  if (row.kind !== 'enduring') return [row.creditor_account];
  const sent = JSON.parse(row.request_body) as { Consent?: { CreditorAccount?: Array<{ Identification: string }> } };
  return sent.Consent?.CreditorAccount?.map((account) => account.Identification) ?? [row.creditor_account];
}

type Created = { consent: ConsentRow; replayed: boolean };

export async function createDomesticConsent(
  deps: SandboxDeps,
  clientId: string,
  body: DomesticConsentRequest,
  key: string,
): Promise<Created> {
  const initiation = body.Data.Consent;
  const amountCents = centsOf(initiation.InstructedAmount.Amount, 'Data.Consent.InstructedAmount.Amount');
  const block = initiation.RemittanceInformation.Reference?.CreditorReference ?? {};
  return createConsent(deps, clientId, 'domestic-payment-consents', key, body, (id, now) => ({
    ...blankConsent(id, 'domestic', clientId, now),
    request_body: JSON.stringify(body.Data),
    amount_cents: amountCents,
    creditor_name: initiation.CreditorAccount.Name,
    creditor_account: initiation.CreditorAccount.Identification,
    particulars: block.Particulars ?? '',
    code: block.Code ?? '',
    reference: block.Reference ?? '',
  }));
}

export async function createEnduringConsent(
  deps: SandboxDeps,
  clientId: string,
  body: EnduringConsentRequest,
  key: string,
): Promise<Created> {
  const data = body.Data.Consent;
  const fromAt = Date.parse(data.FromDateTime);
  const toAt = data.ToDateTime ? Date.parse(data.ToDateTime) : null;
  if (toAt !== null && toAt <= fromAt)
    throw fieldInvalid('Data.Consent.ToDateTime', 'Data.Consent.ToDateTime must be after Data.Consent.FromDateTime');
  const maxPerPeriod = centsOf(data.Frequency.TotalAmount.Amount, 'Data.Consent.Frequency.TotalAmount.Amount');
  const maxPerPayment = centsOf(data.MaximumAmount.Amount, 'Data.Consent.MaximumAmount.Amount');
  const totalAmount = data.TotalAmount ? centsOf(data.TotalAmount.Amount, 'Data.Consent.TotalAmount.Amount') : null;
  const [creditor] = data.CreditorAccount;
  return createConsent(deps, clientId, 'enduring-payment-consents', key, body, (id, now) => ({
    ...blankConsent(id, 'enduring', clientId, now),
    request_body: JSON.stringify(body.Data),
    creditor_name: creditor.Name,
    creditor_account: creditor.Identification,
    from_at: fromAt,
    to_at: toAt,
    max_per_payment_cents: maxPerPayment,
    period: periodOf[data.Frequency.Period],
    max_per_period_cents: maxPerPeriod,
    max_count_per_period: data.Frequency.TotalCount ?? null,
    total_count: data.TotalCount ?? null,
    total_amount_cents: totalAmount,
  }));
}

function blankConsent(id: string, kind: ConsentKind, clientId: string, now: number): ConsentRow {
  return {
    id,
    kind,
    client_id: clientId,
    status: 'AwaitingAuthorisation',
    request_body: '{}',
    amount_cents: null,
    creditor_name: '',
    creditor_account: '',
    particulars: '',
    code: '',
    reference: '',
    from_at: null,
    to_at: null,
    max_per_payment_cents: null,
    period: null,
    max_per_period_cents: null,
    max_count_per_period: null,
    total_count: null,
    total_amount_cents: null,
    payer_id: null,
    decline_next: 0,
    decline_reason: null,
    hold_seconds: null,
    hold_status: null,
    used_count: 0,
    used_cents: 0,
    period_start: null,
    period_end: null,
    period_count: 0,
    period_cents: 0,
    created_at: now,
    updated_at: now,
    status_updated_at: now,
  };
}

async function createConsent(
  deps: SandboxDeps,
  clientId: string,
  endpoint: string,
  key: string,
  body: unknown,
  build: (id: string, now: number) => ConsentRow,
): Promise<Created> {
  const now = deps.clock.now();
  const id = `${endpoint === 'domestic-payment-consents' ? 'dpc' : 'epc'}-${ulid()}`;
  return transact(deps.db, async (trx) => {
    const held = await holdIdempotencyKey(trx, {
      clientId,
      endpoint,
      key,
      fingerprint: fingerprintOf(body),
      newId: id,
      now,
    });
    if (held.replayOf) return { consent: (await findConsent(trx, held.replayOf))!, replayed: true };
    const row = build(id, now);
    await insertConsent(trx, row);
    return { consent: row, replayed: false };
  });
}

/** A consent of this client, of this kind; anything else is an unknown id (400). */
export async function getConsentOf(
  deps: SandboxDeps,
  clientId: string,
  kind: ConsentKind,
  id: string,
): Promise<ConsentRow> {
  const row = await findConsent(deps.db, id);
  if (!row || row.client_id !== clientId || row.kind !== kind) throw unknownId('ConsentId', id);
  return row;
}

/** DELETE by the client, or revocation by the payer at the bank: either way the consent is Revoked. */
export async function revokeEnduringConsent(
  deps: SandboxDeps,
  id: string,
  clientId: string | null,
): Promise<ConsentRow> {
  return transact(deps.db, async (trx) => {
    const row = await findConsent(trx, id, { forUpdate: true });
    if (!row || (clientId !== null && row.client_id !== clientId)) throw unknownId('ConsentId', id);
    if (row.kind !== 'enduring') {
      if (clientId !== null) throw unknownId('ConsentId', id);
      throw new BankApiError(
        400,
        'Resource.Consent.InvalidStatus',
        'Only enduring consents can be revoked',
        'ConsentId',
      );
    }
    if (row.status === 'Revoked') return row;
    if (row.status !== 'Authorised' && row.status !== 'AwaitingAuthorisation') {
      throw new BankApiError(
        400,
        'Resource.Consent.InvalidStatus',
        `Consent status is ${row.status}; it cannot be revoked`,
        'ConsentId',
      );
    }
    const now = deps.clock.now();
    await updateConsent(trx, id, { status: 'Revoked', updated_at: now, status_updated_at: now });
    return { ...row, status: 'Revoked', updated_at: now, status_updated_at: now };
  });
}
