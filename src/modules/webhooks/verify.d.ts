/** `sha256=<lowercase hex HMAC-SHA256 of the raw body>`, keyed with the base64-decoded secret. */
export declare function signWebhookBody(rawBody: string | Uint8Array, secret: string): string;
/** The Standard Webhooks `webhook-signature` value: `v1,<base64 HMAC-SHA256 of "id.timestamp.body">`, keyed with the base64 secret (a `whsec_` prefix is dropped). */
export declare function signStandardWebhook(
  rawBody: string | Uint8Array,
  id: string,
  timestamp: number | string,
  secret: string,
): string;
/** True when `header` (X-Service-Signature, one signature or two comma-separated during a rotation) signs exactly these body bytes; constant time. */
export declare function verifyWebhookSignature(
  rawBody: string | Uint8Array,
  header: string | undefined | null,
  secret: string,
): boolean;
/** Seconds webhook-timestamp may be from now before a delivery counts as a replay (300). */
export declare const DEFAULT_TOLERANCE_SECONDS: number;
export type HeaderSource = Record<string, string | string[] | undefined> | { get(name: string): string | null };
/** True when the Standard Webhooks headers sign these body bytes with `secret` and the timestamp is recent. */
export declare function verifyStandardWebhook(
  rawBody: string | Uint8Array,
  headers: HeaderSource,
  secret: string,
  options?: { toleranceSeconds?: number; now?: number },
): boolean;
