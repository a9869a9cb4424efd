import { load, type BenchContext, type BenchResult } from './lib.ts';
import { serviceHeapFlags, spawnServer, sampleRss } from './process.ts';

/** create_request (single, fixed amount, QR) at 50 connections, get_request, and RSS under the create load. */
export default async function benchRequests(ctx: BenchContext): Promise<BenchResult[]> {
  const service = await spawnServer('bench/servers/service.ts', {}, undefined, serviceHeapFlags());
  try {
    const { url, testKey, bankAccountId } = service.info as { url: string; testKey: string; bankAccountId: string };
    const headers = { authorization: `Bearer ${testKey}`, 'content-type': 'application/json' };
    const body = JSON.stringify({ bank_account_id: bankAccountId, amount: '12.50 NZD', message: 'Bench coffee', reference: 'BENCH-1' });
    const rss = sampleRss(service.pid);
    const create = await load({ url: `${url}/v1/requests`, method: 'POST', headers, body, connections: 50, durationSec: ctx.durationSec });
    const peakRssMb = rss.stop();
    const created = await fetch(`${url}/v1/requests`, { method: 'POST', headers, body }).then((r) => r.json() as Promise<any>);
    const get = await load({ url: `${url}/v1/requests/${created.request.id}`, headers, connections: ctx.connections, durationSec: ctx.durationSec });
    return [
      { name: 'create_request', rps: create.rps, p99_ms: create.p99_ms, ratio: create.rps / ctx.baseline.post_rps, note: `× echo POST; errors ${create.errors + create.non2xx}` },
      { name: 'get_request', rps: get.rps, p99_ms: get.p99_ms, ratio: get.rps / ctx.baseline.stack_limit_get_rps, note: `× stack_limit_get; errors ${get.errors + get.non2xx}` },
      { name: "rss_under_create_load", note: `${peakRssMb.toFixed(0)} MB peak resident memory` },
    ];
  } finally {
    await service.stop();
  }
}
