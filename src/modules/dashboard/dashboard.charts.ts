import { inZone } from '../../shared/zone.ts';

// The home page's numbers and the geometry of its SVG charts, as pure functions. The SVG itself
// is written by an auto-escaping template from these numbers; the same numbers fill the tables
// beside the charts.

export type Activity = { status: string; cents: number; createdAt: number; completedAt: number | null };
export type Day = { date: string; cents: number; count: number };

/** Money received per local day over the `days` days ending today: every day listed, oldest first, zero where nothing came in. */
export function receivedPerDay(activity: Activity[], now: number, zone: string, days: number): Day[] {
  const today = inZone(now, zone).startOf('day');
  const list: Day[] = [];
  const index = new Map<string, Day>();
  for (let back = days - 1; back >= 0; back--) {
    const day = { date: today.minus({ days: back }).toISODate()!, cents: 0, count: 0 };
    list.push(day);
    index.set(day.date, day);
  }
  for (const payment of activity) {
    if (payment.status !== 'successful') continue;
    const date = inZone(payment.completedAt ?? payment.createdAt, zone).toISODate()!;
    const day = index.get(date);
    if (day) {
      day.cents += payment.cents;
      day.count += 1;
    }
  }
  return list;
}

export type StatusCount = { status: string; count: number };

/** Payments by status, in a fixed order, and the success rate among those that finished (null when none did). */
export function statusBreakdown(
  activity: Activity[],
  statuses: readonly string[],
): { counts: StatusCount[]; successRate: number | null } {
  const counts = statuses.map((status) => ({ status, count: activity.filter((p) => p.status === status).length }));
  const successful = counts.find((c) => c.status === 'successful')?.count ?? 0;
  const finished = counts
    .filter((c) => ['successful', 'failed', 'cancelled'].includes(c.status))
    .reduce((sum, c) => sum + c.count, 0);
  return { counts, successRate: finished === 0 ? null : successful / finished };
}

export type Bar = { x: number; y: number; width: number; height: number };

/**
 * Vertical bars for values in a box `width` × `height`: equal widths with a gap, heights in
 * proportion to the largest value, bottoms on the baseline. A zero value is a zero-height bar.
 */
export function columnBars(values: number[], width: number, height: number): Bar[] {
  if (values.length === 0) return [];
  const max = Math.max(...values, 0);
  const slot = width / values.length;
  const gap = Math.min(2, slot * 0.2);
  return values.map((value, i) => {
    const barHeight = max > 0 ? (Math.max(0, value) / max) * height : 0;
    return {
      x: round(i * slot + gap / 2),
      y: round(height - barHeight),
      width: round(slot - gap),
      height: round(barHeight),
    };
  });
}

/** Horizontal bars: lengths in proportion to the largest value, within `width`. */
export function rowBars(values: number[], width: number, rowHeight: number): Bar[] {
  const max = Math.max(...values, 0);
  return values.map((value, i) => ({
    x: 0,
    y: i * rowHeight,
    width: max > 0 ? round((Math.max(0, value) / max) * width) : 0,
    height: round(rowHeight * 0.7),
  }));
}

const round = (n: number) => Math.round(n * 100) / 100;
