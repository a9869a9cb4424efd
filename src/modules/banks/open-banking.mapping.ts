import { createHash } from 'node:crypto';
import { centsToDecimal } from '../../shared/money.ts';
import type { BankConsentStatus, BankFailure, BankPaymentOutcome, Creditor, Remittance } from './bank-connector.ts';
import {
  codeToReason,
  STATEMENT_NAME_MAX,
  type BankErrorBody,
  type DomesticInitiation,
  type RemittanceInformation,
} from '../../shared/open-banking.wire.ts';

// Pure translation between the connector's inputs and outcomes and the standard's bodies.

export function amountOf(cents: number) {
  return { Amount: centsToDecimal(cents), Currency: 'NZD' as const };
}

export function creditorAccount(creditor: Creditor) {
  return { SchemeName: 'BECSElectronicCredit' as const, Identification: creditor.accountNumber, Name: creditor.name };
}

/**
 * The name on the payer's statement: the standard allows 20 characters where merchant names may
 * have 70, so longer names are cut at 20 (docs/banks.md). The creditor account keeps the full name.
 */
export function statementName(name: string): string {
  return [...name.trim()].slice(0, STATEMENT_NAME_MAX).join('').trim();
}

/** The NZ statement block goes in the creditor reference fields (and the debtor's, for the payer's statement). */
export function remittanceInformation(creditor: Creditor, remittance: Remittance): RemittanceInformation {
  const block = { Particulars: remittance.particulars, Code: remittance.code, Reference: remittance.reference };
  return {
    Reference: { CreditorName: statementName(creditor.name), CreditorReference: block, DebtorReference: block },
  };
}

export function initiation(input: {
  amountCents: number;
  creditor: Creditor;
  remittance: Remittance;
  idempotencyKey: string;
}): DomesticInitiation {
  const id = (input.remittance.particulars || input.idempotencyKey).slice(0, 36);
  return {
    InstructionIdentification: id,
    EndToEndIdentification: id,
    InstructedAmount: amountOf(input.amountCents),
    CreditorAccount: creditorAccount(input.creditor),
    RemittanceInformation: remittanceInformation(input.creditor, input.remittance),
  };
}

/**
 * AcceptedSettlementCompleted -> successful, Rejected -> failed, anything else still pending. The
 * standard gives no reason for a rejection: 'declined', unless the sandbox bank named one.
 */
export function outcomeOf(
  status: unknown,
  sandboxReason?: string,
): { outcome: BankPaymentOutcome; failureReason?: string } | null {
  switch (status) {
    case 'AcceptedSettlementCompleted':
      return { outcome: 'successful' };
    case 'Rejected': {
      const code = sandboxReason && /^[A-Z][A-Za-z]{1,60}$/.test(sandboxReason) ? sandboxReason : null;
      return { outcome: 'failed', failureReason: code ? codeToReason(code) : 'declined' };
    }
    case 'Pending':
    case 'AcceptedSettlementInProcess':
      return { outcome: 'pending' };
    default:
      return null;
  }
}

const consentStatuses: BankConsentStatus[] = ['AwaitingAuthorisation', 'Authorised', 'Rejected', 'Consumed', 'Revoked'];
export function consentStatusOf(value: unknown): BankConsentStatus | null {
  return consentStatuses.includes(value as BankConsentStatus) ? (value as BankConsentStatus) : null;
}

const limitNames: Record<string, string> = {
  MaximumAmount: 'max_per_payment',
  Frequency: 'max_per_period',
  TotalCount: 'total_count',
  TotalAmount: 'total_amount',
  Dates: 'end_date',
};

/**
 * Why a consent is not usable, from the bank's message: the standard gives one code for every
 * status, so its words are read, the sandbox's ("status is Revoked") and a bank's own ("revoked by
 * the customer").
 */
function consentStatusReason(message: string): string {
  const named = /status is (\w+)/.exec(message)?.[1]?.toLowerCase() ?? message.toLowerCase();
  if (/\b(revoked|withdrawn|cancell?ed)\b/.test(named)) return 'consent_revoked';
  if (/\bexpired\b/.test(named)) return 'consent_expired';
  return 'consent_not_active';
}

/** A 4xx from the bank: nothing happened, and the reason says why in the service's words. */
export function refusalOf(status: number, body: Partial<BankErrorBody> | undefined): BankFailure {
  const first = body?.Errors?.[0];
  const code = first?.ErrorCode ?? body?.Code ?? `http_${status}`;
  const message = first?.Message ?? body?.Message ?? `The bank refused the request (${status})`;
  const failure: BankFailure = { ok: false, reason: 'bank_refused', message, bankCode: code, unknown: false };
  const exceeded = /^Resource\.Consent\.Exceed\.(\w+)$/.exec(code);
  if (exceeded) return { ...failure, reason: 'limit_exceeded', limit: limitNames[exceeded[1]] ?? exceeded[1] };
  if (code === 'Resource.Consent.InvalidStatus') return { ...failure, reason: consentStatusReason(message) };
  if (code === 'Resource.Consent.Mismatch') return { ...failure, reason: 'consent_mismatch' };
  if (code.startsWith('Field.')) return { ...failure, reason: 'invalid_request' };
  if (status === 401) return { ...failure, reason: 'unauthorised' };
  return failure;
}

/**
 * The standard caps x-idempotency-key at 40 characters. Longer keys (a merchant's own, say) are
 * replaced by a digest, the same for the same key, so retries still deduplicate at the bank.
 */
export function bankIdempotencyKey(key: string): string {
  if (key.length <= 40 && /^[\x21-\x7e]+$/.test(key)) return key;
  return createHash('sha256').update(key).digest('base64url').slice(0, 40);
}
