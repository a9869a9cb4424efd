import { test } from 'node:test';
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import fc from 'fast-check';
import { createSecretBox, isSealed } from './secret-box.ts';

const box = createSecretBox(randomBytes(32));

test('sealing then opening gives back any text; the sealed form never contains it', () => {
  fc.assert(
    fc.property(fc.string({ unit: 'binary', maxLength: 200 }), (plain) => {
      const sealed = box.seal(plain);
      assert.ok(isSealed(sealed));
      assert.match(sealed, /^sealed:v1:[A-Za-z0-9_-]+$/);
      if (plain.length >= 4) assert.ok(!sealed.includes(plain));
      assert.equal(box.open(sealed), plain);
    }),
  );
});

test('the same text seals differently each time', () => {
  assert.notEqual(box.seal('whsec'), box.seal('whsec'));
});

test('another key, a changed byte, a truncated or unsealed value cannot be opened', () => {
  const sealed = box.seal('rct_secret_token_value');
  assert.throws(() => createSecretBox(randomBytes(32)).open(sealed));
  fc.assert(
    fc.property(fc.nat(), fc.integer({ min: 1, max: 255 }), (at, flip) => {
      const raw = Buffer.from(sealed.slice('sealed:v1:'.length), 'base64url');
      raw[at % raw.length] ^= flip;
      assert.throws(() => box.open(`sealed:v1:${raw.toString('base64url')}`));
    }),
  );
  assert.throws(() => box.open('sealed:v1:AAAA'), /truncated/);
  assert.throws(() => box.open('rct_plain'), /not a sealed value/);
  assert.throws(() => createSecretBox(randomBytes(16)), /32 bytes/);
});
