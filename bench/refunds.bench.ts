import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import {
  failedCalls,
  liveWebhookEndpoint,
  warmLoadWithCpu,
  type BenchContext,
  type BenchResult,
  type LoadOptions,
} from './lib.ts';
import { serviceNodeFlags, spawnServer } from './process.ts';

/**
 * create_refund: POST /v1/refunds of 0.01 NZD, round robin over 20 successful payments, each with a
 * fresh Idempotency-Key, on the service as merchants run it: a webhook endpoint live (a receiver in
 * its own process), so every refund.created and refund.status_updated fans out, and the worker
 * carrying each refund out at the mounted sandbox bank in the same process while the load runs.
 * Between two loads of bank_call_baseline, as execute_payment.
 */
export default async function benchCreateRefund(ctx: BenchContext): Promise<BenchResult[]> {
  const receiver = await spawnServer('bench/servers/receiver.ts');
  try {
    const [bracketed] = await ctx.bracketed('bank_call_baseline', [
      () => measure(ctx, (receiver.info as { url: string }).url),
    ]);
    const { result, baselineRps, around, baselineCpuUs } = bracketed!;
    return [
      {
        name: 'create_refund',
        rps: result.rps,
        p99_ms: result.p99_ms,
        ratio: result.rps / baselineRps,
        budget: '≥ 0.3 × bank_call_baseline',
        met: result.rps / baselineRps >= 0.3 && failedCalls(result) === 0,
        note: `× bank_call_baseline measured just before and after (${around.map(Math.round).join(' and ')} rps); CPU a call: the service ${result.cpu_us_per_call[0]} µs (with the refund's job and webhooks), the baseline's server ${baselineCpuUs} µs; errors ${failedCalls(result)}`,
      },
    ];
  } finally {
    await receiver.stop();
  }
}

async function measure(ctx: BenchContext, receiverUrl: string) {
  const dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'tono-bench-refund-'));
  const service = await spawnServer(
    'bench/servers/service.ts',
    { BENCH_ENV: JSON.stringify({ DATA_DIR: dataDir }) },
    undefined,
    serviceNodeFlags(),
  );
  try {
    const { url, testKey, bankAccountId } = service.info as { url: string; testKey: string; bankAccountId: string };
    const headers = { authorization: `Bearer ${testKey}`, 'content-type': 'application/json' };
    const post = async (pathname: string, body: unknown) => {
      const response = await fetch(`${url}${pathname}`, { method: 'POST', headers, body: JSON.stringify(body) });
      const json = (await response.json()) as any;
      if (!response.ok) throw new Error(`${pathname}: ${response.status} ${JSON.stringify(json)}`);
      return json;
    };
    await liveWebhookEndpoint(url, testKey, receiverUrl);
    const payments: string[] = [];
    for (let i = 0; i < 20; i += 1) {
      const { request } = await post('/v1/requests', {
        bank_account_id: bankAccountId,
        amount: '5000.00 NZD',
        message: 'Bench refundable',
      });
      const { payment } = await post(`/v1/test-helpers/requests/${request.id}/pay`, {});
      payments.push(payment.id);
    }
    let counter = 0;
    const run = `${process.pid}-${Date.now()}`;
    const options: LoadOptions = {
      url: `${url}/v1/refunds`,
      method: 'POST',
      bodyFor: () => JSON.stringify({ payment_id: payments[counter % payments.length], amount: '0.01 NZD' }),
      headers,
      headersFor: () => ({ 'idempotency-key': `bench-${run}-${counter++}` }),
      connections: ctx.connections,
      durationSec: ctx.durationSec,
    };
    return await warmLoadWithCpu([service.pid], options);
  } finally {
    await service.stop();
    fs.rmSync(dataDir, { recursive: true, force: true });
  }
}
