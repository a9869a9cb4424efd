// npm run soak [-- --minutes 10] [-- --clients 16]: the service in its own process (with `npm start`'s
// heap settings) under a mixed load of creates, reads, one-off payments and recurring executions,
// hosted payment pages, merchant dashboard pages (signed in) and payer pages, and hostile traffic
// (unknown API keys, wrong passwords, code requests for made-up emails), with its resident memory
// sampled throughout, to tell a leak from a heap that levels off.
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { parseArgs } from 'node:util';
import { Agent, fetch as undiciFetch } from 'undici';
import { recurringToken } from './lib.ts';
import { serviceNodeFlags, spawnServer } from './process.ts';

const { values } = parseArgs({
  options: {
    minutes: { type: 'string', default: '10' },
    clients: { type: 'string', default: '16' },
    json: { type: 'boolean' },
  },
});
const minutes = Number(values.minutes);
const clients = Number(values.clients);

function rssMb(pid: number): number {
  const match = /VmRSS:\s+(\d+) kB/.exec(fs.readFileSync(`/proc/${pid}/status`, 'utf8'));
  return match ? Number(match[1]) / 1024 : 0;
}

const dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'tono-soak-'));
const service = await spawnServer(
  'bench/servers/service.ts',
  { BENCH_ENV: JSON.stringify({ DATA_DIR: dataDir }) },
  undefined,
  serviceNodeFlags(),
);
const { url, testKey, bankAccountId } = service.info as { url: string; testKey: string; bankAccountId: string };
const headers = { authorization: `Bearer ${testKey}`, 'content-type': 'application/json' };
const counts = { create: 0, read: 0, pay: 0, execute: 0, page: 0, dashboard: 0, payer: 0, hostile: 0, errors: 0 };

/**
 * Hostile calls come from another loopback address, as an attacker's would: the service locks that
 * address out, not the merchant's own calls from 127.0.0.1.
 */
const elsewhere = new Agent({ localAddress: '127.0.0.2' });

/** A page fetch that must answer one of `expected`; the body is read and dropped. */
async function page(pathname: string, expected: number[], init: Parameters<typeof undiciFetch>[1] = {}) {
  const response = await undiciFetch(`${url}${pathname}`, { redirect: 'manual', ...init });
  await response.arrayBuffer();
  if (!expected.includes(response.status)) throw new Error(`${init.method ?? 'GET'} ${pathname}: ${response.status}`);
  return response;
}

const cookiesOf = (response: { headers: Headers }) =>
  response.headers
    .getSetCookie()
    .map((line) => line.split(';')[0])
    .join('; ');
const csrfOf = (html: string) => /name="csrf" value="([^"]+)"/.exec(html)?.[1] ?? '';
const form = (fields: Record<string, string>, cookie: string) => ({
  method: 'POST',
  body: new URLSearchParams(fields).toString(),
  headers: { 'content-type': 'application/x-www-form-urlencoded', origin: url, cookie },
});

/** A merchant signed in to the dashboard, as a browser holds it: its session cookie. */
async function dashboardSession(): Promise<string> {
  const login = await fetch(`${url}/dashboard/login`);
  const cookie = cookiesOf(login);
  const done = await page(
    '/dashboard/login',
    [303],
    form({ email: 'bench@example.com', password: 'bench-password', csrf: csrfOf(await login.text()) }, cookie),
  );
  return cookiesOf(done);
}

/** The payer sign-in form's cookie and token, for code requests. */
async function payerForm(): Promise<{ cookie: string; csrf: string }> {
  const start = await fetch(`${url}/customer`);
  return { cookie: cookiesOf(start), csrf: csrfOf(await start.text()) };
}

async function call(method: string, pathname: string, body?: unknown): Promise<any> {
  const response = await fetch(`${url}${pathname}`, {
    method,
    headers,
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  const json = (await response.json()) as any;
  if (!response.ok) throw new Error(`${method} ${pathname}: ${response.status} ${JSON.stringify(json)}`);
  return json;
}

try {
  const { token } = await recurringToken(url, testKey, bankAccountId, 'soak@example.com');

  const ids: string[] = [];
  const paymentIds: string[] = [];
  const endAt = Date.now() + minutes * 60_000;
  const session = await dashboardSession();
  const payer = await payerForm();
  const login = await fetch(`${url}/dashboard/login`);
  const loginForm = { cookie: cookiesOf(login), csrf: csrfOf(await login.text()) };
  const dashboardPaths = (n: number) => {
    const request = ids[n % Math.max(1, ids.length)];
    const payment = paymentIds[n % Math.max(1, paymentIds.length)];
    return (
      [
        '/dashboard/test',
        '/dashboard/test/payments',
        '/dashboard/test/requests',
        request && `/dashboard/test/requests/${request}`,
        payment && `/dashboard/test/payments/${payment}`,
        '/dashboard/test/customers',
        '/dashboard/test/events',
        `/dashboard/test/payments?q=SOAK-${n % 1000}`,
      ][n % 8] ?? '/dashboard/test'
    );
  };
  let sequence = 0;
  const step = async () => {
    const n = sequence++;
    switch (n % 8) {
      case 0: {
        const created = await call('POST', '/v1/requests', {
          bank_account_id: bankAccountId,
          amount: '12.50 NZD',
          message: `Soak ${n}`,
          reference: `SOAK-${n}`,
        });
        if (ids.length < 10_000) ids.push(created.request.id);
        counts.create++;
        break;
      }
      case 1:
        if (ids.length > 0) await call('GET', `/v1/requests/${ids[n % ids.length]}`);
        counts.read++;
        break;
      case 2: {
        const created = await call('POST', '/v1/requests', {
          bank_account_id: bankAccountId,
          amount: '3.00 NZD',
          message: `Soak pay ${n}`,
        });
        const paid = await call('POST', `/v1/test-helpers/requests/${created.request.id}/pay`, {});
        if (paymentIds.length < 10_000) paymentIds.push(paid.payment.id);
        counts.pay++;
        break;
      }
      case 3:
        await call('POST', '/v1/payments', { token, amount: '1.00 NZD', idempotency_key: `soak-${n}` });
        counts.execute++;
        break;
      case 4:
        if (ids.length > 0) await page(`/pay/${ids[n % ids.length]}`, [200]);
        counts.page++;
        break;
      case 5:
        await page(dashboardPaths(n >> 3), [200], { headers: { cookie: session } });
        counts.dashboard++;
        break;
      case 6:
        // the payer's sign-in page, then a code asked for a made-up email (refused once the address is over its limit)
        await page('/customer', [200]);
        await page('/customer/code', [200, 429], {
          ...form({ email: `someone${n}@example.com`, csrf: payer.csrf }, payer.cookie),
          dispatcher: elsewhere,
        });
        counts.payer++;
        break;
      default:
        // hostile: an unknown API key, then a wrong dashboard password (both limited per address)
        await page('/v1/requests/request_01JZZZZZZZZZZZZZZZZZZZZZZZ', [401, 429], {
          headers: { authorization: `Bearer sk_test_guess${n}` },
          dispatcher: elsewhere,
        });
        await page('/dashboard/login', [400, 429], {
          ...form(
            { email: `guess${n % 50}@example.com`, password: `guess ${n}`, csrf: loginForm.csrf },
            loginForm.cookie,
          ),
          dispatcher: elsewhere,
        });
        counts.hostile++;
    }
  };
  const worker = async () => {
    while (Date.now() < endAt) {
      await step().catch((error: Error) => {
        if (counts.errors++ < 5) process.stderr.write(`soak: ${error.message}\n`);
      });
    }
  };

  const samples: Array<{ minute: number; rss: number }> = [];
  const started = Date.now();
  const sampler = setInterval(
    () => samples.push({ minute: (Date.now() - started) / 60_000, rss: rssMb(service.pid) }),
    5_000,
  );
  // Once a minute, where the memory is: the JS heap, or outside it (bench/servers/service.ts).
  const heap: Array<Record<string, number>> = [];
  const heapSampler = setInterval(() => {
    process.kill(service.pid, 'SIGUSR2');
    service.nextLine().then(
      (line) => heap.push((JSON.parse(line) as { memory_mb: Record<string, number> }).memory_mb),
      () => {},
    );
  }, 60_000);
  await Promise.all(Array.from({ length: clients }, worker));
  clearInterval(sampler);
  clearInterval(heapSampler);

  const perMinute = Array.from({ length: Math.ceil(minutes) }, (_, m) => {
    const inMinute = samples.filter((s) => s.minute >= m && s.minute < m + 1).map((s) => s.rss);
    return {
      minute: m + 1,
      peak_mb: Math.round(Math.max(...inMinute)),
      mean_mb: Math.round(inMinute.reduce((a, b) => a + b, 0) / inMinute.length),
      heap_total_mb: heap[m]?.heapTotal ?? null,
      heap_used_mb: heap[m]?.heapUsed ?? null,
      external_mb: heap[m]?.external ?? null,
    };
  });
  const half = perMinute.slice(Math.floor(perMinute.length / 2));
  const summary = {
    minutes,
    clients,
    ...counts,
    peak_mb: Math.max(...perMinute.map((m) => m.peak_mb)),
    // Growth across the second half: near zero when the heap has levelled off.
    second_half_growth_mb: half.length > 1 ? half[half.length - 1].mean_mb - half[0].mean_mb : 0,
    per_minute: perMinute,
  };
  if (values.json) {
    process.stdout.write(`${JSON.stringify(summary)}\n`);
  } else {
    const column = (value: number | null, width: number) => String(value ?? '').padStart(width);
    process.stdout.write(
      `minute  peak MB  mean MB  JS heap MB (used)  external MB\n${perMinute
        .map(
          (m) =>
            `${column(m.minute, 6)}  ${column(m.peak_mb, 7)}  ${column(m.mean_mb, 7)}  ${column(m.heap_total_mb, 10)} (${column(m.heap_used_mb, 4)})  ${column(m.external_mb, 11)}`,
        )
        .join('\n')}\n`,
    );
    process.stdout.write(
      `\n${counts.create} creates, ${counts.read} reads, ${counts.pay} one-off payments, ${counts.execute} executions, ` +
        `${counts.page} payment pages, ${counts.dashboard} dashboard pages, ${counts.payer} payer sign-ins, ${counts.hostile} hostile pairs, ${counts.errors} errors; ` +
        `peak ${summary.peak_mb} MB, second-half growth ${summary.second_half_growth_mb} MB\n`,
    );
  }
} finally {
  await elsewhere.close();
  await service.stop();
  fs.rmSync(dataDir, { recursive: true, force: true });
}
