import { test } from 'node:test';
import assert from 'node:assert/strict';
import fc from 'fast-check';
import { TOTP } from 'otpauth';
import {
  acceptedStep,
  readCode,
  RECOVERY_CODE_LENGTH,
  recoveryCodeFromBytes,
  TOTP_PERIOD_S,
  totpOf,
} from './two-factor.rules.ts';

const bytes = fc.uint8Array({ minLength: RECOVERY_CODE_LENGTH, maxLength: RECOVERY_CODE_LENGTH });

test('a recovery code reads back as itself, however it is typed', () => {
  fc.assert(
    fc.property(bytes, fc.boolean(), fc.boolean(), (raw, upper, spaced) => {
      const code = recoveryCodeFromBytes(raw);
      assert.match(code, /^[0-9a-hjkmnp-tv-z]{5}-[0-9a-hjkmnp-tv-z]{5}$/);
      let typed = upper ? code.toUpperCase() : code;
      if (spaced) typed = ` ${typed.replace('-', ' ')} `;
      assert.deepEqual(readCode(typed), { kind: 'recovery', code });
    }),
  );
});

test('six digits are a TOTP code; anything else of the wrong shape is neither', () => {
  fc.assert(
    fc.property(fc.integer({ min: 0, max: 999_999 }), (n) => {
      const code = String(n).padStart(6, '0');
      assert.deepEqual(readCode(`${code.slice(0, 3)} ${code.slice(3)}`), { kind: 'totp', code });
    }),
  );
  fc.assert(
    fc.property(fc.string({ maxLength: 50 }), (raw) => {
      const read = readCode(raw);
      if (read === null) return;
      if (read.kind === 'totp') assert.match(read.code, /^\d{6}$/);
      else assert.match(read.code, /^[0-9a-z]{5}-[0-9a-z]{5}$/);
    }),
  );
  for (const bad of [undefined, 12345, '', '12345', '1234567', 'abc', 'x'.repeat(41), 'uuuuu-uuuuu'])
    assert.equal(readCode(bad), null, String(bad));
});

test('a right code names its own time step, one step either side of now; a wrong one names none', () => {
  const secret = 'JBSWY3DPEHPK3PXPJBSWY3DPEHPK3PXP';
  const totp = totpOf(secret, 'test');
  fc.assert(
    fc.property(fc.integer({ min: 1_000_000, max: 4_000_000_000 }), fc.integer({ min: -3, max: 3 }), (s, offset) => {
      const now = s * 1000;
      const step = TOTP.counter({ period: TOTP_PERIOD_S, timestamp: now });
      const code = totp.generate({ timestamp: now + offset * TOTP_PERIOD_S * 1000 });
      const accepted = acceptedStep(secret, code, now);
      // A code of a step more than one away can only match by chance, at another step.
      if (Math.abs(offset) <= 1) assert.equal(accepted, step + offset);
      else assert.ok(accepted === null || accepted !== step + offset);
    }),
    { numRuns: 200 },
  );
});
