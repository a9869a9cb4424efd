// webhook_delivery: events committed at a steady rate, delivered to a local receiver. Reports the
// delivered events per second and the p99 from the event's commit to its first attempt arriving.
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { emitEvent } from '../src/modules/events/events.service.ts';
import { transact } from '../src/store/tx.ts';
import { startService, type BenchContext, type BenchResult } from './lib.ts';

const TARGET_PER_SECOND = Number(process.env.WEBHOOK_BENCH_RATE ?? 4000);
const BATCH = 50;

function percentile(sorted: number[], p: number): number {
  if (sorted.length === 0) return NaN;
  return sorted[Math.min(sorted.length - 1, Math.ceil((p / 100) * sorted.length) - 1)];
}

export default async function webhookDelivery(ctx: BenchContext): Promise<BenchResult[]> {
  const arrivals = new Map<string, number>();
  const receiver = http.createServer((req, res) => {
    const id = req.headers['x-service-event-id'] as string;
    if (!arrivals.has(id)) arrivals.set(id, performance.now());
    req.resume();
    req.on('end', () => res.writeHead(204).end());
  });
  await new Promise<void>((resolve) => receiver.listen(0, '127.0.0.1', resolve));
  const receiverUrl = `http://127.0.0.1:${(receiver.address() as AddressInfo).port}/hook`;

  const service = await startService();
  try {
    const created = await service.runtime.app.inject({
      method: 'POST',
      url: '/v1/webhooks',
      headers: { authorization: `Bearer ${service.testKey}`, 'content-type': 'application/json' },
      payload: JSON.stringify({ url: receiverUrl }),
    });
    if (created.statusCode !== 201) throw new Error(`webhook endpoint: ${created.body}`);
    const db = service.runtime.deps.db;
    const user = await db.selectFrom('users').select('id').where('email', '=', 'bench@example.com').executeTakeFirstOrThrow();
    const scope = { userId: user.id, mode: 'test' as const };

    const committed = new Map<string, number>();
    const started = performance.now();
    const durationMs = ctx.durationSec * 1000;
    let produced = 0;
    while (performance.now() - started < durationMs) {
      const due = Math.floor(((performance.now() - started) / 1000) * TARGET_PER_SECOND);
      if (produced >= due) {
        await new Promise((resolve) => setTimeout(resolve, 2));
        continue;
      }
      const ids = await transact(db, async (trx) => {
        const batch: string[] = [];
        for (let i = 0; i < BATCH; i += 1) {
          const now = Date.now();
          const event = await emitEvent(trx, scope, 'payment.status_updated', `payment_bench${produced + i}`, {
            id: `payment_bench${produced + i}`, request_id: 'request_bench', user_id: user.id, merchant_identifier: null, status: 'successful', updated_at: new Date(now).toISOString(),
          }, now);
          batch.push(event.id);
        }
        return batch;
      });
      const at = performance.now();
      for (const id of ids) committed.set(id, at);
      produced += ids.length;
      // Producers in the service are API requests; let the dispatcher at the connection between them.
      await new Promise((resolve) => setImmediate(resolve));
    }
    const deadline = performance.now() + 30_000;
    while (arrivals.size < committed.size && performance.now() < deadline) await new Promise((resolve) => setTimeout(resolve, 10));

    const latencies: number[] = [];
    let last = started;
    for (const [id, at] of committed) {
      const arrived = arrivals.get(id);
      if (arrived === undefined) continue;
      latencies.push(arrived - at);
      last = Math.max(last, arrived);
    }
    latencies.sort((a, b) => a - b);
    const delivered = latencies.length;
    return [
      {
        name: 'webhook_delivery',
        per_second: Math.round(delivered / ((last - started) / 1000)),
        p99_ms: Math.round(percentile(latencies, 99) * 10) / 10,
        note: `${delivered}/${committed.size} delivered, offered ${TARGET_PER_SECOND}/s; p50 ${Math.round(percentile(latencies, 50))} ms (commit to first attempt)`,
      },
    ];
  } finally {
    await service.close();
    receiver.closeAllConnections();
    await new Promise((resolve) => receiver.close(resolve));
  }
}

if (import.meta.main) {
  console.log(await webhookDelivery({ durationSec: Number(process.env.BENCH_DURATION ?? 10), connections: 50, baseline: { get_rps: 0, post_rps: 0 } }));
}
