/**
 * A header's value as Node's `IncomingHttpHeaders`, Fastify's `request.headers` and Express's
 * `req.headers` type it. Only a single string can carry a signature: a missing header, or an array
 * (a headers object built some other way), fails verification.
 */
export type HeaderValue = string | string[] | null | undefined;
/** `sha256=<lowercase hex HMAC-SHA256 of the raw body>`, keyed with the base64-decoded secret. */
export declare function signWebhookBody(rawBody: string | Uint8Array, secret: string): string;
/** The Standard Webhooks `webhook-signature` value: `v1,<base64 HMAC-SHA256 of "id.timestamp.body">`, keyed with the base64 secret (a `whsec_` prefix is dropped). */
export declare function signStandardWebhook(
  rawBody: string | Uint8Array,
  id: string,
  timestamp: number | string,
  secret: string,
): string;
/**
 * True when `header` (X-Service-Signature, one signature or two comma-separated during a rotation)
 * signs exactly these body bytes; constant time. Pass `req.headers['x-service-signature']` as it
 * is: a missing header or an array is false, never an exception (parseWebhook says which).
 */
export declare function verifyWebhookSignature(
  rawBody: string | Uint8Array,
  header: HeaderValue,
  secret: string,
): boolean;
/** Seconds webhook-timestamp may be from now before a delivery counts as a replay (300). */
export declare const DEFAULT_TOLERANCE_SECONDS: number;
/** Node's `IncomingHttpHeaders`, Fastify's and Express's `headers`, a plain object, or a fetch `Headers`. */
export type HeaderSource = Record<string, HeaderValue> | { get(name: string): string | null };
/** True when the Standard Webhooks headers sign these body bytes with `secret` and the timestamp is recent. */
export declare function verifyStandardWebhook(
  rawBody: string | Uint8Array,
  headers: HeaderSource,
  secret: string,
  options?: { toleranceSeconds?: number; now?: number },
): boolean;
/** Why a header value cannot carry a signature (missing, an array), or null when it is one string. */
export declare function signatureHeaderProblem(header: unknown): string | null;
