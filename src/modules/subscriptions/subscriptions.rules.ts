import type { EnduringPeriod } from '../banks/bank-connector.ts';
import { displayAmount } from '../../shared/money.ts';
import {
  isComplete,
  makeAnchor,
  retriesForSlot,
  slotDate,
  slotTime,
  type Schedule,
  type ScheduleOptions,
  type SubscriptionPeriod,
} from './schedule.ts';

// The subscription's rules as plain functions over its stored parts: which transitions are allowed,
// what happens after a charge succeeds or fails, and the enduring consent that fits the plan.

export const SubscriptionStatus = ['active', 'paused', 'cancelled', 'completed'] as const;
export type SubscriptionStatus = (typeof SubscriptionStatus)[number];

export const CancelledBy = ['merchant', 'payer', 'bank'] as const;
export type CancelledBy = (typeof CancelledBy)[number];

export type StoredSchedule = {
  period: string;
  zone: string;
  anchor_date: string;
  anchor_time: string;
  first_slot: number;
  first_charge_at: number;
  end_at: number | null;
  total_count: number | null;
};

/** The schedule.ts Schedule a subscription row stores in parts. */
export function scheduleOf(row: StoredSchedule): Schedule {
  const period = row.period as SubscriptionPeriod;
  return {
    zone: row.zone,
    anchor: makeAnchor(period, row.anchor_date, row.anchor_time),
    firstSlot: row.first_slot,
    firstChargeAt: row.first_charge_at,
    end_at: row.end_at,
    total_count: row.total_count,
  };
}

/** The row's parts of a schedule (after authorisation or a resume). */
export function storedParts(schedule: Schedule) {
  return {
    zone: schedule.zone,
    anchor_date: schedule.anchor.localDate,
    anchor_time: schedule.anchor.localTime,
    first_slot: schedule.firstSlot,
    first_charge_at: schedule.firstChargeAt,
  };
}

export const transitions = {
  pause: ['active'],
  resume: ['paused'],
  cancel: ['active', 'paused'],
} as const satisfies Record<string, readonly SubscriptionStatus[]>;

export function allows(action: keyof typeof transitions, status: string): boolean {
  return (transitions[action] as readonly string[]).includes(status);
}

export type Next = { kind: 'charge'; slot: number; slotDate: string; at: number } | { kind: 'complete' };

/** What follows a settled slot (charged or skipped): the next slot, or completion. */
export function nextAfterSlot(schedule: Schedule, successfulCount: number, slot: number): Next {
  const next = slot + 1;
  if (isComplete(schedule, successfulCount, next)) return { kind: 'complete' };
  return { kind: 'charge', slot: next, slotDate: slotDate(schedule.anchor, next), at: slotTime(schedule, next) };
}

/** The first slot a fresh (or resumed) schedule charges, or completion when there is none. */
export function firstCharge(schedule: Schedule, successfulCount: number): Next {
  const slot = schedule.firstSlot;
  if (isComplete(schedule, successfulCount, slot)) return { kind: 'complete' };
  return { kind: 'charge', slot, slotDate: slotDate(schedule.anchor, slot), at: slotTime(schedule, slot) };
}

/** After attempt number `attempts` (1 = the scheduled charge) of a slot failed: the next retry's time, or null when retries are exhausted. */
export function retryAfterFailure(schedule: Schedule, slot: number, attempts: number): number | null {
  const retries = retriesForSlot(schedule, slot);
  return retries[attempts - 1] ?? null;
}

// The standard has no quarter. A quarterly plan asks for a monthly limit of the same size: the bank
// never lets more than it through in any month, and the schedule here charges once a quarter
// (docs/banks.md).
const bankPeriod: Record<SubscriptionPeriod, EnduringPeriod> = {
  weekly: 'Weekly',
  fortnightly: 'Fortnightly',
  monthly: 'Monthly',
  quarterly: 'Monthly',
  annually: 'Annual',
};

export type ConsentPlan = {
  period: EnduringPeriod;
  maxPerPaymentCents: number;
  maxPerPeriodCents: number;
  maxCountPerPeriod: number;
  totalCount: number | null;
  fromAt: number;
  toAt: number | null;
};

/**
 * The enduring consent that fits a plan: each payment at most the amount, until end_date, and two
 * payments a calendar period: a retry late in one period followed by the next slot early in the
 * next (or a past start date charged at once and then on its day) puts two charges in one period,
 * which the bank's own period check must not refuse.
 */
export function consentPlan(options: ScheduleOptions & { amount_cents: number }, now: number): ConsentPlan {
  const perPeriod = 2;
  return {
    period: bankPeriod[options.period],
    maxPerPaymentCents: options.amount_cents,
    maxPerPeriodCents: options.amount_cents * perPeriod,
    maxCountPerPeriod: perPeriod,
    totalCount: options.total_count,
    fromAt: now,
    toAt: options.end_at,
  };
}

const bankPeriodWords: Record<EnduringPeriod, string> = {
  Daily: 'a day',
  Weekly: 'a week',
  Fortnightly: 'a fortnight',
  Monthly: 'a month',
  Annual: 'a year',
};

const planPeriodWords: Record<SubscriptionPeriod, string> = {
  weekly: 'a week',
  fortnightly: 'a fortnight',
  monthly: 'a month',
  quarterly: 'a quarter',
  annually: 'a year',
};

/**
 * Why the bank asks for more than the plan, with the figures the bank's page will show: the
 * consent's room for a retry (consentPlan), said before the payer leaves for the bank.
 */
export function bankLimitsSentence(options: ScheduleOptions & { amount_cents: number }): string {
  const plan = consentPlan(options, 0);
  return `Your bank will ask you to allow up to ${displayAmount(plan.maxPerPeriodCents)} ${bankPeriodWords[plan.period]}, at most ${plan.maxCountPerPeriod} payments, although the plan charges ${displayAmount(options.amount_cents)} ${planPeriodWords[options.period as SubscriptionPeriod]}: the room is for a retry when a charge fails, and you are never charged more than the plan says.`;
}

/** Bank failures that mean the payer withdrew the consent at their bank. */
export function isConsentGone(failure: { reason: string; bankCode?: string }): boolean {
  return (
    failure.reason === 'consent_revoked' ||
    failure.reason === 'consent_expired' ||
    /Consent\.(Revoked|InvalidStatus)|InvalidStatus/i.test(failure.bankCode ?? '')
  );
}
