import { hash, randomBytes, scrypt, timingSafeEqual } from 'node:crypto';
import { promisify } from 'node:util';
import pLimit from 'p-limit';

const scryptAsync = promisify(scrypt) as (password: string, salt: Buffer, keylen: number) => Promise<Buffer>;

/**
 * Password hashing is the one deliberately slow thing a caller without a key can set going, and it
 * runs on libuv's small thread pool, which file and DNS work share. So at most this many run at
 * once in a process, at most PASSWORD_HASHES_WAITING more wait, and beyond that the caller is told
 * to come back (PasswordHashingBusy) rather than queued behind a flood.
 */
export const PASSWORD_HASHES_AT_ONCE = 2;
export const PASSWORD_HASHES_WAITING = 8;
const passwordHashing = pLimit(PASSWORD_HASHES_AT_ONCE);

export class PasswordHashingBusy extends Error {
  constructor() {
    super('too many password checks at once');
  }
}

function boundedScrypt(password: string, salt: Buffer, keylen: number): Promise<Buffer> {
  if (passwordHashing.pendingCount >= PASSWORD_HASHES_WAITING) return Promise.reject(new PasswordHashingBusy());
  return passwordHashing(() => scryptAsync(password, salt, keylen));
}

export function sha256Hex(value: string): string {
  // The one-shot form: no Hash object per call (every API call hashes its key).
  return hash('sha256', value, 'hex');
}

/** URL-safe random secret with `bytes` of entropy. */
export function randomSecret(bytes = 24): string {
  return randomBytes(bytes).toString('base64url');
}

export function constantTimeEqual(a: string, b: string): boolean {
  const left = Buffer.from(a);
  const right = Buffer.from(b);
  return left.length === right.length && timingSafeEqual(left, right);
}

export async function hashPassword(password: string): Promise<string> {
  const salt = randomBytes(16);
  const hash = await boundedScrypt(password, salt, 32);
  return `scrypt$${salt.toString('base64')}$${hash.toString('base64')}`;
}

export async function verifyPassword(password: string, stored: string): Promise<boolean> {
  const [scheme, saltB64, hashB64] = stored.split('$');
  if (scheme !== 'scrypt' || !saltB64 || !hashB64) return false;
  const expected = Buffer.from(hashB64, 'base64');
  const actual = await boundedScrypt(password, Buffer.from(saltB64, 'base64'), expected.length);
  return timingSafeEqual(actual, expected);
}
