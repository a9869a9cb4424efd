// When to try a webhook delivery again (docs/webhooks.md, "Delivery and retries"). Pure, so the caps can be
// checked with any clock and any randomness. The backoff formula is the one every job uses (src/jobs/backoff.ts).

import {
  backoffCeilingMs as jobBackoffCeilingMs,
  backoffDelayMs as jobBackoffDelayMs,
  type Backoff,
} from '../../jobs/backoff.ts';

export const DELIVERY_POLICY = {
  maxAttempts: 20,
  /** No attempt starts later than this after the first one. */
  maxDurationMs: 10 * 60_000,
  baseDelayMs: 250,
  maxDelayMs: 10_000,
  timeoutMs: 15_000,
} as const;

export type DeliveryPolicy = { maxAttempts: number; maxDurationMs: number; baseDelayMs: number; maxDelayMs: number };

const asBackoff = (policy: DeliveryPolicy): Backoff => ({
  baseMs: policy.baseDelayMs,
  maxMs: policy.maxDelayMs,
  jitter: true,
});

/** The ceiling of the wait after attempt `attempt` (1-based): 0.25 s doubling, capped at 10 s. */
export function backoffCeilingMs(attempt: number, policy: DeliveryPolicy = DELIVERY_POLICY): number {
  return jobBackoffCeilingMs(attempt, asBackoff(policy));
}

/**
 * Full jitter above the 0.25 s floor: the wait is uniform between the base delay and the ceiling,
 * so retries from many endpoints spread out instead of arriving in waves.
 */
export function backoffDelayMs(attempt: number, random: number, policy: DeliveryPolicy = DELIVERY_POLICY): number {
  return jobBackoffDelayMs(attempt, asBackoff(policy), random);
}

/**
 * After a failed attempt, the time of the next one, or null when the delivery has used its
 * attempts or the next one would start more than 10 minutes after the first.
 */
export function nextAttemptAt(
  input: { attempt: number; firstAttemptAt: number; now: number; random: number },
  policy: DeliveryPolicy = DELIVERY_POLICY,
): number | null {
  if (input.attempt >= policy.maxAttempts) return null;
  const at = input.now + backoffDelayMs(input.attempt, input.random, policy);
  return at - input.firstAttemptAt > policy.maxDurationMs ? null : at;
}

/** Any 2xx acknowledges (204 included); everything else is retried. */
export function isAcknowledged(statusCode: number | null): boolean {
  return statusCode !== null && statusCode >= 200 && statusCode <= 299;
}
