// webhook_delivery_capacity: events are committed at an offered rate that rises step by step, and
// delivered to a receiver in its own process. A step passes when every event it offered was
// committed on time and delivered, and the p99 from an event's commit to its first attempt arriving
// is at most 250 ms. The capacity is the highest rate that passed.
import { emitEvent } from '../src/modules/events/events.service.ts';
import { transact } from '../src/store/store.ts';
import { startService, type BenchContext, type BenchResult, type BenchService } from './lib.ts';
import { spawnServer } from './process.ts';

const P99_LIMIT_MS = 250;
/** WEBHOOK_BENCH_RATES overrides the steps (events per second, comma-separated). */
const RATES = (process.env.WEBHOOK_BENCH_RATES ?? '1000,2000,3000,4000,5000,6000,7000,8000,10000,12000')
  .split(',')
  .map(Number);
const BATCH = 50;
const MAX_BATCHES_IN_FLIGHT = 8;

type Step = {
  offered: number;
  committed: number;
  delivered: number;
  p50_ms: number;
  p99_ms: number;
  passed: boolean;
  why?: string;
};

function percentile(sorted: number[], p: number): number {
  if (sorted.length === 0) return NaN;
  return sorted[Math.min(sorted.length - 1, Math.ceil((p / 100) * sorted.length) - 1)];
}

const clock = () => performance.timeOrigin + performance.now();
const round = (n: number) => Math.round(n * 10) / 10;

export default async function webhookDeliveryCapacity(ctx: BenchContext): Promise<BenchResult[]> {
  // The receiver is a separate program, as a merchant's would be, so it does not share the service's CPU.
  const receiver = await spawnServer('bench/servers/receiver.ts');
  const receiverBase = (receiver.info as { url: string }).url;
  const service = await startService();
  try {
    const created = await service.runtime.app.inject({
      method: 'POST',
      url: '/v1/webhooks',
      headers: { authorization: `Bearer ${service.testKey}`, 'content-type': 'application/json' },
      payload: JSON.stringify({ url: `${receiverBase}/hook` }),
    });
    if (created.statusCode !== 201) throw new Error(`webhook endpoint: ${created.body}`);
    const stepSeconds = Math.max(3, Math.round(ctx.durationSec / 2));
    const steps: Step[] = [];
    for (const rate of RATES) {
      const step = await offer(service, receiverBase, rate, stepSeconds);
      steps.push(step);
      if (!step.passed) break;
    }
    const passed = steps.filter((s) => s.passed);
    const best = passed.at(-1);
    const failed = steps.find((s) => !s.passed);
    const describe = (s: Step) =>
      `${s.offered}/s: ${s.delivered}/${s.committed} delivered, p50 ${s.p50_ms} ms, p99 ${s.p99_ms} ms${s.why ? ` (${s.why})` : ''}`;
    return [
      {
        name: 'webhook_delivery_capacity',
        per_second: best?.offered ?? 0,
        p99_ms: best?.p99_ms,
        budget: '≥ 5,000 events/s',
        met: (best?.offered ?? 0) >= 5_000,
        note: `${stepSeconds} s steps, commit to first attempt; passed ${best ? describe(best) : 'none'}; ${failed ? `failed ${describe(failed)}` : `no step failed up to ${RATES.at(-1)}/s`}`,
      },
    ];
  } finally {
    await service.close();
    await receiver.stop();
  }
}

let sequence = 0;

/** Commits `rate` events a second for `seconds`, then waits for them to arrive and judges the step. */
async function offer(service: BenchService, receiverBase: string, rate: number, seconds: number): Promise<Step> {
  const db = service.runtime.deps.db;
  const user = await db
    .selectFrom('users')
    .select('id')
    .where('email', '=', 'bench@example.com')
    .executeTakeFirstOrThrow();
  const scope = { userId: user.id, mode: 'test' as const };
  const committed = new Map<string, number>();
  const started = clock();
  const durationMs = seconds * 1000;
  let produced = 0;
  let late = false;
  // Producers in the service are API calls, many at once: several batches may wait for their commit together.
  const inFlight = new Set<Promise<void>>();
  const commitBatch = async () => {
    const ids = await transact(db, async (trx) => {
      const batch: string[] = [];
      for (let i = 0; i < BATCH; i += 1) {
        const now = Date.now();
        const resource = `payment_bench${(sequence += 1)}`;
        const event = await emitEvent(
          trx,
          scope,
          'payment.status_updated',
          resource,
          {
            id: resource,
            request_id: 'request_bench',
            user_id: user.id,
            merchant_identifier: null,
            status: 'successful',
            updated_at: new Date(now).toISOString(),
          },
          now,
        );
        batch.push(event.id);
      }
      return batch;
    });
    const at = clock();
    for (const id of ids) committed.set(id, at);
  };
  while (clock() - started < durationMs) {
    const due = Math.floor(((clock() - started) / 1000) * rate);
    if (produced >= due || inFlight.size >= MAX_BATCHES_IN_FLIGHT) {
      await (inFlight.size >= MAX_BATCHES_IN_FLIGHT
        ? Promise.race(inFlight)
        : new Promise((resolve) => setTimeout(resolve, 2)));
      continue;
    }
    // More than half a second behind the offered rate: the service cannot commit events this fast.
    if (due - produced > rate / 2) late = true;
    produced += BATCH;
    const batch = commitBatch().finally(() => inFlight.delete(batch));
    inFlight.add(batch);
    // Let the dispatcher at the connection between batches.
    await new Promise((resolve) => setImmediate(resolve));
  }
  await Promise.all(inFlight);
  // A step is judged on events it offered: those still missing 5 s after the last commit count as late.
  const deadline = clock() + 5_000;
  let arrivals = new Map<string, number>();
  while (clock() < deadline) {
    arrivals = new Map(
      Object.entries((await (await fetch(`${receiverBase}/arrivals`)).json()) as Record<string, number>),
    );
    if ([...committed.keys()].every((id) => arrivals.has(id))) break;
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
  const latencies = [...committed]
    .flatMap(([id, at]) => (arrivals.has(id) ? [arrivals.get(id)! - at] : []))
    .sort((a, b) => a - b);
  await fetch(`${receiverBase}/reset`, { method: 'POST' });
  const step: Step = {
    offered: rate,
    committed: committed.size,
    delivered: latencies.length,
    p50_ms: round(percentile(latencies, 50)),
    p99_ms: round(percentile(latencies, 99)),
    passed: true,
  };
  if (late) Object.assign(step, { passed: false, why: 'events could not be committed at this rate' });
  else if (step.delivered < step.committed) Object.assign(step, { passed: false, why: 'delivery fell behind' });
  else if (!(step.p99_ms <= P99_LIMIT_MS)) Object.assign(step, { passed: false, why: `p99 over ${P99_LIMIT_MS} ms` });
  return step;
}

if (import.meta.main) {
  console.log(
    await webhookDeliveryCapacity({
      durationSec: Number(process.env.BENCH_DURATION ?? 10),
      connections: 50,
      baseline: { get_rps: 0, post_rps: 0, stack_limit_get_rps: 0, bank_call_rps: 0 },
      bracketed: () => Promise.reject(new Error('no baselines run alongside this bench')),
    }),
  );
}
