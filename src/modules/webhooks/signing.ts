import { signStandardWebhook, signWebhookBody } from './verify.js';

// What a delivery is signed with, and how. An endpoint's stored secret (sealed at rest) is a
// keyring: its current secret and, for 24 hours after a rotation, the one it replaced, so a
// receiver can switch secrets without refusing a delivery (docs/webhooks.md, "Rotating the secret").
// A keyring without a previous secret is stored as the bare secret, as before rotation existed.

export const PREVIOUS_SECRET_KEPT_MS = 24 * 60 * 60_000;

export type Keyring = { current: string; previous?: { secret: string; until: number } };

export function encodeKeyring(keyring: Keyring): string {
  if (!keyring.previous) return keyring.current;
  return JSON.stringify({
    current: keyring.current,
    previous: keyring.previous.secret,
    previous_until: keyring.previous.until,
  });
}

export function decodeKeyring(stored: string): Keyring {
  if (!stored.startsWith('{')) return { current: stored };
  const parsed = JSON.parse(stored) as { current: string; previous: string; previous_until: number };
  return { current: parsed.current, previous: { secret: parsed.previous, until: parsed.previous_until } };
}

/** The secrets that sign at `now`: the current one first, then the previous one until it lapses. */
export function signingSecrets(keyring: Keyring, now: number): string[] {
  return keyring.previous && now < keyring.previous.until
    ? [keyring.current, keyring.previous.secret]
    : [keyring.current];
}

/** The keyring after a rotation at `now`: the new secret, and the current one kept for 24 hours (an older one is dropped). */
export function rotated(keyring: Keyring, fresh: string, now: number): Keyring {
  return { current: fresh, previous: { secret: keyring.current, until: now + PREVIOUS_SECRET_KEPT_MS } };
}

/**
 * Every signature header of a delivery: Tono's `X-Service-Signature` (comma-separated when two
 * secrets sign) and the Standard Webhooks trio (`webhook-signature` space-separated), so receivers
 * can use either Tono's helpers or any Standard Webhooks library, which also checks the timestamp
 * against replays.
 */
export function deliverySignatureHeaders(
  body: string,
  storedKeyring: string,
  eventId: string,
  now: number,
): Record<string, string> {
  const secrets = signingSecrets(decodeKeyring(storedKeyring), now);
  const timestamp = Math.floor(now / 1000);
  return {
    'x-service-signature': secrets.map((secret) => signWebhookBody(body, secret)).join(', '),
    'webhook-id': eventId,
    'webhook-timestamp': String(timestamp),
    'webhook-signature': secrets.map((secret) => signStandardWebhook(body, eventId, timestamp, secret)).join(' '),
  };
}
