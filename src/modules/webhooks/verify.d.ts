/** `sha256=<lowercase hex HMAC-SHA256 of the raw body>`, keyed with the base64-decoded secret. */
export declare function signWebhookBody(rawBody: string | Uint8Array, secret: string): string;
/** True when `header` (X-Service-Signature) signs exactly these body bytes; constant time. */
export declare function verifyWebhookSignature(rawBody: string | Uint8Array, header: string | undefined | null, secret: string): boolean;
