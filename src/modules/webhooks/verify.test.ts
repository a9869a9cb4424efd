import { test } from 'node:test';
import assert from 'node:assert/strict';
import { createHmac, randomBytes } from 'node:crypto';
import fs from 'node:fs';
import type { IncomingMessage } from 'node:http';
import path from 'node:path';
import type { FastifyRequest } from 'fastify';
import fc from 'fast-check';
// Imported by the package's own name, as a merchant's server would.
import * as merchantWebhooks from '@tono/client/webhooks';
import { parseWebhook, signStandardWebhook, WebhookVerificationError } from '@tono/client/webhooks';
import { signWebhookBody, verifyStandardWebhook, verifyWebhookSignature } from 'tono/webhooks';

const root = path.resolve(import.meta.dirname, '../../..');

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

// Type-level: `npm run typecheck` compiles this file. These are the lines of docs/webhooks.md as a
// TypeScript merchant writes them, with the header as Node and Fastify type it
// (`string | string[] | undefined`); they do not compile unless the declarations take that type.
export function nodeReceiver(req: IncomingMessage, raw: Buffer, secret: string): boolean {
  return (
    verifyWebhookSignature(raw, req.headers['x-service-signature'], secret) &&
    merchantWebhooks.verifyWebhookSignature(raw, req.headers['x-service-signature'], secret) &&
    verifyStandardWebhook(raw, req.headers, secret)
  );
}
export function fastifyReceiver(request: FastifyRequest<{ Body: Buffer }>, secret: string): boolean {
  return (
    verifyWebhookSignature(request.body, request.headers['x-service-signature'], secret) &&
    merchantWebhooks.verifyStandardWebhook(request.body, request.headers, secret)
  );
}
export function fetchReceiver(request: Request, raw: string, secret: string): boolean {
  return verifyWebhookSignature(raw, request.headers.get('x-service-signature'), secret);
}

test('a missing header or an array fails verification, with the reason, and never throws', () => {
  const secret = randomBytes(32).toString('base64');
  const raw = Buffer.from(JSON.stringify({ id: 'event_1', type: 'request.created', data: { id: 'request_1' } }));
  const signature = signWebhookBody(raw, secret);
  assert.equal(verifyWebhookSignature(raw, signature, secret), true);
  for (const header of [undefined, null, '', [], [signature], [signature, signature]]) {
    assert.equal(verifyWebhookSignature(raw, header, secret), false, `${JSON.stringify(header)} is refused`);
    assert.equal(
      merchantWebhooks.verifyWebhookSignature(raw, header, secret),
      false,
      `@tono/client: ${JSON.stringify(header)}`,
    );
  }

  // parseWebhook says which it was
  const refusal = (headers: Record<string, string | string[] | undefined>) => {
    try {
      parseWebhook(raw, headers, secret);
    } catch (error) {
      assert.ok(error instanceof WebhookVerificationError, `${error}`);
      return error.message;
    }
    assert.fail('verified');
  };
  assert.equal(refusal({}), 'X-Service-Signature is missing, and so is webhook-signature: no signature to check');
  assert.equal(
    refusal({ 'x-service-signature': undefined, 'content-type': 'application/json' }),
    'X-Service-Signature is missing, and so is webhook-signature: no signature to check',
  );
  assert.match(
    refusal({ 'x-service-signature': [signature] }),
    /^X-Service-Signature is an array of 1 values, not one string/,
  );
  assert.match(refusal({ 'x-service-signature': [signature, signature] }), /is an array of 2 values/);
  assert.equal(refusal({ 'x-service-signature': '' }), 'X-Service-Signature is missing');
  assert.equal(
    refusal({ 'x-service-signature': signWebhookBody(raw, randomBytes(32).toString('base64')) }),
    'X-Service-Signature does not match this body and secret',
  );
  assert.equal(parseWebhook(raw, { 'x-service-signature': signature }, secret).id, 'event_1');
  assert.equal(parseWebhook(raw, new Headers({ 'x-service-signature': signature }), secret).id, 'event_1');
});

test('signStandardWebhook makes fixtures that verify as deliveries do', () => {
  const secret = randomBytes(32).toString('base64');
  const raw = '{"id":"event_fixture"}';
  const now = Date.now();
  const timestamp = Math.floor(now / 1000);
  const headers = {
    'webhook-id': 'event_fixture',
    'webhook-timestamp': String(timestamp),
    'webhook-signature': signStandardWebhook(raw, 'event_fixture', timestamp, secret),
  };
  assert.match(headers['webhook-signature'], /^v1,[A-Za-z0-9+/]{43}=$/);
  assert.equal(verifyStandardWebhook(raw, headers, secret, { now }), true);
  assert.equal(verifyStandardWebhook(raw, headers, `whsec_${secret}`, { now }), true);
  assert.equal(verifyStandardWebhook(`${raw} `, headers, secret, { now }), false);
  assert.equal(parseWebhook(raw, headers, secret, { now }).id, 'event_fixture');
});

test('what docs/webhooks.md and the READMEs import is exported by @tono/client/webhooks, the installable package', () => {
  const exported = new Set(Object.keys(merchantWebhooks));
  for (const file of ['docs/webhooks.md', 'README.md', 'packages/client/README.md']) {
    const text = fs.readFileSync(path.join(root, file), 'utf8');
    // the root package is private: a merchant cannot install `tono`
    assert.doesNotMatch(text, /['`]tono\/webhooks['`]/, `${file} points merchants at tono/webhooks`);
    for (const [, names, from] of text.matchAll(/import\s*\{([^}]*)\}\s*from\s*'([^']+)'/g)) {
      if (!/tono/.test(from!) || !from!.includes('webhooks')) continue;
      assert.equal(from, '@tono/client/webhooks', `${file} imports from ${from}`);
      for (const name of names!.split(',').map((n) => n.trim().replace(/^type\s+/, ''))) {
        if (name && !/^[A-Z]\w*Event\w*$|^EventOf$/.test(name))
          assert.ok(exported.has(name), `${file} imports ${name}, which @tono/client/webhooks does not export`);
      }
    }
    // and every function of the family it names, in prose or in a comment
    const local = new Set([...text.matchAll(/function (\w+)\(/g)].map((m) => m[1]!));
    for (const [name] of text.matchAll(/\b(?:verify|sign)[A-Z]\w*|\bparseWebhook\b|\bWebhookVerificationError\b/g))
      if (!local.has(name))
        assert.ok(exported.has(name), `${file} names ${name}, which @tono/client/webhooks does not export`);
  }
});
