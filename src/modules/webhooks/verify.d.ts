export {
  DEFAULT_TOLERANCE_SECONDS,
  signStandardWebhook,
  signWebhookBody,
  verifyStandardWebhook,
  verifyWebhookSignature,
  type HeaderSource,
  type HeaderValue,
} from '@tono/client/webhooks';
