import type { DeliveryStatus } from './webhooks.tables.ts';

// What an event's deliveries came to once their records are pruned (kept on the event's row,
// migration 0033): per endpoint, the status of the newest delivery pruned, how many deliveries and
// attempts there were, and the last attempt's time. The dashboard and GET /v1/events/{id} read it
// beside the deliveries still kept, so an old event reads as it ended, not as never sent.

export type PrunedEndpoint = {
  /** The newest pruned delivery's: pruning leaves pending deliveries alone. */
  status: Exclude<DeliveryStatus, 'pending'>;
  deliveries: number;
  attempts: number;
  last_attempt_at: number | null;
};

export type DeliverySummary = {
  /** When deliveries of the event were last pruned. */
  pruned_at: number;
  /** By endpoint id. */
  webhooks: Record<string, PrunedEndpoint>;
};

export type PrunedDelivery = {
  endpoint_id: string;
  status: DeliveryStatus;
  attempts: number;
  last_attempt_at: number | null;
};

export function parseDeliverySummary(stored: string | null | undefined): DeliverySummary | null {
  return stored ? (JSON.parse(stored) as DeliverySummary) : null;
}

/**
 * The summary once `deliveries` (one event's, oldest first, each newer than any in `earlier`) are
 * pruned too: counts add up, and each endpoint takes the status of its newest delivery.
 */
export function withPruned(
  earlier: DeliverySummary | null,
  deliveries: readonly PrunedDelivery[],
  now: number,
): DeliverySummary {
  const webhooks: Record<string, PrunedEndpoint> = { ...earlier?.webhooks };
  for (const delivery of deliveries) {
    if (delivery.status === 'pending') throw new Error('a pending delivery is never pruned');
    const before = webhooks[delivery.endpoint_id];
    const times = [before?.last_attempt_at, delivery.last_attempt_at].filter((at) => at != null).map(Number);
    webhooks[delivery.endpoint_id] = {
      status: delivery.status,
      deliveries: (before?.deliveries ?? 0) + 1,
      attempts: (before?.attempts ?? 0) + Number(delivery.attempts),
      last_attempt_at: times.length > 0 ? Math.max(...times) : null,
    };
  }
  return { pruned_at: now, webhooks };
}
