// npm run chaos [-- --minutes 5] [-- --clients 8] [-- --max-kills N] [-- --results DIR] [-- --keep]: two
// instances of the service (each `node src/main.ts` as `npm start` runs it, on a port of its own,
// sharing one PostgreSQL schema made for the run and dropped after it) under a mixed load of
// request creates, payments through the sandbox bank, recurring executions and subscriptions moved
// on by the test clock, with every event delivered to a receiver here; every 3-10 s one of them,
// at random, is SIGKILLed and started again. Then the kills stop, both drain, and the API, the
// receiver and `audit verify` are asked whether anything acknowledged was lost or done twice
// (docs/performance.md, "Chaos"). Exits 1 on any loss or double. CHAOS_DATABASE_URL names the
// database (default postgres://postgres@127.0.0.1:5432/test).
import { execFileSync, spawn, type ChildProcess } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import fs from 'node:fs';
import http from 'node:http';
import os from 'node:os';
import path from 'node:path';
import { parseArgs } from 'node:util';
import pg from 'pg';
import { Agent, request } from 'undici';
import { verifyWebhookSignature } from 'tono/webhooks';
import { createMerchant } from '../src/modules/merchants/merchants.service.ts';
import { systemClock } from '../src/shared/time.ts';
import { openDb } from '../src/store/store.ts';
import { freePort } from '../test/process.ts';
import { envOfStart, serviceNodeFlags, spawnSandboxBank } from './process.ts';

const { values } = parseArgs({
  options: {
    minutes: { type: 'string', default: '5' },
    clients: { type: 'string', default: '8' },
    'max-kills': { type: 'string' },
    results: { type: 'string', default: path.join(import.meta.dirname, 'results') },
    keep: { type: 'boolean', default: false },
  },
});
const minutes = Number(values.minutes);
const clients = Number(values.clients);
const maxKills = values['max-kills'] === undefined ? Number.POSITIVE_INFINITY : Number(values['max-kills']);
if (!(minutes > 0) || !(clients >= 1) || !(maxKills >= 0)) {
  process.stderr.write('chaos: --minutes must be above 0, --clients at least 1, --max-kills at least 0\n');
  process.exit(2);
}
const DATABASE_URL = process.env.CHAOS_DATABASE_URL ?? 'postgres://postgres@127.0.0.1:5432/test';

const DAY_MS = 86_400_000;
const WEEK_MS = 7 * DAY_MS;
/**
 * The most times one event may reach an endpoint without a resend: every claim of a delivery
 * counts an attempt, committed before the request leaves, and no attempt past the 20th is sent
 * (src/modules/webhooks/webhooks.dispatcher.ts, docs/webhooks.md).
 */
const MAX_DELIVERIES_PER_EVENT = 20;
/** How long a lost answer is retried before the write counts as failed: past a killed process's 60-second job leases. */
const RETRY_FOR_MS = 180_000;
/** An answer may take this long: a replayed execution waits up to 30 s, a clock advance for jobs a dead process held. */
const ANSWER_TIMEOUT_MS = 150_000;

const startedAt = new Date();
const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));
const pick = <T>(items: T[]): T => items[Math.floor(Math.random() * items.length)];
const cents = (amount: string) => Math.round(Number(amount.split(' ')[0]) * 100);
const money = (value: number) => `${(value / 100).toFixed(2)} NZD`;

// ---------------------------------------------------------------------------------------------
// The two instances, and the sandbox bank as its own process (a bank is another system: not killed).

type Instance = {
  name: string;
  port: number;
  url: string;
  up: boolean;
  child: ChildProcess | null;
  exited: Promise<void>;
  starts: number;
};

const workDir = fs.mkdtempSync(path.join(os.tmpdir(), 'tono-chaos-'));
const schemaName = `chaos_${randomBytes(6).toString('hex')}`;
const schemaUrl = `${DATABASE_URL}${DATABASE_URL.includes('?') ? '&' : '?'}options=${encodeURIComponent(`-c search_path=${schemaName}`)}`;
const secretKey = randomBytes(32).toString('base64');
const ports = [await freePort(), await freePort()];
// One public address for both, as behind a load balancer: the sandbox bank knows one return address.
const publicBaseUrl = `http://127.0.0.1:${ports[0]}`;
const instances: Instance[] = ports.map((port, i) => ({
  name: 'AB'[i],
  port,
  url: `http://127.0.0.1:${port}`,
  up: false,
  child: null,
  exited: Promise.resolve(),
  starts: 0,
}));

async function start(instance: Instance, bankUrl: string): Promise<void> {
  const log = fs.openSync(path.join(workDir, `instance-${instance.name}.log`), 'a');
  const dataDir = path.join(workDir, `data-${instance.name}`);
  fs.mkdirSync(dataDir, { recursive: true });
  const child = spawn(process.execPath, [...serviceNodeFlags(), 'src/main.ts'], {
    cwd: path.join(import.meta.dirname, '..'),
    stdio: ['ignore', 'pipe', log],
    env: {
      ...process.env,
      ...envOfStart(),
      DATABASE_URL: schemaUrl,
      SECRET_KEY: secretKey,
      PORT: String(instance.port),
      HOST: '127.0.0.1',
      PUBLIC_BASE_URL: publicBaseUrl,
      WEB_CONCURRENCY: '1',
      DATA_DIR: dataDir,
      DEMO_MERCHANT: 'false',
      LOG_LEVEL: 'warn',
      LOG_FORMAT: 'json',
      RATE_LIMIT_PER_SECOND: '0',
      SANDBOX_BANK_URL: bankUrl,
    },
  });
  fs.closeSync(log);
  instance.child = child;
  instance.starts++;
  instance.exited = new Promise((resolve) => child.once('exit', () => resolve()));
  let out = '';
  await new Promise<void>((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`instance ${instance.name} did not start in 60 s`)), 60_000);
    child.stdout!.setEncoding('utf8').on('data', (chunk: string) => {
      fs.appendFileSync(path.join(workDir, `instance-${instance.name}.log`), chunk);
      if (out.length < 4096) out += chunk;
      if (out.includes('Tono is running at')) {
        clearTimeout(timer);
        resolve();
      }
    });
    child.once('exit', (code, signal) => {
      clearTimeout(timer);
      reject(new Error(`instance ${instance.name} exited (${code ?? signal}) before listening; see ${workDir}`));
    });
  });
  instance.up = true;
}

async function kill(instance: Instance): Promise<void> {
  instance.up = false;
  instance.child?.kill('SIGKILL');
  await instance.exited;
}

async function stopGently(instance: Instance): Promise<void> {
  instance.up = false;
  const child = instance.child;
  if (!child || child.exitCode !== null || child.signalCode !== null) return;
  const timer = setTimeout(() => child.kill('SIGKILL'), 15_000);
  child.kill('SIGTERM');
  await instance.exited;
  clearTimeout(timer);
}

// ---------------------------------------------------------------------------------------------
// The merchant's client: each call goes to an instance that is up; an answer lost to a kill (a
// reset or refused connection, a cut body) or a 5xx is sent again, unchanged (the same
// Idempotency-Key or idempotency_key), to whichever instance is up, as a merchant's client would.

type Merchant = { name: 'shop' | 'plans'; key: string; bankAccountId: string; secret: string };
type Answer = { status: number; body: any };

const agent = new Agent({ keepAliveTimeout: 4_000, connections: 64 });
const stats = { calls: 0, lost: 0, retried5xx: 0 };

async function upInstance(): Promise<Instance> {
  for (;;) {
    const up = instances.filter((i) => i.up);
    if (up.length > 0) return pick(up);
    await sleep(50);
  }
}

async function call(
  merchant: Merchant,
  method: 'GET' | 'POST',
  pathname: string,
  body?: unknown,
  idempotencyKey?: string,
): Promise<Answer> {
  const deadline = Date.now() + RETRY_FOR_MS;
  const payload = body === undefined ? undefined : JSON.stringify(body);
  for (let attempt = 0; ; attempt++) {
    const instance = await upInstance();
    stats.calls++;
    let failure: string;
    try {
      const response = await request(`${instance.url}${pathname}`, {
        method,
        dispatcher: agent,
        headers: {
          authorization: `Bearer ${merchant.key}`,
          ...(payload !== undefined && { 'content-type': 'application/json' }),
          ...(idempotencyKey && { 'idempotency-key': idempotencyKey }),
        },
        body: payload,
        headersTimeout: ANSWER_TIMEOUT_MS,
        bodyTimeout: ANSWER_TIMEOUT_MS,
      });
      const text = await response.body.text();
      if (response.statusCode < 500) return { status: response.statusCode, body: text ? JSON.parse(text) : null };
      stats.retried5xx++;
      failure = `${response.statusCode} ${text.slice(0, 200)}`;
    } catch (error) {
      stats.lost++;
      failure = (error as Error).message;
    }
    if (Date.now() > deadline)
      throw new Error(`${method} ${pathname}: no answer for ${RETRY_FOR_MS / 1000} s (${failure})`);
    await sleep(Math.min(1000, 50 * 2 ** Math.min(attempt, 4)) + Math.random() * 100);
  }
}

/** A call that must answer 2xx: anything else is a refusal the load did not expect, and a problem. */
async function must(merchant: Merchant, method: 'GET' | 'POST', pathname: string, body?: unknown, key?: string) {
  const answer = await call(merchant, method, pathname, body, key);
  if (answer.status >= 300)
    throw new Error(`${method} ${pathname}: ${answer.status} ${JSON.stringify(answer.body).slice(0, 300)}`);
  return answer.body;
}

/** Every object of a list endpoint, page by page. */
async function listAll(merchant: Merchant, pathname: string, field: string): Promise<any[]> {
  const all: any[] = [];
  let after: string | undefined;
  for (;;) {
    const separator = pathname.includes('?') ? '&' : '?';
    const page = await must(
      merchant,
      'GET',
      `${pathname}${separator}limit=1000${after ? `&starting_after=${after}` : ''}`,
    );
    all.push(...page[field]);
    if (!page.has_more || page[field].length === 0) return all;
    after = page[field].at(-1).id;
  }
}

// ---------------------------------------------------------------------------------------------
// What was acknowledged (a 2xx the client read), to be found again at the end.

const ledger = {
  /** Requests created: id -> what was asked, keyed by its merchant_identifier (the Idempotency-Key). */
  requests: new Map<string, { merchant: Merchant; key: string; amountCents: number | null }>(),
  /** One-off requests paid: request id -> the successful payment. */
  paid: new Map<string, string>(),
  /** One-off requests whose pay was refused for an earlier try, claimed by a process that was then killed. */
  claimedByKilled: new Set<string>(),
  /** Recurring consents authorised: consent id -> its request. */
  consents: new Map<string, { requestId: string }>(),
  /** Executions: idempotency key -> consent, payment, amount asked. */
  executions: new Map<string, { consentId: string; paymentId: string; amountCents: number }>(),
  /** Subscriptions authorised: id -> its request and total_count. */
  subscriptions: new Map<string, { requestId: string; totalCount: number }>(),
  /** Test clock moves acknowledged, as their targets. */
  advances: [] as Array<{ merchant: Merchant; target: number }>,
  webhooks: [] as Array<{ merchant: Merchant; id: string }>,
};
const problems: string[] = [];
const problem = (line: string) => {
  if (problems.length < 1000) problems.push(line);
};

// ---------------------------------------------------------------------------------------------
// The receiver: every delivery counted by event id, its signature checked with its endpoint's secret.

const receiver = {
  deliveries: new Map<string, number>(),
  badSignatures: 0,
  lastAt: Date.now(),
  tokens: new Map<string, string>(),
};
const merchants = new Map<string, Merchant>();
const receiverServer = http.createServer((req, res) => {
  const chunks: Buffer[] = [];
  req.on('data', (chunk: Buffer) => chunks.push(chunk));
  req.on('end', () => {
    receiver.lastAt = Date.now();
    const raw = Buffer.concat(chunks);
    const merchant = merchants.get((req.url ?? '').slice(1));
    if (!merchant || !verifyWebhookSignature(raw, req.headers['x-service-signature'] as string, merchant.secret)) {
      receiver.badSignatures++;
      res.writeHead(401).end();
      return;
    }
    const event = JSON.parse(raw.toString('utf8')) as { id: string; type: string; data: Record<string, any> };
    receiver.deliveries.set(event.id, (receiver.deliveries.get(event.id) ?? 0) + 1);
    if (event.type === 'recurring_payment.authorised') receiver.tokens.set(event.data.id, event.data.token);
    res.writeHead(204).end();
  });
});
await new Promise<void>((resolve) => receiverServer.listen(0, '127.0.0.1', resolve));
const receiverUrl = `http://127.0.0.1:${(receiverServer.address() as { port: number }).port}`;

// ---------------------------------------------------------------------------------------------
// The load. "shop" creates one-off requests and pays them, authorises recurring consents and
// executes payments on them; "plans" has subscriptions, moved on by its test clock. They are two
// merchants because an Idempotency-Key's reply is kept 24 hours on the merchant's clock: a week's
// advance between a lost create and its retry would let the retry create again, as documented.

let sequence = 0;
const nextKey = (kind: string) => `chaos-${kind}-${sequence++}`;
const unpaid: string[] = [];
const MAX_CONSENTS = 12;
let consentsStarted = 0;

async function createRequest(merchant: Merchant, kind: string, fields: Record<string, unknown>): Promise<string> {
  const key = nextKey(kind);
  const body = await must(
    merchant,
    'POST',
    '/v1/requests',
    { bank_account_id: merchant.bankAccountId, message: `Chaos ${key}`, merchant_identifier: key, ...fields },
    key,
  );
  const amount = fields.amount as string | undefined;
  ledger.requests.set(body.request.id, { merchant, key, amountCents: amount ? cents(amount) : null });
  return body.request.id;
}

/**
 * The shop's payers are not at the bank while its test clock jumps: the sweep 30 minutes on would
 * take them for payers who walked away.
 */
const payers = { held: false, atTheBank: 0 };

/**
 * Pays a request through the test helper (the payer's way through the sandbox bank, over HTTP),
 * again after a lost answer; a 409 saying it is paid means an earlier try got through.
 */
async function pay(merchant: Merchant, requestId: string): Promise<any | null> {
  const gated = merchant === shop;
  while (gated && payers.held) await sleep(20);
  if (gated) payers.atTheBank++;
  let answer: Answer;
  try {
    answer = await call(merchant, 'POST', `/v1/test-helpers/requests/${requestId}/pay`, {});
  } finally {
    if (gated) payers.atTheBank--;
  }
  if (answer.status === 200) return answer.body;
  if (answer.status === 409 && answer.body?.params?.status === 'paid') return null;
  throw new Error(`pay ${requestId}: ${answer.status} ${JSON.stringify(answer.body).slice(0, 300)}`);
}

async function createAndPayOneOff(): Promise<void> {
  const amountCents = 100 + Math.floor(Math.random() * 4900);
  const id = await createRequest(shop, 'request', { amount: money(amountCents) });
  if (Math.random() < 0.6) unpaid.push(id);
}

async function payOneOff(requestId: string): Promise<void> {
  const paid = await pay(shop, requestId);
  let paymentId: string;
  if (paid) {
    if (paid.payment.status === 'cancelled' && paid.payment.failure_reason === 'request_already_paid') {
      // An earlier try was claimed, and may be at the bank, when its process was killed: it blocks
      // the request until its sweep (30 minutes on the merchant's clock) hands it to the reconciler.
      ledger.claimedByKilled.add(requestId);
      return;
    }
    if (paid.payment.status !== 'successful') throw new Error(`pay ${requestId}: payment ${paid.payment.status}`);
    paymentId = paid.payment.id;
  } else {
    const payments = (await listAll(shop, `/v1/requests/${requestId}/payments?status=successful`, 'payments')).map(
      (p) => p.id,
    );
    if (payments.length !== 1) throw new Error(`${requestId} is paid with ${payments.length} successful payments`);
    paymentId = payments[0];
  }
  ledger.paid.set(requestId, paymentId);
}

async function authoriseConsent(): Promise<void> {
  const requestId = await createRequest(shop, 'consent', {
    recurring_options: { period: 'monthly', max_per_period: '10000000.00 NZD' },
    cust_info: { email: `payer${consentsStarted % 5}@example.com` },
  });
  const paid = await pay(shop, requestId);
  const consentId =
    paid?.recurring_consent.id ??
    (await must(shop, 'GET', `/v1/recurring-consents?request_id=${requestId}`)).recurring_consents[0]?.id;
  if (!consentId) throw new Error(`${requestId} is paid but has no consent`);
  ledger.consents.set(consentId, { requestId });
}

async function execute(consentId: string): Promise<void> {
  const key = nextKey('execution');
  const amountCents = 100 + Math.floor(Math.random() * 1900);
  const body = await must(shop, 'POST', '/v1/payments', {
    token: receiver.tokens.get(consentId),
    amount: money(amountCents),
    idempotency_key: key,
    merchant_identifier: key,
  });
  ledger.executions.set(key, { consentId, paymentId: body.payment.id, amountCents });
}

/** One step of a shop client: mostly creates, payments and executions, now and then a new consent. */
async function shopStep(): Promise<void> {
  const withToken = [...ledger.consents.keys()].filter((id) => receiver.tokens.has(id));
  const roll = Math.random();
  if (consentsStarted < MAX_CONSENTS && (withToken.length < 2 || roll < 0.04)) {
    consentsStarted++;
    await authoriseConsent();
  } else if (roll < 0.4 && withToken.length > 0) {
    await execute(pick(withToken));
  } else if (roll < 0.65 && unpaid.length > 0) {
    await payOneOff(unpaid.splice(Math.floor(Math.random() * unpaid.length), 1)[0]);
  } else {
    await createAndPayOneOff();
  }
}

/** Moves a merchant's test clock to `target`: again after a lost answer, until the clock is there. */
async function advanceTo(merchant: Merchant, target: number): Promise<void> {
  for (;;) {
    const to = new Date(target).toISOString();
    const answer = await call(merchant, 'POST', '/v1/test-helpers/clock/advance', { to });
    if (answer.status === 200 && !answer.body.work_remaining) break;
    if (answer.status === 200) continue;
    // A lost answer whose advance got there: the clock only moves forward, so the retry is refused.
    if ((await clockOf(merchant)) >= target) break;
    throw new Error(`advance to ${to}: ${answer.status} ${JSON.stringify(answer.body)}`);
  }
  ledger.advances.push({ merchant, target });
}

/**
 * Moves the shop's clock 31 minutes, past the sweep of every one-off payment made so far: one
 * that a killed process left claimed then goes to the reconciler, which asks the bank, and an
 * execution left in flight is asked about again (2 minutes on). Done often, so each move steps
 * through few jobs; an Idempotency-Key's 24 hours on the clock outlast a retry's few moves.
 */
async function sweepShop(): Promise<void> {
  payers.held = true;
  try {
    while (payers.atTheBank > 0) await sleep(20);
    await advanceTo(shop, (await clockOf(shop)) + 31 * 60_000);
  } finally {
    payers.held = false;
  }
}

async function clockOf(merchant: Merchant): Promise<number> {
  return Date.parse((await must(merchant, 'GET', '/v1/test-helpers/clock')).clock.now);
}

async function createSubscription(): Promise<void> {
  const totalCount = 3 + Math.floor(Math.random() * 4);
  const requestId = await createRequest(plans, 'plan', {
    subscription_options: { amount: '15.00 NZD', period: 'weekly', total_count: totalCount },
    cust_info: { email: `subscriber${ledger.subscriptions.size % 7}@example.com` },
  });
  const paid = await pay(plans, requestId);
  const id =
    paid?.subscription.id ??
    (await must(plans, 'GET', `/v1/subscriptions?request_id=${requestId}`)).subscriptions[0]?.id;
  if (!id) throw new Error(`${requestId} is paid but has no subscription`);
  ledger.subscriptions.set(id, { requestId, totalCount });
}

// ---------------------------------------------------------------------------------------------
// The run.

let stopping = false;
let kills = 0;
const admin = new pg.Client({ connectionString: DATABASE_URL });
let bank: Awaited<ReturnType<typeof spawnSandboxBank>> | null = null;
let shop: Merchant;
let plans: Merchant;
let exitCode = 1;

async function runClient(step: () => Promise<void>): Promise<void> {
  while (!stopping) {
    try {
      await step();
    } catch (error) {
      problem(`load: ${(error as Error).message}`);
    }
  }
}

/** Every 3-10 s an instance that is up, at random, is killed and started again at once. */
async function killer(endAt: number): Promise<void> {
  while (kills < maxKills) {
    const wait = 3000 + Math.random() * 7000;
    if (Date.now() + wait >= endAt) return;
    await sleep(wait);
    const up = instances.filter((i) => i.up);
    if (up.length === 0) continue;
    const victim = pick(up);
    await kill(victim);
    kills++;
    for (let tries = 1; ; tries++) {
      try {
        await start(victim, bank!.env.SANDBOX_BANK_URL);
        break;
      } catch (error) {
        if (tries === 3) throw error;
      }
    }
  }
}

/**
 * Waits until no job is due or held (read from the job table: how the service is quiet, not a
 * verdict) and the receiver has had nothing for 2 s, twice in a row. A job a killed process held
 * waits out its lease (60 s for the generic worker, 10 s for deliveries) before another takes it.
 */
async function drain(): Promise<{ seconds: number; quiet: boolean; waitedOn: string[] }> {
  const began = Date.now();
  const waitedOn = new Set<string>();
  const client = new pg.Client({ connectionString: schemaUrl });
  await client.connect();
  try {
    let calm = 0;
    while (Date.now() - began < 300_000) {
      const now = Date.now();
      const { rows } = await client.query<{ kind: string; held: boolean }>(
        'select kind, locked_until > $1 as held from jobs where failed_at is null and (run_at <= $1 or locked_until > $1)',
        [now],
      );
      // Past the first seconds, what is still there is what the drain waits for (a dead process's leases).
      if (now - began > 5000) for (const row of rows) waitedOn.add(`${row.kind}${row.held ? ' (held)' : ''}`);
      calm = rows.length === 0 && now - receiver.lastAt >= 2000 ? calm + 1 : 0;
      if (calm >= 2) return { seconds: (Date.now() - began) / 1000, quiet: true, waitedOn: [...waitedOn] };
      await sleep(500);
    }
    return { seconds: (Date.now() - began) / 1000, quiet: false, waitedOn: [...waitedOn] };
  } finally {
    await client.end();
  }
}

/** Runs `work` over `items`, `width` at a time. */
async function eachOf<T>(items: T[], width: number, work: (item: T) => Promise<void>): Promise<void> {
  let next = 0;
  await Promise.all(
    Array.from({ length: width }, async () => {
      while (next < items.length) await work(items[next++]);
    }),
  );
}

const countsOf = {
  writes: 0,
  present: 0,
  payments: 0,
  doubles: 0,
  consents: 0,
  consentMismatches: 0,
  slots: 0,
  charges: 0,
  events: 0,
  delivered: 0,
  maxDeliveries: 0,
  redelivered: 0,
  auditChecked: 0,
  auditRecords: 0,
  auditChains: 0,
};

/** Every acknowledged write, read back. */
async function checkPresent(): Promise<void> {
  const reads: Array<() => Promise<boolean>> = [];
  for (const [id, { merchant, key, amountCents }] of ledger.requests)
    reads.push(async () => {
      const answer = await call(merchant, 'GET', `/v1/requests/${id}`);
      const found = answer.status === 200 && answer.body.request.merchant_identifier === key;
      if (found && amountCents !== null && cents(answer.body.request.amount.value) !== amountCents)
        problem(`request ${id}: amount ${answer.body.request.amount.value}, created with ${money(amountCents)}`);
      return found;
    });
  for (const [requestId, paymentId] of ledger.paid)
    reads.push(async () => {
      const answer = await call(shop, 'GET', `/v1/payments/${paymentId}`);
      return (
        answer.status === 200 &&
        answer.body.payment.request_id === requestId &&
        answer.body.payment.status === 'successful'
      );
    });
  for (const id of ledger.consents.keys())
    reads.push(async () => (await call(shop, 'GET', `/v1/recurring-consents/${id}`)).status === 200);
  for (const { paymentId, consentId } of ledger.executions.values())
    reads.push(async () => {
      const answer = await call(shop, 'GET', `/v1/payments/${paymentId}`);
      return answer.status === 200 && answer.body.payment.recurring_consent_id === consentId;
    });
  for (const id of ledger.subscriptions.keys())
    reads.push(async () => (await call(plans, 'GET', `/v1/subscriptions/${id}`)).status === 200);
  for (const { merchant, id } of ledger.webhooks)
    reads.push(async () => (await call(merchant, 'GET', `/v1/webhooks/${id}`)).status === 200);
  const clocks = new Map([
    [shop, await clockOf(shop)],
    [plans, await clockOf(plans)],
  ]);
  for (const { merchant, target } of ledger.advances) {
    countsOf.writes++;
    const now = clocks.get(merchant)!;
    if (now >= target) countsOf.present++;
    else
      problem(
        `${merchant.name}'s test clock is at ${new Date(now).toISOString()}, short of ${new Date(target).toISOString()}`,
      );
  }
  countsOf.writes += reads.length;
  await eachOf(reads, 16, async (read) => {
    if (await read()) countsOf.present++;
  });
  if (countsOf.present < countsOf.writes)
    problem(`${countsOf.writes - countsOf.present} acknowledged writes are missing or changed`);
}

/**
 * Every acknowledged create has exactly one audit record, read through the API, and every
 * merchant's chain verifies (`audit verify`, which first chains what a killed instance left).
 */
async function checkAudit(): Promise<void> {
  for (const merchant of [shop, plans]) {
    const records = await listAll(merchant, '/v1/audit-events?action=request.create', 'audit_events');
    const perObject = new Map<string, number>();
    for (const record of records) perObject.set(record.object_id, (perObject.get(record.object_id) ?? 0) + 1);
    for (const [id, request] of ledger.requests) {
      if (request.merchant !== merchant) continue;
      countsOf.auditChecked++;
      const count = perObject.get(id) ?? 0;
      if (count !== 1) problem(`request ${id} has ${count} request.create audit records`);
    }
  }
  const verified = JSON.parse(
    execFileSync(process.execPath, ['src/cli/main.ts', 'audit', 'verify', '--json'], {
      cwd: path.join(import.meta.dirname, '..'),
      env: { ...process.env, DATABASE_URL: schemaUrl, SECRET_KEY: secretKey, LOG_LEVEL: 'warn' },
      encoding: 'utf8',
    }),
  ) as { ok: boolean; merchants: number; records: number; chains: Array<{ userId: string; broken: unknown }> };
  countsOf.auditRecords = verified.records;
  countsOf.auditChains = verified.merchants;
  for (const chain of verified.chains)
    if (chain.broken) problem(`the audit chain of ${chain.userId} is broken: ${JSON.stringify(chain.broken)}`);
}

/** No create, payment or execution made twice. */
async function checkDoubles(): Promise<void> {
  for (const merchant of [shop, plans]) {
    const byKey = new Map<string, number>();
    for (const r of await listAll(merchant, '/v1/requests', 'requests')) {
      if (!r.merchant_identifier?.startsWith('chaos-')) continue;
      byKey.set(r.merchant_identifier, (byKey.get(r.merchant_identifier) ?? 0) + 1);
    }
    for (const [key, count] of byKey)
      if (count > 1) {
        countsOf.doubles += count - 1;
        problem(`${count} requests of ${merchant.name} for the Idempotency-Key ${key}`);
      }
  }
  const payments = await listAll(shop, '/v1/payments', 'payments');
  countsOf.payments = payments.length;
  const successfulByRequest = new Map<string, number>();
  const byExecutionKey = new Map<string, string[]>();
  for (const p of payments) {
    if (p.recurring_consent_id) {
      const ids = byExecutionKey.get(p.merchant_identifier) ?? [];
      ids.push(p.id);
      byExecutionKey.set(p.merchant_identifier, ids);
    } else if (p.status === 'successful') {
      successfulByRequest.set(p.request_id, (successfulByRequest.get(p.request_id) ?? 0) + 1);
    }
  }
  for (const [requestId, count] of successfulByRequest)
    if (count > 1) {
      countsOf.doubles += count - 1;
      problem(`request ${requestId} has ${count} successful payments`);
    }
  for (const [key, ids] of byExecutionKey) {
    const acknowledged = ledger.executions.get(key);
    if (ids.length > 1) {
      countsOf.doubles += ids.length - 1;
      problem(`${ids.length} payments for the execution ${key}: ${ids.join(', ')}`);
    } else if (!acknowledged) {
      countsOf.doubles++;
      problem(`payment ${ids[0]} (${key}) is no acknowledged execution`);
    } else if (acknowledged.paymentId !== ids[0]) {
      problem(`execution ${key} was answered with ${acknowledged.paymentId}, but its payment is ${ids[0]}`);
    }
  }
}

type Payment = { id: string; status: string; requested_amount: { value: string }; created_at: string };
const COUNTED = new Set(['successful', 'unconfirmed', 'awaiting-consent']);

/** Each consent's usage counters against its payments, both read from the API. */
async function checkConsents(): Promise<void> {
  const executionsOf = new Map<string, number>();
  for (const { consentId } of ledger.executions.values())
    executionsOf.set(consentId, (executionsOf.get(consentId) ?? 0) + 1);
  await eachOf([...ledger.consents], 4, async ([consentId, { requestId }]) => {
    countsOf.consents++;
    // Read the payments on both sides of the consent, so a settle job moving one in between is seen and read again.
    for (let attempt = 1; ; attempt++) {
      const before = await listAll(shop, `/v1/requests/${requestId}/payments`, 'payments');
      const consent = (await must(shop, 'GET', `/v1/recurring-consents/${consentId}`)).recurring_consent;
      const after = (await listAll(shop, `/v1/requests/${requestId}/payments`, 'payments')) as Payment[];
      const same =
        JSON.stringify(before.map((p) => [p.id, p.status])) === JSON.stringify(after.map((p) => [p.id, p.status]));
      if (!same && attempt < 5) continue;
      const counted = after.filter((p) => COUNTED.has(p.status));
      const start = Date.parse(consent.usage.period.start);
      const end = Date.parse(consent.usage.period.end);
      const inPeriod = counted.filter((p) => Date.parse(p.created_at) >= start && Date.parse(p.created_at) < end);
      const sum = (list: Payment[]) => list.reduce((total, p) => total + cents(p.requested_amount.value), 0);
      const expected = {
        total: `${money(sum(counted))} × ${counted.length}`,
        period: `${money(sum(inPeriod))} × ${inPeriod.length}`,
      };
      const actual = {
        total: `${consent.usage.total.amount.value} × ${consent.usage.total.count}`,
        period: `${consent.usage.period.amount.value} × ${consent.usage.period.count}`,
      };
      if (expected.total !== actual.total || expected.period !== actual.period) {
        countsOf.consentMismatches++;
        problem(`consent ${consentId}: usage ${JSON.stringify(actual)}, its payments ${JSON.stringify(expected)}`);
      }
      const acknowledged = executionsOf.get(consentId) ?? 0;
      if (after.length !== acknowledged) {
        countsOf.consentMismatches++;
        problem(`consent ${consentId}: ${after.length} payments for ${acknowledged} acknowledged executions`);
      }
      return;
    }
  });
}

/**
 * Each subscription charged once in every weekly slot the clock has passed (slot 0 at
 * authorisation, slot n n weeks later at the same local time), up to its total_count. The clock
 * ends half a week past the last slot any subscription made during the run can have, so an hour
 * of daylight saving either way cannot move a slot across it.
 */
async function checkSubscriptions(): Promise<void> {
  const clockNow = await clockOf(plans);
  await eachOf([...ledger.subscriptions], 4, async ([id, { totalCount }]) => {
    const subscription = (await must(plans, 'GET', `/v1/subscriptions/${id}`)).subscription;
    const payments = (await must(plans, 'GET', `/v1/subscriptions/${id}/payments`)).payments as Payment[];
    const anchor = Date.parse(subscription.created_at);
    const sinceAnchor = clockNow - anchor;
    const intoWeek = sinceAnchor % WEEK_MS;
    const expected = Math.min(totalCount, Math.floor(sinceAnchor / WEEK_MS) + 1);
    if (expected < totalCount && (intoWeek < 2 * 3_600_000 || intoWeek > WEEK_MS - 2 * 3_600_000))
      problem(`subscription ${id}: the clock ends within two hours of a slot; its count is not certain`);
    const successful = payments.filter((p) => p.status === 'successful');
    countsOf.slots += expected;
    countsOf.charges += successful.length;
    const slots = new Set(successful.map((p) => Math.floor((Date.parse(p.created_at) - anchor + DAY_MS) / WEEK_MS)));
    if (slots.size < successful.length) {
      countsOf.doubles += successful.length - slots.size;
      problem(`subscription ${id}: ${successful.length} charges in ${slots.size} slots`);
    }
    if (successful.length !== expected || subscription.successful_charges !== expected)
      problem(
        `subscription ${id}: ${expected} slots passed, ${successful.length} successful payments, successful_charges ${subscription.successful_charges}`,
      );
    const failed = payments.length - successful.length;
    if (failed > 0) problem(`subscription ${id}: ${failed} payments not successful`);
  });
}

const claimedOutcomes = { paid: 0, notExecuted: 0, unconfirmed: 0 };

/**
 * What became of the one-off payments a kill left claimed, once their sweep and reconciler ran:
 * paid (the bank took it), not executed (the request is payable again), or still unconfirmed.
 */
async function checkClaimedByKilled(): Promise<void> {
  await eachOf([...ledger.claimedByKilled], 4, async (requestId) => {
    const request = (await must(shop, 'GET', `/v1/requests/${requestId}`)).request;
    const payments = (await listAll(shop, `/v1/requests/${requestId}/payments`, 'payments')) as Payment[];
    if (payments.some((p) => p.status === 'successful')) {
      claimedOutcomes.paid++;
      if (request.status !== 'paid') problem(`request ${requestId} has a successful payment but is ${request.status}`);
    } else if (payments.some((p) => p.status === 'unconfirmed' || p.status === 'awaiting-consent')) {
      claimedOutcomes.unconfirmed++;
      problem(
        `request ${requestId}: a payment a kill left claimed is still ${payments.map((p) => `${p.id} ${p.status}`).join(', ')}`,
      );
    } else {
      claimedOutcomes.notExecuted++;
    }
  });
}

/** Every event of both merchants at the receiver at least once, and none past the bound. */
async function checkEvents(): Promise<void> {
  const events: string[] = [];
  for (const merchant of [shop, plans])
    for (const event of await listAll(merchant, '/v1/events', 'events')) events.push(event.id);
  countsOf.events = events.length;
  // An event written as the drain ended (a settle job's) may still be on its way.
  const deadline = Date.now() + 30_000;
  while (events.some((id) => !receiver.deliveries.has(id)) && Date.now() < deadline) await sleep(500);
  const known = new Set(events);
  for (const id of events) {
    const times = receiver.deliveries.get(id) ?? 0;
    if (times > 0) countsOf.delivered++;
    else problem(`event ${id} never reached the receiver`);
    if (times > 1) countsOf.redelivered++;
    countsOf.maxDeliveries = Math.max(countsOf.maxDeliveries, times);
    if (times > MAX_DELIVERIES_PER_EVENT) problem(`event ${id} reached the receiver ${times} times`);
  }
  // One written after the lists were read (a settle job's) is looked up on its own.
  for (const id of receiver.deliveries.keys()) {
    if (known.has(id)) continue;
    const found = await Promise.all([shop, plans].map((m) => call(m, 'GET', `/v1/events/${id}`)));
    if (!found.some((answer) => answer.status === 200)) problem(`the receiver got ${id}, which the API does not know`);
  }
  if (receiver.badSignatures > 0) problem(`${receiver.badSignatures} deliveries with a signature that did not verify`);
}

function commit(): string | null {
  try {
    return execFileSync('git', ['rev-parse', '--short', 'HEAD'], { cwd: import.meta.dirname, encoding: 'utf8' }).trim();
  } catch {
    return null;
  }
}

try {
  await admin.connect();
  await admin.query(`create schema "${schemaName}"`);
  bank = await spawnSandboxBank(ports[0], await freePort());
  // One at a time: each start migrates the schema first, and two migrating at once would race.
  for (const instance of instances) await start(instance, bank.env.SANDBOX_BANK_URL);

  const db = openDb({ engine: 'postgres', url: schemaUrl, poolSize: 1 });
  try {
    for (const name of ['shop', 'plans'] as const) {
      const made = await createMerchant(db, systemClock, {
        name: `Chaos ${name}`,
        email: `${name}@chaos.example`,
        bankAccount: '12-3456-7890138-00',
      });
      merchants.set(name, { name, key: made.test_key, bankAccountId: made.bank_account_id!, secret: '' });
    }
  } finally {
    await db.destroy();
  }
  shop = merchants.get('shop')!;
  plans = merchants.get('plans')!;
  for (const merchant of [shop, plans]) {
    const key = nextKey('webhook');
    const hook = (
      await must(merchant, 'POST', '/v1/webhooks', { url: `${receiverUrl}/${merchant.name}`, description: key }, key)
    ).webhook;
    merchant.secret = hook.secret;
    ledger.webhooks.push({ merchant, id: hook.id });
  }

  const loadStarted = Date.now();
  const endAt = loadStarted + minutes * 60_000;
  let target = await clockOf(plans);
  // A test clock may be at most 20 years ahead of real time.
  const furthest = Date.now() + 19 * 366 * DAY_MS;
  const planLane = async () => {
    while (!stopping && target + WEEK_MS < furthest) {
      try {
        await Promise.all([createSubscription(), createSubscription()]);
        target += WEEK_MS;
        await advanceTo(plans, target);
      } catch (error) {
        problem(`load: ${(error as Error).message}`);
      }
      await sleep(500 + Math.random() * 1000);
    }
  };
  const shopClockLane = async () => {
    while (!stopping) {
      const next = Date.now() + 10_000 + Math.random() * 5000;
      while (!stopping && Date.now() < next) await sleep(200);
      if (stopping) break;
      await sweepShop().catch((error: Error) => problem(`load: ${error.message}`));
    }
  };
  const load = Promise.all([
    ...Array.from({ length: clients }, () => runClient(shopStep)),
    planLane(),
    shopClockLane(),
  ]);
  await killer(endAt);
  await sleep(Math.max(0, endAt - Date.now()));
  stopping = true;
  const loadSeconds = (Date.now() - loadStarted) / 1000;
  await load;
  // Half a week on: every slot of the run is then half a week from the clock's end.
  target += WEEK_MS / 2;
  await advanceTo(plans, target);
  await sweepShop();
  const finishing = (Date.now() - loadStarted) / 1000 - loadSeconds;

  const drained = await drain();
  if (!drained.quiet) problem('the service was still busy 5 minutes after the load ended');
  await checkPresent();
  await checkDoubles();
  await checkConsents();
  await checkSubscriptions();
  await checkClaimedByKilled();
  await checkEvents();
  await checkAudit();

  const c = countsOf;
  const rows: Array<[string, string]> = [
    ['writes acknowledged / present', `${c.writes} / ${c.present}`],
    ['answers lost and sent again', `${stats.lost} (and ${stats.retried5xx} 5xx) of ${stats.calls} calls`],
    ['payments (shop)', `${c.payments}: ${ledger.paid.size} one-off paid, ${ledger.executions.size} executions`],
    ['doubles', String(c.doubles)],
    [
      'one-off payments a kill left claimed',
      `${ledger.claimedByKilled.size}: ${claimedOutcomes.paid} paid, ${claimedOutcomes.notExecuted} not executed, ${claimedOutcomes.unconfirmed} still unconfirmed`,
    ],
    ['consents checked / counters off', `${c.consents} / ${c.consentMismatches}`],
    ['subscription slots / charges', `${c.slots} / ${c.charges} (${ledger.subscriptions.size} subscriptions)`],
    [
      'events / delivered / max per event',
      `${c.events} / ${c.delivered} / ${c.maxDeliveries} (${c.redelivered} more than once; bound ${MAX_DELIVERIES_PER_EVENT})`,
    ],
    [
      'audit: creates checked / chains / records',
      `${c.auditChecked} / ${c.auditChains} / ${c.auditRecords}, every chain verifies unless named below`,
    ],
    ['kills', `${kills} (restarts: ${instances.map((i) => `${i.name} ${i.starts - 1}`).join(', ')})`],
    [
      'drained in',
      `${drained.seconds.toFixed(1)} s${drained.waitedOn.length > 0 ? ` (waiting on ${drained.waitedOn.join(', ')})` : ''}`,
    ],
  ];
  const width = Math.max(...rows.map(([name]) => name.length));
  const ok = problems.length === 0;
  process.stdout.write(
    `chaos: ${loadSeconds.toFixed(0)} s of load on 2 instances (PostgreSQL), ${clients} clients; ${finishing.toFixed(0)} s to finish what was under way\n` +
      `${rows.map(([name, value]) => `  ${name.padEnd(width)}  ${value}`).join('\n')}\n` +
      (ok
        ? 'no loss, no double\n'
        : `FAILED: ${problems.length} problems\n${problems.map((p) => `  ${p}`).join('\n')}\n`),
  );

  const stamp = startedAt.toISOString().slice(0, 16).replace(':', '-');
  fs.mkdirSync(values.results!, { recursive: true });
  const resultFile = path.join(values.results!, `chaos-${stamp}.json`);
  fs.writeFileSync(
    resultFile,
    `${JSON.stringify(
      {
        kind: 'chaos',
        command: `npm run chaos -- ${process.argv.slice(2).join(' ')}`.trim(),
        started_at: `${startedAt.toISOString().slice(0, 16)}Z`,
        ended_at: `${new Date().toISOString().slice(0, 16)}Z`,
        machine: { cpus: os.cpus().length, model: os.cpus()[0]?.model, node: process.version },
        commit: commit(),
        ok,
        results: {
          load_seconds: Math.round(loadSeconds),
          finishing_seconds: Math.round(finishing),
          clients,
          kills,
          writes_acknowledged: c.writes,
          writes_present: c.present,
          answers_lost: stats.lost,
          answers_5xx: stats.retried5xx,
          calls: stats.calls,
          payments: c.payments,
          one_off_paid: ledger.paid.size,
          executions: ledger.executions.size,
          doubles: c.doubles,
          one_off_claimed_by_killed: ledger.claimedByKilled.size,
          one_off_claimed_by_killed_paid: claimedOutcomes.paid,
          one_off_claimed_by_killed_not_executed: claimedOutcomes.notExecuted,
          one_off_claimed_by_killed_unconfirmed: claimedOutcomes.unconfirmed,
          consents_checked: c.consents,
          consent_counters_off: c.consentMismatches,
          subscriptions: ledger.subscriptions.size,
          subscription_slots: c.slots,
          subscription_charges: c.charges,
          events: c.events,
          events_delivered: c.delivered,
          events_delivered_more_than_once: c.redelivered,
          max_deliveries_per_event: c.maxDeliveries,
          audit_creates_checked: c.auditChecked,
          audit_chains: c.auditChains,
          audit_records: c.auditRecords,
          drain_seconds: Math.round(drained.seconds),
        },
        problems,
      },
      null,
      2,
    )}\n`,
  );
  process.stdout.write(`written to ${resultFile}\n`);
  exitCode = ok ? 0 : 1;
} catch (error) {
  process.stderr.write(`chaos: ${(error as Error).stack ?? error}\n`);
} finally {
  stopping = true;
  await Promise.all(instances.map(stopGently));
  await bank?.stop();
  await agent.close();
  receiverServer.closeAllConnections();
  receiverServer.close();
  if (values.keep) process.stderr.write(`chaos: the schema ${schemaName} is kept (--keep)\n`);
  else await admin.query(`drop schema if exists "${schemaName}" cascade`).catch(() => {});
  await admin.end().catch(() => {});
  if (exitCode === 0) fs.rmSync(workDir, { recursive: true, force: true });
  else process.stderr.write(`chaos: the instances' logs are in ${workDir}\n`);
}
process.exit(exitCode);
