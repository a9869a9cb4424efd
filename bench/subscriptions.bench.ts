// Scheduler throughput: 100,000 test-mode subscriptions due at the same moment, each charged
// exactly once through the sandbox bank in this process over loopback HTTP: first with the bank on
// a worker thread of its own, then with it mounted in the service, sharing the service's event loop.
import { randomBytes } from 'node:crypto';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import readline from 'node:readline';
import { Worker as WorkerThread } from 'node:worker_threads';
import type { BenchContext, BenchResult } from './lib.ts';
import { startService } from './lib.ts';
import { freePort } from '../test/process.ts';
import { batchedJobKinds, jobKindsOf } from '../src/modules/index.ts';
import { testClockOffsetsOf } from '../src/modules/merchants/merchants.service.ts';
import { Worker } from '../src/jobs/worker.ts';
import type { BankConnector, BankRegistry } from '../src/modules/banks/bank-connector.ts';
import { authenticateKey } from '../src/modules/merchants/merchants.service.ts';
import { findRequestById } from '../src/modules/requests/requests.repo.ts';
import type { CreateRequestBody } from '../src/modules/requests/requests.schemas.ts';
import { createRequest } from '../src/modules/requests/requests.service.ts';
import { subscriptionOptionsOf } from '../src/modules/requests/requests.present.ts';
import { createSubscription } from '../src/modules/subscriptions/subscriptions.service.ts';
import { transact } from '../src/store/tx.ts';
import type { Ctx } from '../src/modules/context.ts';

/** BENCH_SUBSCRIPTIONS makes a shorter run possible; the budget is stated for 100,000. */
const SUBSCRIPTIONS = Number(process.env.BENCH_SUBSCRIPTIONS ?? 100_000);
/** Subscriptions share consents in groups, so setting up the bench does not dominate it. */
const PER_CONSENT = Number(process.env.BENCH_PER_CONSENT ?? 100);
const CREATE_BATCH = 1000;

async function authorisedConsent(bank: BankConnector, bankUrl: string, redirectUri: string, now: number) {
  const consent = await bank.createEnduringConsent({
    fromAt: now, toAt: null, maxPerPaymentCents: 1500, period: 'Monthly', maxPerPeriodCents: 1500 * PER_CONSENT * 2,
    maxCountPerPeriod: null, totalCount: null, totalAmountCents: null,
    creditor: { name: 'Bench', accountNumber: '38-9000-0000001-00' }, remittance: { particulars: 'BENCH', code: 'TONO', reference: '' },
    idempotencyKey: randomBytes(12).toString('hex'), at: now,
  });
  if (!consent.ok) throw new Error(`consent: ${consent.message}`);
  const state = randomBytes(12).toString('hex');
  const reply = await fetch(`${bankUrl}/test/authorise`, {
    method: 'POST', headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ consent_id: consent.consentId, redirect_uri: redirectUri, state }),
  }).then((r) => r.json() as Promise<any>);
  const code = new URL(reply.Data.RedirectUri).searchParams.get('code')!;
  const token = await bank.exchangeCode({ code, redirectUri });
  if (!token.ok) throw new Error(`token: ${token.message}`);
  return { consentId: token.consentId, accessToken: token.accessToken };
}

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
  const thread = new WorkerThread(new URL('../src/modules/banks/sandbox-bank/main.ts', import.meta.url), {
    env: { ...process.env, PORT: String(port), HOST: '127.0.0.1', DATA_DIR: dataDir, LOG_LEVEL: 'warn', SANDBOX_REDIRECT_URI: `http://127.0.0.1:${servicePort}/pay/return` },
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
    const banks = (deps as typeof deps & { banks: BankRegistry }).banks;
    const bankId = banks.list('test')[0].id;
    const bank = banks.connectorFor(bankId, 'test')!;
    const redirectUri = `${service.url}/pay/return`;
    const now = deps.clock.now();

    const consents: Array<{ consentId: string; accessToken: string }> = [];
    for (let i = 0; i < Math.ceil(SUBSCRIPTIONS / PER_CONSENT); i += 50) {
      const count = Math.min(50, Math.ceil(SUBSCRIPTIONS / PER_CONSENT) - i);
      consents.push(...(await Promise.all(Array.from({ length: count }, () => authorisedConsent(bank, (banks as BankRegistry & { sandboxUrl(): string }).sandboxUrl(), redirectUri, now)))));
    }

    // One request per subscription (a subscription owns its request) and the subscription, both
    // straight through the domain functions the API and checkout use, without browser flows.
    const { merchant } = (await authenticateKey(deps.db, service.testKey))!;
    const ctx: Ctx = { deps, db: deps.db, merchant, mode: 'test', clock: deps.clock, log: deps.log };
    const body = { bank_account_id: service.bankAccountId, message: 'Bench plan', subscription_options: { amount: '15.00 NZD', period: 'monthly' }, cust_info: { email: 'bench@example.com' } } as CreateRequestBody;
    const setupStarted = performance.now();
    let created = 0;
    while (created < SUBSCRIPTIONS) {
      const batch = Math.min(CREATE_BATCH, SUBSCRIPTIONS - created);
      const requests = await Promise.all(Array.from({ length: batch }, () => createRequest(ctx, body)));
      const rows = await Promise.all(requests.map((r) => findRequestById(deps.db, r.body.request.id)));
      await transact(deps.db, async (trx) => {
        for (const [i, request] of rows.entries()) {
          const consent = consents[Math.floor((created + i) / PER_CONSENT)];
          await createSubscription(trx, deps, {
            request: request!, options: subscriptionOptionsOf(request!)!, email: 'bench@example.com', customerId: null, payerDetails: { email: 'bench@example.com' },
            bankId, bankConsentId: consent.consentId, bankAccessToken: consent.accessToken, authorisedAt: deps.clock.now(),
          });
        }
      });
      created += batch;
    }
    const setupSeconds = (performance.now() - setupStarted) / 1000;

    // All due now. Charge them with a worker that claims in batches and runs many at once.
    const worker = new Worker({ db: deps.db, log: deps.log, kinds: jobKindsOf(deps), concurrency: 256, pollMs: 20, excludeKinds: batchedJobKinds(), clockOffsets: testClockOffsetsOf });
    const profiler = await startProfiler(variant);
    const cpuBefore = process.cpuUsage();
    const started = performance.now();
    worker.start();
    let charged = 0;
    while (charged < SUBSCRIPTIONS) {
      // The count scans the charges table, so it is taken seldom enough not to weigh on the run.
      await new Promise((resolve) => setTimeout(resolve, SUBSCRIPTIONS > 10_000 ? 1000 : 250));
      charged = Number((await deps.db.selectFrom('subscription_charges').select((eb) => eb.fn.countAll().as('n')).where('status', '=', 'successful').executeTakeFirstOrThrow()).n);
      if (performance.now() - started > 15 * 60_000) break;
    }
    const seconds = (performance.now() - started) / 1000;
    const cpu = process.cpuUsage(cpuBefore);
    const cpuSeconds = (cpu.user + cpu.system) / 1e6;
    await worker.stop();
    await profiler?.stop();

    const charges = Number((await deps.db.selectFrom('subscription_charges').select((eb) => eb.fn.countAll().as('n')).executeTakeFirstOrThrow()).n);
    const paid = Number((await deps.db.selectFrom('payments').select((eb) => eb.fn.count('subscription_id').distinct().as('n')).where('status', '=', 'successful').executeTakeFirstOrThrow()).n);
    const payments = Number((await deps.db.selectFrom('payments').select((eb) => eb.fn.countAll().as('n')).where('subscription_id', 'is not', null).executeTakeFirstOrThrow()).n);
    const exactlyOnce = charged === SUBSCRIPTIONS && charges === SUBSCRIPTIONS && paid === SUBSCRIPTIONS && payments === SUBSCRIPTIONS;
    return {
      name: variantNames[variant],
      per_second: charged / seconds,
      note: exactlyOnce
        ? `${charged} charged exactly once in ${seconds.toFixed(1)} s, ${(charged / cpuSeconds).toFixed(0)} per CPU-second of the process (set up in ${setupSeconds.toFixed(0)} s)`
        : `NOT exactly once: ${charged} charged, ${charges} charge rows, ${payments} payments, ${paid} subscriptions paid`,
    };
  } finally {
    await service.close();
  }
}
