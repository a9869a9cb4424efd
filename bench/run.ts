// npm run bench [-- --json] [-- --duration 10] [-- --only name]: measures a bare Fastify server and
// the service in the same run and reports each figure as a ratio to the bare route.
// npm run bench -- --scale: only the figures on a full database beside an empty one
// (bench/scale.bench.ts), which need no bare baseline; the other runs leave them out.
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { parseArgs } from 'node:util';
import { failedCalls, load, warmLoad, warmUp, type BenchContext, type BenchResult, type LoadOptions } from './lib.ts';
import { runtimeFlagsOfStart, spawnServer, withCpu } from './process.ts';

const { values } = parseArgs({
  options: {
    json: { type: 'boolean' },
    duration: { type: 'string', default: '10' },
    only: { type: 'string' },
    scale: { type: 'boolean' },
  },
});
const durationSec = Number(values.duration);
const connections = 50;

const { ctx, results, stop } = values.scale ? withoutBaselines() : await withBaselines();

/** The context of the scale figures: each is a ratio to the same figure on an empty database. */
function withoutBaselines(): { ctx: BenchContext; results: BenchResult[]; stop(): Promise<void> } {
  const none = Number.NaN;
  return {
    ctx: {
      durationSec,
      connections,
      baseline: { get_rps: none, post_rps: none, stack_limit_get_rps: none, bank_call_rps: none },
      bracketed: () => Promise.reject(new Error('no baselines in a --scale run')),
    },
    results: [],
    stop: async () => {},
  };
}

async function withBaselines(): Promise<{ ctx: BenchContext; results: BenchResult[]; stop(): Promise<void> }> {
  // The bank stand-in of bank_call_baseline runs in its own process, as the sandbox bank does in execute_payment.
  const bankStub = await spawnServer('bench/servers/bank-stub.ts', {}, undefined, runtimeFlagsOfStart());
  const bare = await spawnServer(
    'bench/servers/bare.ts',
    { BANK_URL: (bankStub.info as { url: string }).url },
    undefined,
    runtimeFlagsOfStart(),
  );
  const {
    url: bareUrl,
    stackLimitPath,
    stackLimitKey,
  } = bare.info as { url: string; stackLimitPath: string; stackLimitKey: string };
  const getOptions: LoadOptions = { url: `${bareUrl}/get`, connections, durationSec };
  const baseGet = await warmLoad(getOptions);
  const baseBody = JSON.stringify({
    bank_account_id: 'bankaccount_x',
    amount: '12.50 NZD',
    message: 'Bench coffee',
    reference: 'BENCH-1',
  });
  const postOptions: LoadOptions = {
    url: `${bareUrl}/echo`,
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: baseBody,
    connections,
    durationSec,
  };
  const basePost = await warmLoad(postOptions);
  let bankCallCounter = 0;
  const baselineOptions: Record<'stack_limit_get' | 'bank_call_baseline', LoadOptions> = {
    stack_limit_get: {
      url: `${bareUrl}${stackLimitPath}`,
      headers: { authorization: `Bearer ${stackLimitKey}` },
      connections,
      durationSec,
    },
    bank_call_baseline: {
      url: `${bareUrl}/bank-call`,
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      bodyFor: () => JSON.stringify({ idempotency_key: `baseline-${bankCallCounter++}`, amount_cents: 100 }),
      connections,
      durationSec,
    },
  };
  /** A baseline load, refused when any of its calls failed: a ratio to it would mean nothing. */
  async function baselineLoad(name: keyof typeof baselineOptions) {
    const figure = await load(baselineOptions[name]);
    if (failedCalls(figure) > 0) throw new Error(`${name}: ${figure.errors} errors, ${figure.non2xx} non-2xx replies`);
    return figure;
  }
  // Warmed once: every later load of a baseline finds its server as warm as the first.
  await warmUp(baselineOptions.stack_limit_get);
  await warmUp(baselineOptions.bank_call_baseline);
  const stackLimitGet = await baselineLoad('stack_limit_get');
  const bankCall = await baselineLoad('bank_call_baseline');

  const ctx: BenchContext = {
    durationSec,
    connections,
    baseline: {
      get_rps: baseGet.rps,
      post_rps: basePost.rps,
      stack_limit_get_rps: stackLimitGet.rps,
      bank_call_rps: bankCall.rps,
    },
    async bracketed(baseline, measures) {
      // baseline, first figure, baseline, second figure, baseline: each load between two figures
      // serves both.
      const loads = [await withCpu([bare.pid], () => baselineLoad(baseline))];
      const results = [];
      for (const measure of measures) {
        results.push(await measure());
        loads.push(await withCpu([bare.pid], () => baselineLoad(baseline)));
      }
      return results.map((result, i) => ({
        result,
        baselineRps: (loads[i].rps + loads[i + 1].rps) / 2,
        around: [loads[i].rps, loads[i + 1].rps] as [number, number],
        baselineCpuUs: Math.round((loads[i].cpu_us_per_call[0] + loads[i + 1].cpu_us_per_call[0]) / 2),
      }));
    },
  };
  const results: BenchResult[] = [
    { name: 'fastify_get (baseline)', rps: baseGet.rps, p99_ms: baseGet.p99_ms, ratio: 1 },
    { name: 'fastify_echo_post (baseline)', rps: basePost.rps, p99_ms: basePost.p99_ms, ratio: 1 },
    {
      name: 'stack_limit_get',
      rps: stackLimitGet.rps,
      p99_ms: stackLimitGet.p99_ms,
      ratio: 1,
      note: 'baseline: two primary-key reads in node:sqlite, the 1.4 kB reply',
    },
    {
      name: 'bank_call_baseline',
      rps: bankCall.rps,
      p99_ms: bankCall.p99_ms,
      ratio: 1,
      note: 'baseline: one keep-alive HTTP call, one durable SQLite insert',
    },
  ];
  return {
    ctx,
    results,
    async stop() {
      await bare.stop();
      await bankStub.stop();
    },
  };
}

const benchDir = path.dirname(new URL(import.meta.url).pathname);
const files = fs
  .readdirSync(benchDir)
  .filter((f) => f.endsWith('.bench.ts'))
  .sort();
for (const file of files) {
  if (values.only && !file.startsWith(values.only)) continue;
  if ((file === 'scale.bench.ts') !== Boolean(values.scale)) continue;
  const module = (await import(path.join(benchDir, file))) as {
    default: (ctx: BenchContext) => Promise<BenchResult[]>;
  };
  try {
    results.push(...(await module.default(ctx)));
  } catch (error) {
    results.push({ name: file.replace('.bench.ts', ''), note: `failed: ${(error as Error).message}` });
  }
}

await stop();

if (values.json) {
  process.stdout.write(
    `${JSON.stringify({ machine: { cpus: os.cpus().length, model: os.cpus()[0]?.model, node: process.version }, results })}\n`,
  );
} else {
  const fmt = (n: number | undefined, digits = 0) => (n === undefined ? '' : n.toFixed(digits));
  const rows = results.map((r) => [
    r.name,
    fmt(r.rps),
    fmt(r.p99_ms, 1),
    fmt(r.ratio, 2),
    fmt(r.per_second),
    r.budget === undefined ? '' : `${r.budget}: ${r.met ? 'met' : 'missed'}`,
    r.note ?? '',
  ]);
  const header = ['name', 'rps', 'p99 ms', 'ratio', 'per second', 'budget', 'note'];
  const widths = header.map((h, i) => Math.max(h.length, ...rows.map((row) => row[i].length)));
  const line = (cells: string[]) => cells.map((c, i) => c.padEnd(widths[i])).join('  ');
  process.stdout.write(
    `${line(header)}\n${widths.map((w) => '-'.repeat(w)).join('  ')}\n${rows.map(line).join('\n')}\n`,
  );
  process.stdout.write(
    `\n${os.cpus().length} × ${os.cpus()[0]?.model}, Node ${process.version}, ${durationSec} s per figure, ${connections} connections\n`,
  );
}
process.exit(0);
