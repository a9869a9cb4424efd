// webhook_delivery: events committed at a steady rate, delivered to a local receiver. Reports the
// delivered events per second and the p99 from the event's commit to its first attempt arriving.
import { emitEvent } from '../src/modules/events/events.service.ts';
import { transact } from '../src/store/tx.ts';
import { startService, type BenchContext, type BenchResult } from './lib.ts';
import { spawnServer } from './process.ts';

// Offered at the budget's rate (docs/performance.md): can delivery keep up, and how fast does the first attempt follow the commit?
const TARGET_PER_SECOND = Number(process.env.WEBHOOK_BENCH_RATE ?? 3000);
const BATCH = 50;

function percentile(sorted: number[], p: number): number {
  if (sorted.length === 0) return NaN;
  return sorted[Math.min(sorted.length - 1, Math.ceil((p / 100) * sorted.length) - 1)];
}

export default async function webhookDelivery(ctx: BenchContext): Promise<BenchResult[]> {
  // The receiver is a separate program, as a merchant's would be, so it does not share the service's CPU.
  const receiver = await spawnServer('bench/servers/receiver.ts');
  const receiverBase = (receiver.info as { url: string }).url;
  const receiverUrl = `${receiverBase}/hook`;
  const clock = () => performance.timeOrigin + performance.now();

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
    const started = clock();
    const durationMs = ctx.durationSec * 1000;
    let produced = 0;
    while (clock() - started < durationMs) {
      const due = Math.floor(((clock() - started) / 1000) * TARGET_PER_SECOND);
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
      const at = clock();
      for (const id of ids) committed.set(id, at);
      produced += ids.length;
      // Producers in the service are API requests; let the dispatcher at the connection between them.
      await new Promise((resolve) => setImmediate(resolve));
    }
    const deadline = clock() + 30_000;
    const count = async () => Number(await (await fetch(`${receiverBase}/count`)).text());
    while ((await count()) < committed.size && clock() < deadline) await new Promise((resolve) => setTimeout(resolve, 50));
    const arrivals = new Map(Object.entries((await (await fetch(`${receiverBase}/arrivals`)).json()) as Record<string, number>));

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
    await receiver.stop();
  }
}

if (import.meta.main) {
  console.log(await webhookDelivery({ durationSec: Number(process.env.BENCH_DURATION ?? 10), connections: 50, baseline: { get_rps: 0, post_rps: 0, stack_limit_get_rps: 0, bank_call_rps: 0 } }));
}
