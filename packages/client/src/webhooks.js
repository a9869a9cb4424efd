// Verifying and reading a delivery. verify.js is the service's own receiver helper (the same file
// as src/modules/webhooks/verify.js, which a test keeps identical).
import { verifyStandardWebhook, verifyWebhookSignature } from './verify.js';

export { DEFAULT_TOLERANCE_SECONDS, signWebhookBody, verifyStandardWebhook, verifyWebhookSignature } from './verify.js';

export class WebhookVerificationError extends Error {
  constructor(message) {
    super(message);
    this.name = 'WebhookVerificationError';
  }
}

function header(headers, name) {
  const value = typeof headers?.get === 'function' ? headers.get(name) : headers?.[name];
  return Array.isArray(value) ? value[0] : (value ?? undefined);
}

/**
 * Verifies a delivery on its raw body bytes and returns the event. With the Standard Webhooks
 * headers present it checks those (signature and a timestamp within the tolerance, so a replay is
 * refused); otherwise X-Service-Signature. Throws WebhookVerificationError when neither verifies.
 */
export function parseWebhook(rawBody, headers, secret, options = {}) {
  const standard = header(headers, 'webhook-signature') !== undefined;
  const valid = standard
    ? verifyStandardWebhook(rawBody, headers, secret, options)
    : verifyWebhookSignature(rawBody, header(headers, 'x-service-signature'), secret);
  if (!valid) {
    throw new WebhookVerificationError(
      standard
        ? 'webhook-signature does not match this body and secret, or webhook-timestamp is too far from now'
        : 'X-Service-Signature does not match this body and secret',
    );
  }
  const text = typeof rawBody === 'string' ? rawBody : new TextDecoder().decode(rawBody);
  return JSON.parse(text);
}
