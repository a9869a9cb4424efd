import {
  liveWebhookEndpoint,
  load,
  warmLoadWithCpu,
  WARM_UP_SEC,
  type BenchContext,
  type BenchResult,
  type LoadOptions,
  failedCalls,
} from './lib.ts';
import { serviceNodeFlags, spawnServer, sampleRss, untilIdle, withCpu, type SpawnedServer } from './process.ts';

type Tail = {
  loop_delay_ms: { p50: number; p99: number; max: number };
  gc_pause_ms: { count: number; p99: number; max: number; total: number };
};

/** Runs a load and reads, from bench/servers/service.ts, the event loop delay and GC pauses during it. */
async function tailOf<T>(service: SpawnedServer, run: () => Promise<T>): Promise<Tail & { result: T }> {
  process.kill(service.pid, 'SIGUSR2');
  await service.nextLine();
  const result = await run();
  process.kill(service.pid, 'SIGUSR2');
  return { ...(JSON.parse(await service.nextLine()) as Tail), result };
}

/**
 * create_request (single, fixed amount, QR) at 50 connections, then and in the first seconds after
 * start; get_request; RSS under the create loads. A webhook endpoint is live (a receiver in its own
 * process), so every request.created is delivered while the load runs.
 */
export default async function benchRequests(ctx: BenchContext): Promise<BenchResult[]> {
  const receiver = await spawnServer('bench/servers/receiver.ts');
  const service = await spawnServer('bench/servers/service.ts', {}, undefined, serviceNodeFlags());
  try {
    const { url, testKey, bankAccountId } = service.info as { url: string; testKey: string; bankAccountId: string };
    await liveWebhookEndpoint(url, testKey, (receiver.info as { url: string }).url);
    const headers = { authorization: `Bearer ${testKey}`, 'content-type': 'application/json' };
    const body = JSON.stringify({
      bank_account_id: bankAccountId,
      amount: '12.50 NZD',
      message: 'Bench coffee',
      reference: 'BENCH-1',
    });
    const rss = sampleRss(service.pid);
    const createOptions: LoadOptions = {
      url: `${url}/v1/requests`,
      method: 'POST',
      headers,
      body,
      connections: 50,
      durationSec: ctx.durationSec,
    };
    // The first load after the start is the create figure's warm-up (never shorter than the others'),
    // and is reported on its own.
    const coldSec = Math.max(ctx.durationSec, WARM_UP_SEC);
    const cold = await withCpu([service.pid], () => load({ ...createOptions, durationSec: coldSec }));
    const tail = await tailOf(service, () => withCpu([service.pid], () => load(createOptions)));
    const create = tail.result;
    const peakRssMb = rss.stop();
    const created = await fetch(`${url}/v1/requests`, { method: 'POST', headers, body }).then(
      (r) => r.json() as Promise<any>,
    );
    await untilIdle([service.pid]);
    const getOptions: LoadOptions = {
      url: `${url}/v1/requests/${created.request.id}`,
      headers,
      connections: ctx.connections,
      durationSec: ctx.durationSec,
    };
    const [{ result: get, baselineRps, around, baselineCpuUs }] = await ctx.bracketed('stack_limit_get', [
      () => warmLoadWithCpu([service.pid], getOptions),
    ]);
    return [
      {
        name: 'create_request',
        rps: create.rps,
        p99_ms: create.p99_ms,
        ratio: create.rps / ctx.baseline.post_rps,
        budget: 'p99 ≤ 25 ms',
        met: create.p99_ms <= 25 && failedCalls(create) === 0,
        note: `× echo POST; p50 ${create.p50_ms} ms; the service's CPU ${create.cpu_us_per_call[0]} µs a call; in the service: event loop delay p99 ${tail.loop_delay_ms.p99} ms (max ${tail.loop_delay_ms.max}), GC pauses p99 ${tail.gc_pause_ms.p99} ms (max ${tail.gc_pause_ms.max}, ${tail.gc_pause_ms.total} ms in all); errors ${failedCalls(create)}`,
      },
      {
        name: `create_request (first ${coldSec} s after start)`,
        rps: cold.rps,
        p99_ms: cold.p99_ms,
        note: `the same load as create_request, run first on the freshly started service as its warm-up; p50 ${cold.p50_ms} ms; the service's CPU ${cold.cpu_us_per_call[0]} µs a call; errors ${failedCalls(cold)}`,
      },
      {
        name: 'get_request',
        rps: get.rps,
        p99_ms: get.p99_ms,
        ratio: get.rps / baselineRps,
        budget: '≥ 0.8 × stack_limit_get',
        met: get.rps / baselineRps >= 0.8 && failedCalls(get) === 0,
        note: `× stack_limit_get measured just before and after (${around.map(Math.round).join(' and ')} rps); CPU a call: the service ${get.cpu_us_per_call[0]} µs, the baseline ${baselineCpuUs} µs; errors ${failedCalls(get)}`,
      },
      {
        name: 'rss_under_create_load',
        budget: '≤ 250 MB',
        met: peakRssMb <= 250,
        note: `${peakRssMb.toFixed(0)} MB peak resident memory`,
      },
    ];
  } finally {
    await service.stop();
    await receiver.stop();
  }
}
