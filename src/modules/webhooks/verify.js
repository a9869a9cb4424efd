// Receiver's side, published as `tono/webhooks`. Plain JavaScript with node:crypto only, so a
// merchant's server can import it from node_modules without the rest of the service and without
// TypeScript (Node does not strip types inside node_modules). Types: verify.d.ts beside it.
import { createHmac, timingSafeEqual } from 'node:crypto';

const HEADER_SHAPE = /^sha256=([0-9a-f]{64})$/;

/** `sha256=<lowercase hex HMAC-SHA256 of the raw body>`, keyed with the base64-decoded secret. */
export function signWebhookBody(rawBody, secret) {
  return `sha256=${createHmac('sha256', Buffer.from(secret, 'base64')).update(rawBody).digest('hex')}`;
}

/**
 * True when `header` (the X-Service-Signature value) is the signature of exactly these body bytes.
 * Pass the body as received, before any JSON parsing: re-serialised JSON does not verify.
 * The comparison takes the same time wherever the first difference is.
 */
export function verifyWebhookSignature(rawBody, header, secret) {
  if (typeof header !== 'string') return false;
  const match = HEADER_SHAPE.exec(header.trim());
  if (!match || !secret) return false;
  const expected = createHmac('sha256', Buffer.from(secret, 'base64')).update(rawBody).digest();
  return timingSafeEqual(expected, Buffer.from(match[1], 'hex'));
}
