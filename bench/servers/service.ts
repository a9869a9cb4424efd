// The service under test in its own process, on a temporary SQLite database.
// SIGUSR2 prints (as one JSON line) the event loop's delay and the garbage collector's pauses since
// the last SIGUSR2, and starts counting afresh: what a load's tail latency is made of; and where
// the process's memory is now (the JS heap, and what lies outside it).
import { monitorEventLoopDelay, PerformanceObserver } from 'node:perf_hooks';
import { startService } from '../lib.ts';

const service = await startService(JSON.parse(process.env.BENCH_ENV ?? '{}'));
const loopDelay = monitorEventLoopDelay({ resolution: 1 });
loopDelay.enable();
let pauses: number[] = [];
new PerformanceObserver((list) => {
  for (const entry of list.getEntries()) pauses.push(entry.duration);
}).observe({ entryTypes: ['gc'] });

process.on('SIGUSR2', () => {
  const sorted = pauses.sort((a, b) => a - b);
  const ms = (ns: number) => Math.round(ns / 1e4) / 100;
  process.stdout.write(
    `${JSON.stringify({
      loop_delay_ms: { p50: ms(loopDelay.percentile(50)), p99: ms(loopDelay.percentile(99)), max: ms(loopDelay.max) },
      gc_pause_ms: {
        count: sorted.length,
        p99: Math.round((sorted[Math.floor(sorted.length * 0.99)] ?? 0) * 100) / 100,
        max: Math.round((sorted.at(-1) ?? 0) * 100) / 100,
        total: Math.round(sorted.reduce((a, b) => a + b, 0)),
      },
      memory_mb: Object.fromEntries(
        Object.entries(process.memoryUsage()).map(([name, bytes]) => [name, Math.round(bytes / 1048576)]),
      ),
    })}\n`,
  );
  loopDelay.reset();
  pauses = [];
});
// Printed last, once the signal handlers are in place.
process.on('SIGTERM', () => {
  service.close().then(() => process.exit(0));
});
process.stdout.write(
  `${JSON.stringify({ url: service.url, testKey: service.testKey, liveKey: service.liveKey, bankAccountId: service.bankAccountId })}\n`,
);
