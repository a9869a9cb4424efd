// npm run soak [-- --minutes 10] [-- --clients 16]: the service in its own process (with `npm start`'s
// heap settings) under a mixed load of creates, reads, one-off payments and recurring executions,
// with its resident memory sampled throughout, to tell a leak from a heap that levels off.
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { parseArgs } from 'node:util';
import { recurringToken } from './lib.ts';
import { serviceNodeFlags, spawnServer } from './process.ts';

const { values } = parseArgs({ options: { minutes: { type: 'string', default: '10' }, clients: { type: 'string', default: '16' }, json: { type: 'boolean' } } });
const minutes = Number(values.minutes);
const clients = Number(values.clients);

function rssMb(pid: number): number {
  const match = /VmRSS:\s+(\d+) kB/.exec(fs.readFileSync(`/proc/${pid}/status`, 'utf8'));
  return match ? Number(match[1]) / 1024 : 0;
}

const dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'tono-soak-'));
const service = await spawnServer('bench/servers/service.ts', { BENCH_ENV: JSON.stringify({ DATA_DIR: dataDir }) }, undefined, serviceNodeFlags());
const { url, testKey, bankAccountId } = service.info as { url: string; testKey: string; bankAccountId: string };
const headers = { authorization: `Bearer ${testKey}`, 'content-type': 'application/json' };
const counts = { create: 0, read: 0, pay: 0, execute: 0, errors: 0 };

async function call(method: string, pathname: string, body?: unknown): Promise<any> {
  const response = await fetch(`${url}${pathname}`, { method, headers, body: body === undefined ? undefined : JSON.stringify(body) });
  const json = (await response.json()) as any;
  if (!response.ok) throw new Error(`${method} ${pathname}: ${response.status} ${JSON.stringify(json)}`);
  return json;
}

try {
  const { token } = await recurringToken(url, testKey, bankAccountId, 'soak@example.com');

  const ids: string[] = [];
  const endAt = Date.now() + minutes * 60_000;
  let sequence = 0;
  const step = async () => {
    const n = sequence++;
    switch (n % 4) {
      case 0: {
        const created = await call('POST', '/v1/requests', { bank_account_id: bankAccountId, amount: '12.50 NZD', message: `Soak ${n}`, reference: `SOAK-${n}` });
        if (ids.length < 10_000) ids.push(created.request.id);
        counts.create++;
        break;
      }
      case 1:
        if (ids.length > 0) await call('GET', `/v1/requests/${ids[n % ids.length]}`);
        counts.read++;
        break;
      case 2: {
        const created = await call('POST', '/v1/requests', { bank_account_id: bankAccountId, amount: '3.00 NZD', message: `Soak pay ${n}` });
        await call('POST', `/v1/test-helpers/requests/${created.request.id}/pay`, {});
        counts.pay++;
        break;
      }
      default:
        await call('POST', '/v1/payments', { token, amount: '1.00 NZD', idempotency_key: `soak-${n}` });
        counts.execute++;
    }
  };
  const worker = async () => {
    while (Date.now() < endAt) await step().catch(() => counts.errors++);
  };

  const samples: Array<{ minute: number; rss: number }> = [];
  const started = Date.now();
  const sampler = setInterval(() => samples.push({ minute: (Date.now() - started) / 60_000, rss: rssMb(service.pid) }), 5_000);
  await Promise.all(Array.from({ length: clients }, worker));
  clearInterval(sampler);

  const perMinute = Array.from({ length: Math.ceil(minutes) }, (_, m) => {
    const inMinute = samples.filter((s) => s.minute >= m && s.minute < m + 1).map((s) => s.rss);
    return { minute: m + 1, peak_mb: Math.round(Math.max(...inMinute)), mean_mb: Math.round(inMinute.reduce((a, b) => a + b, 0) / inMinute.length) };
  });
  const half = perMinute.slice(Math.floor(perMinute.length / 2));
  const summary = {
    minutes, clients, ...counts,
    peak_mb: Math.max(...perMinute.map((m) => m.peak_mb)),
    // Growth across the second half: near zero when the heap has levelled off.
    second_half_growth_mb: half.length > 1 ? half[half.length - 1].mean_mb - half[0].mean_mb : 0,
    per_minute: perMinute,
  };
  if (values.json) {
    process.stdout.write(`${JSON.stringify(summary)}\n`);
  } else {
    process.stdout.write(`minute  peak MB  mean MB\n${perMinute.map((m) => `${String(m.minute).padStart(6)}  ${String(m.peak_mb).padStart(7)}  ${String(m.mean_mb).padStart(7)}`).join('\n')}\n`);
    process.stdout.write(`\n${counts.create} creates, ${counts.read} reads, ${counts.pay} one-off payments, ${counts.execute} executions, ${counts.errors} errors; `
      + `peak ${summary.peak_mb} MB, second-half growth ${summary.second_half_growth_mb} MB\n`);
  }
} finally {
  await service.stop();
  fs.rmSync(dataDir, { recursive: true, force: true });
}
