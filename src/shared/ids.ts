import { ulid } from 'ulid';

// ULIDs: 48 bits of time then 80 random bits, so ids sort by creation and cannot be guessed.
export const IdPrefix = {
  request: 'request',
  payment: 'payment',
  bankAccount: 'bankaccount',
  user: 'user',
  customer: 'customer',
  custInfo: 'custinfo',
  subscription: 'subscription',
  recurring: 'recurring',
  event: 'event',
  webhook: 'webhook',
  key: 'key',
  job: 'job',
  delivery: 'delivery',
  attempt: 'attempt',
  charge: 'charge',
} as const;
export type IdKind = keyof typeof IdPrefix;

export function newId(kind: IdKind): string {
  return `${IdPrefix[kind]}_${ulid()}`;
}

const idShape = /^[a-z]+_[0-9A-HJKMNP-TV-Z]{26}$/;
export function looksLikeId(kind: IdKind, value: string): boolean {
  return value.startsWith(IdPrefix[kind] + '_') && idShape.test(value);
}
