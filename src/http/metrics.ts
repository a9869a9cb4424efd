import { Registry, collectDefaultMetrics, Counter, Gauge, type Metric } from 'prom-client';
import type { Db } from '../store/db.ts';
import { jobCounts, jobNotificationsHeard } from '../jobs/queue.ts';

export const HTTP_DURATION_BUCKETS = [0.001, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 10];

type Series = {
  labels: { method: string; route: string; status: string };
  counts: Float64Array;
  sum: number;
  count: number;
};

/**
 * The HTTP duration histogram (`tono_http_request_duration_seconds`, by method, route and status),
 * counted here and written out by prom-client as its own Histogram writes one, line for line
 * (src/http/metrics.test.ts compares the two). prom-client's `observe` builds a string key from
 * the labels and looks the series up by it, and finds the bucket by turning its bound into a
 * property name, on every call; here a call finds its series through three maps of values it
 * already has and adds to an array (docs/performance.md, "The duration histogram").
 */
export class HttpDurations {
  readonly name = 'tono_http_request_duration_seconds';
  readonly help = 'HTTP request duration by route and status';
  readonly type = 'histogram';
  readonly aggregator = 'sum';
  readonly #bounds: readonly number[];
  readonly #index = new Map<string, Map<string, Map<number, Series>>>();
  // Also in the order they were first seen, which is the order prom-client writes them in.
  #series: Series[] = [];

  constructor(bounds: readonly number[] = HTTP_DURATION_BUCKETS) {
    this.#bounds = bounds;
  }

  observe(method: string, route: string, status: number, seconds: number): void {
    let byMethod = this.#index.get(route);
    if (!byMethod) this.#index.set(route, (byMethod = new Map()));
    let byStatus = byMethod.get(method);
    if (!byStatus) byMethod.set(method, (byStatus = new Map()));
    let series = byStatus.get(status);
    if (!series) {
      series = {
        labels: { method, route, status: String(status) },
        counts: new Float64Array(this.#bounds.length),
        sum: 0,
        count: 0,
      };
      byStatus.set(status, series);
      this.#series.push(series);
    }
    const bounds = this.#bounds;
    for (let i = 0; i < bounds.length; i++) {
      if (seconds <= bounds[i]!) {
        series.counts[i]! += 1;
        break;
      }
    }
    series.sum += seconds;
    series.count += 1;
  }

  /** The values as prom-client's Histogram gives them to the registry's text writer: each series' labels shared by its lines. */
  getForPromString() {
    type Line = {
      labels: Record<string, string | number>;
      sharedLabels: Series['labels'];
      value: number;
      metricName: string;
      exemplar?: null;
    };
    const values: Line[] = [];
    for (const series of this.#series) {
      let cumulative = 0;
      this.#bounds.forEach((bound, i) => {
        cumulative += series.counts[i]!;
        values.push({
          labels: { le: bound },
          sharedLabels: series.labels,
          value: cumulative,
          metricName: `${this.name}_bucket`,
          exemplar: null,
        });
      });
      values.push(
        {
          labels: { le: '+Inf' },
          sharedLabels: series.labels,
          value: series.count,
          metricName: `${this.name}_bucket`,
          exemplar: null,
        },
        { labels: {}, sharedLabels: series.labels, value: series.sum, metricName: `${this.name}_sum` },
        { labels: {}, sharedLabels: series.labels, value: series.count, metricName: `${this.name}_count` },
      );
    }
    return { name: this.name, help: this.help, type: this.type, values, aggregator: this.aggregator };
  }

  /** The metric as a Histogram's `get()` gives it: each line with all its labels. */
  get() {
    const metric = this.getForPromString();
    const values = metric.values.map(({ labels, sharedLabels, ...line }) => ({
      ...line,
      labels: { ...labels, ...sharedLabels },
    }));
    return { ...metric, values };
  }

  reset(): void {
    this.#index.clear();
    this.#series = [];
  }
}

/** Prometheus metrics for /metrics: process defaults, HTTP by route and status, job backlog. */
export function createMetrics(deps: { db: Db }) {
  const registry = new Registry();
  collectDefaultMetrics({ register: registry });
  const httpDuration = new HttpDurations();
  registry.registerMetric(httpDuration as unknown as Metric);
  new Gauge({
    name: 'tono_jobs_due',
    help: 'Jobs due now and not yet finished, by kind',
    labelNames: ['kind'] as const,
    registers: [registry],
    async collect() {
      this.reset();
      const { dueByKind } = await jobCounts(deps.db, Date.now());
      for (const [kind, n] of dueByKind) this.set({ kind }, n);
    },
  });
  new Gauge({
    name: 'tono_jobs_failed',
    help: 'Jobs that exhausted their attempts',
    registers: [registry],
    async collect() {
      this.set((await jobCounts(deps.db, Date.now())).failed);
    },
  });
  new Counter({
    name: 'tono_job_notifications_heard_total',
    help: "Notifications of jobs another process queued that woke this process's workers (PostgreSQL)",
    registers: [registry],
    collect() {
      this.reset();
      this.inc(jobNotificationsHeard());
    },
  });
  return { registry, httpDuration };
}
export type Metrics = ReturnType<typeof createMetrics>;
