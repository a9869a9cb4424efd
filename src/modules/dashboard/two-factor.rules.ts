import { TOTP } from 'otpauth';

// The pure part of two-factor sign-in (docs/team.md): what a code looks like, which time step a
// right TOTP code belongs to, and how a recovery code is written and read back.

/** RFC 6238 as every authenticator app reads it by default: SHA-1, 6 digits, 30-second steps. */
export const TOTP_PERIOD_S = 30;
export const TOTP_DIGITS = 6;
/** A code of the step before or after now is accepted too: phone clocks drift, and typing takes time. */
export const TOTP_WINDOW = 1;
export const RECOVERY_CODE_COUNT = 10;
/** Characters of a recovery code: 10 of Crockford's base32, 50 bits, written as two groups of five. */
export const RECOVERY_CODE_LENGTH = 10;
const CROCKFORD = '0123456789abcdefghjkmnpqrstvwxyz';

export function totpOf(secretBase32: string, label: string): TOTP {
  return new TOTP({
    issuer: 'Tono',
    label,
    algorithm: 'SHA1',
    digits: TOTP_DIGITS,
    period: TOTP_PERIOD_S,
    secret: secretBase32,
  });
}

/** The time step a right code belongs to, or null when the code is not right within the window. */
export function acceptedStep(secretBase32: string, code: string, now: number): number | null {
  const delta = totpOf(secretBase32, 'check').validate({ token: code, timestamp: now, window: TOTP_WINDOW });
  if (delta === null) return null;
  return TOTP.counter({ period: TOTP_PERIOD_S, timestamp: now }) + delta;
}

/** A recovery code from RECOVERY_CODE_LENGTH random bytes (5 bits of each): `xxxxx-xxxxx`. */
export function recoveryCodeFromBytes(bytes: Uint8Array): string {
  if (bytes.length !== RECOVERY_CODE_LENGTH) throw new Error(`a recovery code takes ${RECOVERY_CODE_LENGTH} bytes`);
  const chars = [...bytes].map((byte) => CROCKFORD[byte & 31]).join('');
  return `${chars.slice(0, 5)}-${chars.slice(5)}`;
}

export type TypedCode = { kind: 'totp'; code: string } | { kind: 'recovery'; code: string };

/**
 * What the member typed, read leniently: spaces and dashes anywhere, any case, and the letters
 * people mistake for digits (o for 0, i and l for 1) in a recovery code. Null when it is neither.
 */
export function readCode(raw: unknown): TypedCode | null {
  if (typeof raw !== 'string' || raw.length > 40) return null;
  const squeezed = raw.replace(/[\s-]/g, '').toLowerCase();
  if (new RegExp(`^\\d{${TOTP_DIGITS}}$`).test(squeezed)) return { kind: 'totp', code: squeezed };
  const recovery = squeezed.replace(/o/g, '0').replace(/[il]/g, '1');
  if (recovery.length === RECOVERY_CODE_LENGTH && [...recovery].every((c) => CROCKFORD.includes(c)))
    return { kind: 'recovery', code: `${recovery.slice(0, 5)}-${recovery.slice(5)}` };
  return null;
}
