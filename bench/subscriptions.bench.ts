// Scheduler throughput: 100,000 test-mode subscriptions due at the same moment, each charged
// exactly once through the sandbox bank in this process over loopback HTTP: first with the bank on
// a worker thread of its own, then with it mounted in the service, sharing the service's event loop.
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import readline from 'node:readline';
import { Worker as WorkerThread } from 'node:worker_threads';
import type { BenchContext, BenchResult } from './lib.ts';
import {
  countCharges,
  countQueuedMail,
  countReceipts,
  countSuccessfulCharges,
  setUpDueSubscriptions,
  startService,
} from './lib.ts';
import { freePort } from '../test/process.ts';
import { jobKindsOf, runnersOf } from '../src/modules/index.ts';
import { testClockOffsetsOf } from '../src/modules/merchants/merchants.service.ts';
import { Worker } from '../src/jobs/worker.ts';

/** BENCH_SUBSCRIPTIONS makes a shorter run possible; the budget is stated for 100,000. */
const SUBSCRIPTIONS = Number(process.env.BENCH_SUBSCRIPTIONS ?? 100_000);
/**
 * BENCH_CPU_PROFILE=<prefix> writes a V8 CPU profile of the charging phase alone (not the set-up)
 * of this thread, one file per variant: <prefix>-thread.cpuprofile and <prefix>-mounted.cpuprofile.
 */
async function startProfiler(variant: string): Promise<{ stop(): Promise<void> } | null> {
  if (!process.env.BENCH_CPU_PROFILE) return null;
  const file = `${process.env.BENCH_CPU_PROFILE}-${variant}.cpuprofile`;
  const { Session } = await import('node:inspector/promises');
  const session = new Session();
  session.connect();
  await session.post('Profiler.enable');
  await session.post('Profiler.start');
  return {
    async stop() {
      const { profile } = await session.post('Profiler.stop');
      fs.writeFileSync(file, JSON.stringify(profile));
      session.disconnect();
    },
  };
}

/**
 * The sandbox bank as its standalone app (`npm run sandbox-bank`) on a worker thread of this
 * process: its own event loop and SQLite file, as a real bank is another system.
 */
async function sandboxBankThread(servicePort: number): Promise<{ url: string; stop(): Promise<void> }> {
  const port = await freePort();
  const dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'tono-bench-bank-'));
  const thread = new WorkerThread(new URL('../src/sandbox-bank/main.ts', import.meta.url), {
    env: {
      ...process.env,
      PORT: String(port),
      HOST: '127.0.0.1',
      DATA_DIR: dataDir,
      LOG_LEVEL: 'warn',
      SANDBOX_REDIRECT_URI: `http://127.0.0.1:${servicePort}/pay/return`,
    },
    stdout: true,
  });
  await new Promise<void>((resolve, reject) => {
    thread.once('error', reject);
    thread.once('exit', (code) => reject(new Error(`sandbox bank thread exited with ${code}`)));
    readline.createInterface({ input: thread.stdout }).once('line', () => resolve());
  });
  return {
    url: `http://127.0.0.1:${port}`,
    async stop() {
      await thread.terminate();
      fs.rmSync(dataDir, { recursive: true, force: true });
    },
  };
}

export default async function benchSubscriptions(_ctx: BenchContext): Promise<BenchResult[]> {
  // BENCH_SUBSCRIPTION_VARIANTS=thread or =mounted runs one of the two.
  const variants = (process.env.BENCH_SUBSCRIPTION_VARIANTS ?? 'thread,mounted').split(',');
  const results: BenchResult[] = [];
  if (variants.includes('thread')) {
    const servicePort = await freePort();
    const bank = await sandboxBankThread(servicePort);
    try {
      results.push(await chargeAllDue('thread', { PORT: String(servicePort), SANDBOX_BANK_URL: bank.url }));
    } finally {
      await bank.stop();
    }
  }
  if (variants.includes('mounted')) results.push(await chargeAllDue('mounted', {}));
  return results;
}

const variantNames = {
  thread: 'subscription_charges (sandbox bank on its own thread)',
  mounted: 'subscription_charges (sandbox bank mounted in the service)',
};

async function chargeAllDue(variant: keyof typeof variantNames, env: Record<string, string>): Promise<BenchResult> {
  const service = await startService({ WORKERS: 'false', ...env });
  try {
    const { deps } = service.runtime;
    const setupSeconds = await setUpDueSubscriptions(deps, {
      count: SUBSCRIPTIONS,
      testKey: service.testKey,
      bankAccountId: service.bankAccountId,
      redirectUri: `${service.url}/pay/return`,
    });

    // All due now. Charge them with a worker that claims in batches and runs many at once, beside
    // the batched lanes a service runs (the receipts are mail, sent by one of them).
    const worker = new Worker({
      db: deps.db,
      log: deps.log,
      kinds: jobKindsOf(deps),
      concurrency: 256,
      pollMs: 20,
      clockOffsets: testClockOffsetsOf,
    });
    const runners = runnersOf(deps);
    // Each subscription set up emailed its payer that it was. Those notices belong to the set-up:
    // in life each went out when its payer approved, long before the charges fell due. They are
    // sent before the clock starts, so the run sends what charging sends, a receipt a charge.
    for (const runner of runners) runner.start();
    const noticesStarted = performance.now();
    while ((await countQueuedMail(deps.db)) > 0) await new Promise((resolve) => setTimeout(resolve, 250));
    const noticesSeconds = (performance.now() - noticesStarted) / 1000;
    const profiler = await startProfiler(variant);
    const cpuBefore = process.cpuUsage();
    const started = performance.now();
    worker.start();
    let charged = 0;
    let chargedIn = 0;
    let receipts = { total: 0, sent: 0 };
    // The run ends when every charge is made and every receipt sent: a receipt left queued is work not done.
    while (receipts.sent < SUBSCRIPTIONS) {
      // The counts scan their tables, so they are taken seldom enough not to weigh on the run.
      await new Promise((resolve) => setTimeout(resolve, SUBSCRIPTIONS > 10_000 ? 1000 : 250));
      if (charged < SUBSCRIPTIONS) {
        charged = await countSuccessfulCharges(deps.db);
        chargedIn = (performance.now() - started) / 1000;
      }
      if (charged >= SUBSCRIPTIONS) receipts = await countReceipts(deps.db);
      if (performance.now() - started > 15 * 60_000) break;
    }
    const seconds = (performance.now() - started) / 1000;
    const cpu = process.cpuUsage(cpuBefore);
    const cpuSeconds = (cpu.user + cpu.system) / 1e6;
    await worker.stop();
    for (const runner of runners) await runner.stop();
    await profiler?.stop();

    const counted = await countCharges(deps.db, SUBSCRIPTIONS);
    const allReceipts = receipts.total === SUBSCRIPTIONS && receipts.sent === SUBSCRIPTIONS;
    return {
      name: variantNames[variant],
      per_second: charged / seconds,
      // The budget is the bank's on its own thread; the mounted bank is shown beside it.
      ...(variant === 'thread' && {
        budget: '≥ 1,000 charges/s, each exactly once, every receipt sent',
        met: counted.exactlyOnce && allReceipts && charged / seconds >= 1_000,
      }),
      note: !counted.exactlyOnce
        ? `NOT exactly once: ${counted.summary}`
        : !allReceipts
          ? `receipts: ${receipts.total} queued and ${receipts.sent} sent for ${SUBSCRIPTIONS} charges`
          : `${charged} charged exactly once in ${chargedIn.toFixed(1)} s and every receipt sent in ${seconds.toFixed(1)} s, ${(charged / cpuSeconds).toFixed(0)} per CPU-second of the process (set up in ${setupSeconds.toFixed(0)} s, its notices sent in ${noticesSeconds.toFixed(0)} s before the clock started)`,
    };
  } finally {
    await service.close();
  }
}
