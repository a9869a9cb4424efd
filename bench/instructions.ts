// Instructions a create costs the service, counted by valgrind's callgrind rather than timed: a count
// barely moves with what else the machine runs, so two builds can be compared to a few percent on a
// shared machine where their rates drift more than that. The service (bench/servers/service.ts, with
// `npm start`'s flags) runs under callgrind; WARM creates at 50 connections compile its code, the
// counters are zeroed, CREATES more are counted, and the counts are read per thread. The main thread
// is the event loop, which bounds the rate; the others are V8's compiler and collector helpers and
// the WAL's fsync. `npm run bench:instructions [-- WARM CREATES]` (default 5000 2000; valgrind needed).
import { execFileSync, spawn } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import readline from 'node:readline';
import { envOfStart, serviceNodeFlags } from './process.ts';

const [warm = 5000, creates = 2000] = process.argv.slice(2).map(Number);
const folder = fs.mkdtempSync(path.join(os.tmpdir(), 'tono-callgrind-'));
const out = path.join(folder, 'callgrind.out');
const service = spawn(
  'valgrind',
  [
    '--tool=callgrind',
    `--callgrind-out-file=${out}`,
    '--separate-threads=yes',
    // V8 writes machine code into its heap and rewrites it; valgrind must notice.
    '--smc-check=all-non-file',
    process.execPath,
    ...serviceNodeFlags(),
    'bench/servers/service.ts',
  ],
  { stdio: ['ignore', 'pipe', 'ignore'], env: { ...process.env, ...envOfStart() } },
);
const info = await new Promise<{ url: string; testKey: string; bankAccountId: string }>((resolve, reject) => {
  service.once('error', reject);
  service.once('exit', (code) => reject(new Error(`valgrind exited with ${code}`)));
  readline.createInterface({ input: service.stdout! }).once('line', (line) => resolve(JSON.parse(line)));
});
const { default: autocannon } = await import('autocannon');
const createMany = (amount: number) =>
  autocannon({
    url: `${info.url}/v1/requests`,
    method: 'POST',
    connections: 50,
    amount,
    headers: { authorization: `Bearer ${info.testKey}`, 'content-type': 'application/json' },
    body: JSON.stringify({
      bank_account_id: info.bankAccountId,
      amount: '12.50 NZD',
      message: 'Bench coffee',
      reference: 'BENCH-1',
    }),
  });
const settle = () => new Promise((resolve) => setTimeout(resolve, 2000));

await createMany(warm);
await settle();
execFileSync('callgrind_control', ['--zero', String(service.pid)], { stdio: 'ignore' });
const counted = await createMany(creates);
await settle();
execFileSync('callgrind_control', ['--dump', String(service.pid)], { stdio: 'ignore' });
await settle();
service.kill('SIGKILL');

// One file per thread, callgrind.out.<dump>-<thread>; thread 01 is the main thread.
const perThread = fs
  .readdirSync(folder)
  .filter((name) => /^callgrind\.out\.\d+-\d+$/.test(name))
  .map((name) => {
    const total = /^(?:summary|totals): (\d+)/m.exec(fs.readFileSync(path.join(folder, name), 'utf8'));
    return { thread: name.split('-').at(-1)!, instructions: Number(total?.[1] ?? 0) };
  });
fs.rmSync(folder, { recursive: true, force: true });
const perCreate = (n: number) => Math.round(n / counted.requests.total);
console.log(
  JSON.stringify({
    creates: counted.requests.total,
    non2xx: counted.non2xx,
    main_thread_instructions_a_create: perCreate(perThread.find((t) => t.thread === '01')?.instructions ?? 0),
    all_threads_instructions_a_create: perCreate(perThread.reduce((sum, t) => sum + t.instructions, 0)),
  }),
);
