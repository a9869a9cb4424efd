import type { webhooks } from './schema.js';
import type { HeaderSource } from './verify.js';

export {
  DEFAULT_TOLERANCE_SECONDS,
  signStandardWebhook,
  signWebhookBody,
  verifyStandardWebhook,
  verifyWebhookSignature,
  type HeaderSource,
  type HeaderValue,
} from './verify.js';

/** Every event Tono sends, as a union discriminated by `type`. */
export type TonoEvent = {
  [Type in keyof webhooks]: NonNullable<webhooks[Type]['post']['requestBody']>['content']['application/json'];
}[keyof webhooks];
export type TonoEventType = TonoEvent['type'];
/** The event of one type: `EventOf<'payment.status_updated'>['data']['status']`. */
export type EventOf<Type extends TonoEventType> = Extract<TonoEvent, { type: Type }>;

export declare class WebhookVerificationError extends Error {}

/**
 * Verifies a delivery on its raw body bytes and returns the typed event; throws
 * WebhookVerificationError saying why (a signature that does not match, a header missing or not one string).
 */
export declare function parseWebhook(
  rawBody: string | Uint8Array,
  headers: HeaderSource,
  secret: string,
  options?: { toleranceSeconds?: number; now?: number },
): TonoEvent;
