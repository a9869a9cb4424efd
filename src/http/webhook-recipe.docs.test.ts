import { test } from 'node:test';
import assert from 'node:assert/strict';
import crypto from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import { deliverySignatureHeaders, encodeKeyring, rotated } from '../modules/webhooks/signing.ts';
import { verifyWebhookSignature } from '../modules/webhooks/verify.js';

// docs/webhooks.md shows how to check X-Service-Signature by hand. Its code block runs here, as
// written, against the headers a delivery really carries: one signature, and the two of a rotated
// secret (`sha256=<new>, sha256=<old>`), whose length a plain crypto.timingSafeEqual of the whole
// header trips over with a RangeError.

const DOC = path.resolve(import.meta.dirname, '../../docs/webhooks.md');

type Verify = (rawBody: Buffer | string, header: unknown, secret: string) => boolean;

function recipeOfTheDocs(): Verify {
  const blocks = [...fs.readFileSync(DOC, 'utf8').matchAll(/```js\n([\s\S]*?)```/g)].map((m) => m[1]!);
  const recipe = blocks.find((block) => block.includes('function verifyByHand('));
  assert.ok(recipe, 'docs/webhooks.md has the by-hand check, function verifyByHand');
  // Its import is node:crypto, given here; its last line is the call in a receiver, not needed.
  const body = recipe
    .split('\n')
    .filter((line) => !line.startsWith('import ') && !line.startsWith('if (!verifyByHand('))
    .join('\n');
  return new Function('crypto', `${body}\nreturn verifyByHand;`)(crypto) as Verify;
}

const secret = () => crypto.randomBytes(32).toString('base64');

test("docs/webhooks.md's by-hand signature check accepts either signature after a rotation, and refuses without throwing", () => {
  const verifyByHand = recipeOfTheDocs();
  const body = JSON.stringify({ id: 'event_1', type: 'request.created', data: { id: 'request_1' } });
  const raw = Buffer.from(body);
  const now = Date.now();
  const old = secret();
  const fresh = secret();
  const single = deliverySignatureHeaders(body, encodeKeyring({ current: old }), 'event_1', now)[
    'x-service-signature'
  ]!;
  const twoSigned = deliverySignatureHeaders(
    body,
    encodeKeyring(rotated({ current: old }, fresh, now)),
    'event_1',
    now,
  )['x-service-signature']!;
  assert.match(twoSigned, /^sha256=[0-9a-f]{64}, sha256=[0-9a-f]{64}$/);

  const cases: Array<[string, Buffer, unknown, string, boolean]> = [
    ['one signature', raw, single, old, true],
    ['rotated, receiver on the new secret', raw, twoSigned, fresh, true],
    ['rotated, receiver still on the old secret', raw, twoSigned, old, true],
    ['rotated, another secret', raw, twoSigned, secret(), false],
    ['one signature, another secret', raw, single, secret(), false],
    ['a changed body', Buffer.from(`${body} `), twoSigned, fresh, false],
    ['a short forged header', raw, 'sha256=00', fresh, false],
    ['no header', raw, undefined, fresh, false],
    ['an empty header', raw, '', fresh, false],
  ];
  for (const [what, rawBody, header, key, valid] of cases) {
    assert.equal(verifyByHand(rawBody, header, key), valid, what);
    // the easy way the docs point to agrees
    assert.equal(verifyWebhookSignature(rawBody, header as string, key), valid, `verifyWebhookSignature: ${what}`);
  }
  // what the docs showed before: the whole header into timingSafeEqual
  const expected = Buffer.from(
    `sha256=${crypto.createHmac('sha256', Buffer.from(fresh, 'base64')).update(raw).digest('hex')}`,
  );
  assert.throws(() => crypto.timingSafeEqual(Buffer.from(twoSigned), expected), RangeError);
});
