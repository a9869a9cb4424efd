import { Histogram, Registry, collectDefaultMetrics, Gauge } from 'prom-client';
import type { Db } from '../store/db.ts';

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
      const rows = await deps.db
        .selectFrom('jobs')
        .select(['kind', (eb) => eb.fn.countAll<number>().as('n')])
        .where('failed_at', 'is', null)
        .where('run_at', '<=', Date.now())
        .groupBy('kind')
        .execute();
      for (const row of rows) this.set({ kind: row.kind }, Number(row.n));
    },
  });
  new Gauge({
    name: 'tono_jobs_failed',
    help: 'Jobs that exhausted their attempts',
    registers: [registry],
    async collect() {
      const row = await deps.db.selectFrom('jobs').select((eb) => eb.fn.countAll<number>().as('n')).where('failed_at', 'is not', null).executeTakeFirst();
      this.set(Number(row?.n ?? 0));
    },
  });
  return { registry, httpDuration };
}
export type Metrics = ReturnType<typeof createMetrics>;
