import { Histogram, Registry, collectDefaultMetrics, Gauge } from 'prom-client';
import type { Db } from '../store/db.ts';
import { jobCounts } from '../jobs/queue.ts';

/** Prometheus metrics for /metrics: process defaults, HTTP by route and status, job backlog. */
export function createMetrics(deps: { db: Db }) {
  const registry = new Registry();
  collectDefaultMetrics({ register: registry });
  const httpDuration = new Histogram({
    name: 'tono_http_request_duration_seconds',
    help: 'HTTP request duration by route and status',
    labelNames: ['method', 'route', 'status'] as const,
    buckets: [0.001, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 10],
    registers: [registry],
  });
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
  return { registry, httpDuration };
}
export type Metrics = ReturnType<typeof createMetrics>;
