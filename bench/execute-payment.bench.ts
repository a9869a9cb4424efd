import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import {
  liveWebhookEndpoint,
  type load,
  recurringToken,
  warmLoadWithCpu,
  type BenchContext,
  type BenchResult,
  type Bracketed,
  type LoadOptions,
  failedCalls,
} from './lib.ts';
import { freePort } from '../test/process.ts';
import { serviceNodeFlags, spawnSandboxBank, spawnServer } from './process.ts';

/**
 * execute_payment: POST /v1/payments on one recurring consent with limits high enough, distinct
 * idempotency keys, the sandbox bank over HTTP: once as its own process (`npm run sandbox-bank`, as
 * a bank is another system) and once mounted inside the service, sharing its event loop. The consent
 * is authorised through the pay test helper; the token arrives, as a merchant gets it, in the
 * recurring_payment.authorised webhook. A webhook endpoint is then live for every event (a receiver in
 * its own process), so each execution's events are delivered while the load runs.
 */
export default async function benchExecutePayment(ctx: BenchContext): Promise<BenchResult[]> {
  const [servicePort, bankPort] = [await freePort(), await freePort()];
  const bank = await spawnSandboxBank(servicePort, bankPort);
  const receiver = await spawnServer('bench/servers/receiver.ts');
  const receiverUrl = (receiver.info as { url: string }).url;
  try {
    // Each between two loads of bank_call_baseline; each service has stopped (and left no work
    // running) before the load after it.
    const [separate, mounted] = await ctx.bracketed('bank_call_baseline', [
      () => measure(ctx, receiverUrl, bank.env, bank.pid),
      () => measure(ctx, receiverUrl, {}),
    ]);
    return [
      { ...resultOf('execute_payment (sandbox bank in its own process)', separate), ...budgetOf(separate) },
      resultOf('execute_payment (sandbox bank mounted in the service)', mounted),
    ];
  } finally {
    await receiver.stop();
    await bank.stop();
  }
}

type Measured = Awaited<ReturnType<typeof load>> & { cpu_us_per_call: number[] };

/** The budget is the bank's in its own process, as a real bank is; the mounted bank is shown beside it. */
function budgetOf({ result, baselineRps }: Bracketed<Measured>): Pick<BenchResult, 'budget' | 'met'> {
  return {
    budget: '≥ 0.5 × bank_call_baseline',
    met: result.rps / baselineRps >= 0.5 && failedCalls(result) === 0,
  };
}

function resultOf(name: string, bracketed: Bracketed<Measured>): BenchResult {
  const { result, baselineRps, around, baselineCpuUs } = bracketed;
  const [serviceCpu, bankCpu] = result.cpu_us_per_call;
  const cpu = `CPU a call: the service ${serviceCpu} µs${bankCpu === undefined ? '' : `, the bank ${bankCpu} µs`}, the baseline's server ${baselineCpuUs} µs`;
  return {
    name,
    rps: result.rps,
    p99_ms: result.p99_ms,
    ratio: result.rps / baselineRps,
    note: `× bank_call_baseline measured just before and after (${around.map(Math.round).join(' and ')} rps); ${cpu}; errors ${failedCalls(result)}`,
  };
}

async function measure(
  ctx: BenchContext,
  receiverUrl: string,
  env: Record<string, string>,
  bankPid?: number,
): Promise<Measured> {
  const dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'tono-bench-execute-'));
  const service = await spawnServer(
    'bench/servers/service.ts',
    { BENCH_ENV: JSON.stringify({ DATA_DIR: dataDir, ...env }) },
    undefined,
    serviceNodeFlags(),
  );
  try {
    const { url, testKey, bankAccountId } = service.info as { url: string; testKey: string; bankAccountId: string };
    const headers = { authorization: `Bearer ${testKey}`, 'content-type': 'application/json' };
    const { token } = await recurringToken(url, testKey, bankAccountId);
    await liveWebhookEndpoint(url, testKey, receiverUrl);

    let counter = 0;
    const run = `${process.pid}-${Date.now()}`;
    const pids = bankPid === undefined ? [service.pid] : [service.pid, bankPid];
    const executeOptions: LoadOptions = {
      url: `${url}/v1/payments`,
      method: 'POST',
      headers,
      bodyFor: () => JSON.stringify({ token, amount: '1.00 NZD', idempotency_key: `bench-${run}-${counter++}` }),
      connections: ctx.connections,
      durationSec: ctx.durationSec,
    };
    return await warmLoadWithCpu(pids, executeOptions);
  } finally {
    await service.stop();
    fs.rmSync(dataDir, { recursive: true, force: true });
  }
}
