import { test } from 'node:test';
import assert from 'node:assert/strict';
import { createHmac } from 'node:crypto';
import fc from 'fast-check';
// Imported by the package's own name, as a merchant's server would.
import { signWebhookBody, verifyWebhookSignature } from 'tono/webhooks';

test('tono/webhooks verifies exactly the documented recipe and nothing else', () => {
  fc.assert(
    fc.property(fc.uint8Array({ maxLength: 512 }), fc.uint8Array({ minLength: 32, maxLength: 32 }), (body, key) => {
      const secret = Buffer.from(key).toString('base64');
      const header = `sha256=${createHmac('sha256', key).update(body).digest('hex')}`;
      assert.equal(signWebhookBody(body, secret), header);
      assert.equal(verifyWebhookSignature(body, header, secret), true);
      assert.equal(verifyWebhookSignature(Buffer.concat([body, Buffer.from(' ')]), header, secret), false);
      assert.equal(verifyWebhookSignature(body, header.toUpperCase(), secret), false);
      assert.equal(verifyWebhookSignature(body, undefined, secret), false);
    }),
  );
});
