import { randomInt } from 'node:crypto';
import { MAX_PAYMENT_CENTS, displayAmount, parseDecimalCents } from '../../shared/money.ts';
import type { Mode } from '../../shared/mode.ts';
import { mayResendUnderKey } from '../banks/bank-connector.ts';

// The rules of one-off payments (docs/checkout.md) as plain functions.

export const PaymentStatus = ['awaiting-consent', 'successful', 'failed', 'cancelled', 'unconfirmed'] as const;
export type PaymentStatus = (typeof PaymentStatus)[number];
export type FinalStatus = Exclude<PaymentStatus, 'awaiting-consent'>;

/** The code field on every statement line: tells payers how they paid. */
export const PCR_CODE = 'TONO';
/** Where test-mode money goes instead of the merchant's account (a valid NZ number, never a real customer's). */
export const TEST_ACCOUNT = { name: 'Tono test account', accountNumber: '38-9000-0000001-00' } as const;
/** Test mode moves this much, whatever was asked for. */
export const TEST_SETTLED_CENTS = 1;
/** In test mode a payment of this amount fails at the callback (docs/api-conventions.md, "Test mode and the test clock"). */
export const TEST_FAILING_CENTS = 6780;
/** awaiting-consent for longer than this is abandoned. */
export const ABANDON_AFTER_MS = 30 * 60_000;

const PARTICULARS_ALPHABET = 'ABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789';
export const PARTICULARS_PATTERN = /^V-[A-Z0-9]{6}$/;

export function newParticulars(random: (max: number) => number = randomInt): string {
  let out = 'V-';
  for (let i = 0; i < 6; i += 1) out += PARTICULARS_ALPHABET[random(PARTICULARS_ALPHABET.length)];
  return out;
}

export function settledCents(mode: Mode, amountCents: number): number {
  return mode === 'test' ? TEST_SETTLED_CENTS : amountCents;
}

export function failsAtCallback(mode: Mode, amountCents: number): boolean {
  return mode === 'test' && amountCents === TEST_FAILING_CENTS;
}

export function isFinal(status: string): boolean {
  return status === 'successful' || status === 'failed' || status === 'cancelled';
}

/**
 * The bank's answer about a payment, as an operator records it after asking the bank
 * (docs/configuration.md, "Payments the bank never answered"): made (with the bank's id for it, when
 * the bank gave one), or not made, with a short reason.
 */
export type BankWord = { status: 'successful'; bankPaymentId: string | null } | { status: 'failed'; reason: string };

/** A reason an operator gives for a payment the bank did not make: snake_case, as the bank's own reasons are. */
export const BANK_WORD_REASON = /^[a-z][a-z_]{0,39}$/;

/**
 * Whether a payment waits for the bank's word: unconfirmed, never named by the bank, and sent too
 * long ago to be sent again under its key. The service then stops asking, since a bank may take
 * the key for a new payment after 24 hours; only someone who asks the bank can settle it.
 */
export function waitsForBankWord(
  payment: { status: string; bank_payment_id: string | null; submitted_at: number | null; created_at: number },
  now: number,
): boolean {
  return (
    payment.status === 'unconfirmed' &&
    payment.bank_payment_id === null &&
    !mayResendUnderKey(payment.submitted_at ?? payment.created_at, now)
  );
}

/** What a request needs for the page to take an amount: fixed, or the payer's within bounds. */
export type AmountRule = { fixedCents: number | null; minCents: number | null; maxCents: number | null };

export type AmountCheck = { ok: true; cents: number } | { ok: false; message: string };

/** The bounds the payer sees and the server enforces for a dynamic amount. */
export function boundsOf(rule: AmountRule): { min: number; max: number } {
  return { min: rule.minCents ?? 1, max: Math.min(rule.maxCents ?? MAX_PAYMENT_CENTS, MAX_PAYMENT_CENTS) };
}

/** The amount of one payment: the fixed amount, or the payer's choice within the request's bounds and the 5000.00 cap. */
export function paymentAmount(rule: AmountRule, chosenCents: number | null): AmountCheck {
  if (rule.fixedCents !== null) {
    if (rule.fixedCents > MAX_PAYMENT_CENTS)
      return { ok: false, message: `A payment can be at most ${displayAmount(MAX_PAYMENT_CENTS)}` };
    return { ok: true, cents: rule.fixedCents };
  }
  if (chosenCents === null) return { ok: false, message: 'Enter an amount' };
  const { min, max } = boundsOf(rule);
  if (chosenCents < min) return { ok: false, message: `The amount must be at least ${displayAmount(min)}` };
  if (chosenCents > max) return { ok: false, message: `The amount must be at most ${displayAmount(max)}` };
  return { ok: true, cents: chosenCents };
}

/**
 * A payer-typed amount: "12", "12.5", "$12.50", "1,200.00", "7 NZD"; null when it is not a plain NZD
 * amount. Read by the same rule as a bank statement's amounts (parseDecimalCents), so a comma only
 * ever separates thousands: "12,50" is refused, not read as 1,250.00. Never signed: a payer pays.
 */
export function parsePayerAmount(input: string): number | null {
  const amount = input.trim().replace(/\s*NZD$/i, '');
  if (/^[+-]/.test(amount)) return null;
  return parseDecimalCents(amount);
}

/** The request facts that decide whether it can take a new payment now. */
export type PayableFacts = { status: string; expires_at: number | null };

/** The request's effective status at `now`: an active request past its expiry is expired even before the job runs. */
export function effectiveStatus(request: PayableFacts, now: number): string {
  if (request.status === 'active' && request.expires_at !== null && request.expires_at <= now) return 'expired';
  return request.status;
}

export type DetailRequirements = {
  require_customer_basic_info: number;
  require_customer_phone: number;
  require_customer_address: number;
};

export type GivenDetails = {
  email: string | null;
  first_name: string | null;
  last_name: string | null;
  phone: string | null;
  address1: string;
  city: string;
  postcode: string;
};

/** Fields the request requires that the details leave empty, in form order. */
export function missingDetails(request: DetailRequirements, details: GivenDetails | null): string[] {
  const given = (value: string | null | undefined) => value !== null && value !== undefined && value.trim() !== '';
  const missing: string[] = [];
  if (request.require_customer_basic_info) {
    if (!given(details?.email)) missing.push('email');
    if (!given(details?.first_name)) missing.push('first_name');
    if (!given(details?.last_name)) missing.push('last_name');
  }
  if (request.require_customer_phone && !given(details?.phone)) missing.push('phone');
  if (request.require_customer_address) {
    if (!given(details?.address1)) missing.push('address1');
    if (!given(details?.city)) missing.push('city');
    if (!given(details?.postcode)) missing.push('postcode');
  }
  return missing;
}
