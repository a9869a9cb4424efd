import { randomFillSync } from 'node:crypto';
import { encodeTime, ulid as makeUlid } from 'ulid';

// ULIDs: 48 bits of time then 80 random bits, so ids sort by creation and cannot be guessed.
// The random characters come from the OS CSPRNG, drawn in blocks: the library's default source
// makes one crypto call per character, which showed up as the top cost of creating a request.
const pool = Buffer.alloc(4096);
let poolOffset = pool.length;
function cryptoRandom(): number {
  if (poolOffset + 2 > pool.length) {
    randomFillSync(pool);
    poolOffset = 0;
  }
  const value = pool.readUInt16BE(poolOffset);
  poolOffset += 2;
  return value / 65536;
}
/** A bare ULID (no prefix), for ids whose shape another system defines (the sandbox bank's). */
export const ulid = (): string => makeUlid(undefined, cryptoRandom);

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
  mail: 'mail',
  payerCode: 'payercode',
  webhook: 'webhook',
  key: 'key',
  job: 'job',
  delivery: 'delivery',
  attempt: 'attempt',
  charge: 'charge',
  refund: 'refund',
  refundAuthority: 'refundauth',
  member: 'mem',
  invitation: 'inv',
  passkey: 'passkey',
  audit: 'aud',
  statement: 'stmt',
  statementLine: 'stline',
  statementMatch: 'stmatch',
  receipt: 'receipt',
} as const;
export type IdKind = keyof typeof IdPrefix;

export function newId(kind: IdKind): string {
  return `${IdPrefix[kind]}_${ulid()}`;
}

/**
 * What a statement needs to make ids of `kind` in SQL, one a row (idInSql, src/store/db.ts): the
 * prefix with the time part of an id made at `time`, and 80 random bits that keep the rest of each
 * id unguessable.
 */
export function idSeed(kind: IdKind, time: number): { head: string; salt: string } {
  return { head: idPrefixAt(kind, time), salt: ulid().slice(10) };
}

/**
 * Every id of this kind made before `time` sorts below this string, and every id made at or after
 * it above: an id's first characters after its prefix are the millisecond it was made in.
 */
export function idPrefixAt(kind: IdKind, time: number): string {
  return `${IdPrefix[kind]}_${encodeTime(time, 10)}`;
}

/** The shape of an id of one kind (prefix and 26 ULID characters), for input checked before any lookup. */
export function idPattern(kind: IdKind): string {
  return `^${IdPrefix[kind]}_[0-9A-Z]{26}$`;
}

const idShapes = new Map<IdKind, RegExp>();
/** Whether `value` has the shape of an id of this kind. */
export function isIdOf(kind: IdKind, value: unknown): value is string {
  let shape = idShapes.get(kind);
  if (!shape) idShapes.set(kind, (shape = new RegExp(idPattern(kind))));
  return typeof value === 'string' && shape.test(value);
}

const idShape = /^[a-z]+_[0-9A-HJKMNP-TV-Z]{26}$/;
export function looksLikeId(kind: IdKind, value: string): boolean {
  return value.startsWith(`${IdPrefix[kind]}_`) && idShape.test(value);
}
