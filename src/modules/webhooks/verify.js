// `tono/webhooks`, the service's own name for the receiver's side. The code is @tono/client's
// (packages/client/src/verify.js), the one implementation: the service signs its deliveries with
// it (signing.ts) and merchants install it as `@tono/client/webhooks`.
export {
  DEFAULT_TOLERANCE_SECONDS,
  signStandardWebhook,
  signWebhookBody,
  verifyStandardWebhook,
  verifyWebhookSignature,
} from '@tono/client/webhooks';
