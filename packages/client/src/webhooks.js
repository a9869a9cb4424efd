// Verifying and reading a delivery. verify.js is the one implementation of signing and checking,
// which the service itself signs with (it re-exports it as `tono/webhooks`).
import { signatureHeaderProblem, verifyStandardWebhook, verifyWebhookSignature } from './verify.js';

export {
  DEFAULT_TOLERANCE_SECONDS,
  signStandardWebhook,
  signWebhookBody,
  verifyStandardWebhook,
  verifyWebhookSignature,
} from './verify.js';

export class WebhookVerificationError extends Error {
  constructor(message) {
    super(message);
    this.name = 'WebhookVerificationError';
  }
}

/** A header's value as given: a fetch Headers' string or null, or a plain object's entry. */
function header(headers, name) {
  const value = typeof headers?.get === 'function' ? headers.get(name) : headers?.[name];
  return value ?? undefined;
}

const first = (value) => (Array.isArray(value) ? value[0] : value);

/**
 * Verifies a delivery on its raw body bytes and returns the event. With the Standard Webhooks
 * headers present it checks those (signature and a timestamp within the tolerance, so a replay is
 * refused); otherwise X-Service-Signature. Throws WebhookVerificationError, saying why, when neither
 * verifies: a header missing or not one string is named as such.
 */
export function parseWebhook(rawBody, headers, secret, options = {}) {
  const standard = first(header(headers, 'webhook-signature')) !== undefined;
  if (standard) {
    if (!verifyStandardWebhook(rawBody, headers, secret, options))
      throw new WebhookVerificationError(
        'webhook-signature does not match this body and secret, or webhook-timestamp is too far from now',
      );
  } else {
    const signature = header(headers, 'x-service-signature');
    const problem = signatureHeaderProblem(signature);
    if (problem !== null)
      throw new WebhookVerificationError(
        signature === undefined ? `${problem}, and so is webhook-signature: no signature to check` : problem,
      );
    if (!verifyWebhookSignature(rawBody, signature, secret))
      throw new WebhookVerificationError('X-Service-Signature does not match this body and secret');
  }
  const text = typeof rawBody === 'string' ? rawBody : new TextDecoder().decode(rawBody);
  return JSON.parse(text);
}
