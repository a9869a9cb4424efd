// Receiver's side: the one implementation of webhook signing and verification. The service signs
// its deliveries with it (src/modules/webhooks/signing.ts, through src/modules/webhooks/verify.js,
// which re-exports this file as `tono/webhooks` inside the checkout); merchants install it as
// `@tono/client/webhooks`. Plain JavaScript with node:crypto only, so a merchant's server can
// import it from node_modules without TypeScript (Node does not strip types inside node_modules).
// Types: verify.d.ts.
import { createHmac, createSecretKey, timingSafeEqual } from 'node:crypto';

const SIGNATURE_SHAPE = /^sha256=([0-9a-f]{64})$/;
const STANDARD_SHAPE = /^v1,([A-Za-z0-9+/]{43}=)$/;
/** How far webhook-timestamp may be from now, either way, before a delivery counts as a replay. */
export const DEFAULT_TOLERANCE_SECONDS = 5 * 60;

/**
 * The HMAC key: a base64 secret's bytes as a KeyObject. Given the bytes as a Buffer, createHmac
 * (Node 24) first tests whether they are a KeyObject or a CryptoKey, at about 8 µs a call.
 */
function hmacKey(base64Secret) {
  return createSecretKey(Buffer.from(base64Secret, 'base64'));
}

/** `sha256=<lowercase hex HMAC-SHA256 of the raw body>`, keyed with the base64-decoded secret. */
export function signWebhookBody(rawBody, secret) {
  return `sha256=${createHmac('sha256', hmacKey(secret)).update(rawBody).digest('hex')}`;
}

/** The Standard Webhooks HMAC-SHA256 of `id.timestamp.body`, keyed with the secret less its `whsec_` prefix, base64-decoded. */
function standardDigest(rawBody, id, timestamp, secret) {
  const key = hmacKey(secret.startsWith('whsec_') ? secret.slice(6) : secret);
  return createHmac('sha256', key).update(`${id}.${timestamp}.`).update(rawBody).digest();
}

/** The Standard Webhooks `webhook-signature` of one delivery: `v1,<base64 HMAC-SHA256 of "id.timestamp.body">`. */
export function signStandardWebhook(rawBody, id, timestamp, secret) {
  return `v1,${standardDigest(rawBody, id, timestamp, secret).toString('base64')}`;
}

function sameBytes(a, b) {
  return a.length === b.length && timingSafeEqual(a, b);
}

/**
 * Why `header` (the X-Service-Signature value as a framework gives it) cannot carry a signature,
 * or null when it is one string. Node and Fastify type a header as `string | string[] | undefined`:
 * Node joins a header sent twice into one string, so an array comes only from a headers object
 * built another way, and which of its values is the signature is not known.
 */
export function signatureHeaderProblem(header) {
  if (header === undefined || header === null || header === '') return 'X-Service-Signature is missing';
  if (Array.isArray(header))
    return `X-Service-Signature is an array of ${header.length} values, not one string: pass the header's value as received (req.headers['x-service-signature'])`;
  if (typeof header !== 'string') return `X-Service-Signature is a ${typeof header}, not a string`;
  return null;
}

/**
 * True when `header` (the X-Service-Signature value) holds a signature of exactly these body
 * bytes. During a secret rotation the header carries two, comma-separated; either may match.
 * Pass the body as received, before any JSON parsing: re-serialised JSON does not verify.
 * Each comparison takes the same time wherever the first difference is. A missing header, or one
 * that is not a single string (an array), is false, never an exception: signatureHeaderProblem
 * says why.
 */
export function verifyWebhookSignature(rawBody, header, secret) {
  if (signatureHeaderProblem(header) !== null || !secret) return false;
  const expected = createHmac('sha256', hmacKey(secret)).update(rawBody).digest();
  let valid = false;
  for (const part of header.split(',')) {
    const match = SIGNATURE_SHAPE.exec(part.trim());
    if (match && sameBytes(expected, Buffer.from(match[1], 'hex'))) valid = true;
  }
  return valid;
}

function headerOf(headers, name) {
  const value = typeof headers.get === 'function' ? headers.get(name) : (headers[name] ?? headers[name.toLowerCase()]);
  return Array.isArray(value) ? value[0] : (value ?? undefined);
}

/**
 * True when the Standard Webhooks headers (webhook-id, webhook-timestamp, webhook-signature) sign
 * these body bytes with `secret` (base64, with or without a `whsec_` prefix) and the timestamp is
 * within `toleranceSeconds` of `now` (a replayed delivery is refused). `headers` is Node's
 * IncomingHttpHeaders, a plain object, or a fetch Headers.
 */
export function verifyStandardWebhook(rawBody, headers, secret, options = {}) {
  if (!headers || !secret) return false;
  const id = headerOf(headers, 'webhook-id');
  const timestamp = headerOf(headers, 'webhook-timestamp');
  const signatures = headerOf(headers, 'webhook-signature');
  if (
    typeof id !== 'string' ||
    typeof timestamp !== 'string' ||
    typeof signatures !== 'string' ||
    !/^\d{1,12}$/.test(timestamp)
  )
    return false;
  const now = Math.floor((options.now ?? Date.now()) / 1000);
  if (Math.abs(now - Number(timestamp)) > (options.toleranceSeconds ?? DEFAULT_TOLERANCE_SECONDS)) return false;
  const expected = standardDigest(rawBody, id, timestamp, secret);
  let valid = false;
  for (const part of signatures.split(' ')) {
    const match = STANDARD_SHAPE.exec(part.trim());
    if (match && sameBytes(expected, Buffer.from(match[1], 'base64'))) valid = true;
  }
  return valid;
}
