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
 * proportion to `top` (by default the largest value), bottoms on the baseline. A zero value is a
 * zero-height bar.
 */
export function columnBars(values: number[], width: number, height: number, top?: number): Bar[] {
  if (values.length === 0) return [];
  const max = top ?? Math.max(...values, 0);
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

/**
 * The money axis of a column chart: 0 and a few round steps (1, 2 or 5 whole dollars times a power
 * of ten) up to the first at or above the largest value, so every tick reads as a whole amount.
 * With nothing received the axis still runs to $1.
 */
export function moneyTicks(maxCents: number, most = 5): { top: number; ticks: number[] } {
  const dollars = Math.max(1, Math.ceil(Math.max(0, maxCents) / 100));
  let step = 1;
  for (let power = 1; ; power *= 10) {
    const fit = [1, 2, 5].map((m) => m * power).find((s) => Math.ceil(dollars / s) <= most - 1);
    if (fit) {
      step = fit;
      break;
    }
  }
  const steps = Math.ceil(dollars / step);
  const ticks = Array.from({ length: steps + 1 }, (_, i) => i * step * 100);
  return { top: ticks[ticks.length - 1], ticks };
}

/** A tick's amount, short: "$0", "$500", "$2,000", "$15k", "$1.5m". */
export function moneyTickLabel(cents: number): string {
  const dollars = Math.round(cents / 100);
  if (dollars >= 1_000_000) return `$${trim(dollars / 1_000_000)}m`;
  if (dollars >= 10_000) return `$${trim(dollars / 1000)}k`;
  return `$${dollars.toLocaleString('en-NZ')}`;
}

const trim = (n: number) => String(Math.round(n * 10) / 10);
const MONTHS = ['Jan', 'Feb', 'Mar', 'Apr', 'May', 'Jun', 'Jul', 'Aug', 'Sep', 'Oct', 'Nov', 'Dec'];

/** Which days get a date under the axis: every `every`th counting back from the last (today), as "13 Dec". */
export function dayLabels(days: Day[], every = 7): Array<{ index: number; label: string }> {
  const labels: Array<{ index: number; label: string }> = [];
  for (let index = days.length - 1; index >= 0; index -= every) {
    const [, month, day] = days[index].date.split('-').map(Number);
    labels.unshift({ index, label: `${day} ${MONTHS[month - 1]}` });
  }
  return labels;
}

export type ChartBox = { width: number; height: number; left: number; right: number; top: number; bottom: number };

/**
 * The received-per-day column chart in a box with margins for its axes: the bars (scaled to the top
 * tick, so the highest stands at or under it), the money ticks up the left with their heights, and
 * the dates under the axis centred on their bars.
 */
export function receivedChart(days: Day[], box: ChartBox) {
  const plotWidth = box.width - box.left - box.right;
  const plotHeight = box.height - box.top - box.bottom;
  const axis = moneyTicks(Math.max(0, ...days.map((d) => d.cents)));
  const bars = columnBars(
    days.map((d) => d.cents),
    plotWidth,
    plotHeight,
    axis.top,
  ).map((bar) => ({ ...bar, x: round(bar.x + box.left), y: round(bar.y + box.top) }));
  const baseline = box.top + plotHeight;
  return {
    bars,
    baseline,
    yTicks: axis.ticks.map((cents) => ({
      y: round(baseline - (cents / axis.top) * plotHeight),
      label: moneyTickLabel(cents),
    })),
    xLabels: dayLabels(days).map(({ index, label }) => ({
      x: round(bars[index].x + bars[index].width / 2),
      label,
    })),
  };
}
