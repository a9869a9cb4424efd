import { spawn, type ChildProcess } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import readline from 'node:readline';

export type SpawnedServer = {
  pid: number;
  info: Record<string, unknown>;
  /** The next line the server prints after its first. */
  nextLine(): Promise<string>;
  stop(): Promise<void>;
};

/**
 * Node flags from BENCH_SERVICE_FLAGS, for each service and sandbox bank the bench starts
 * (`--cpu-prof --cpu-prof-dir=/tmp/prof` profiles them; Node refuses those in NODE_OPTIONS).
 */
function benchFlags(): string[] {
  return process.env.BENCH_SERVICE_FLAGS?.split(' ').filter(Boolean) ?? [];
}

/**
 * The Node and V8 flags `npm start` gives the service (package.json: the heap caps, no
 * allocation-site pretenuring), so the bench measures the service as it runs, and the flags of
 * BENCH_SERVICE_FLAGS.
 */
export function serviceNodeFlags(): string[] {
  return [...nodeFlagsOf('start'), ...benchFlags()];
}

const packageRoot = new URL('../', import.meta.url);
const scriptOf = (name: string): string =>
  (JSON.parse(fs.readFileSync(new URL('package.json', packageRoot), 'utf8')).scripts as Record<string, string>)[name]!;

/**
 * The V8 flags `npm start` gives the service other than its heap caps (no allocation-site
 * pretenuring), for the baselines' servers: the stack they stand for runs with them too.
 */
export function runtimeFlagsOfStart(): string[] {
  return nodeFlagsOf('start').filter((flag) => !/^--max-[a-z-]+-size=/.test(flag));
}

/** The Node and V8 flags an npm script gives node (in NODE_OPTIONS or on its command line). */
function nodeFlagsOf(script: string): string[] {
  return scriptOf(script).match(/--[a-z][a-z-]*(?:=[^\s"]+)?/g) ?? [];
}

/**
 * The environment `npm start` gives node with a default (`NAME=${NAME:-value}` in package.json: the
 * compile cache's folder, glibc's arena cap), for every server the bench starts, as `npm start`
 * would have it: a variable set in the bench's own environment wins, as it does for `npm start`.
 */
export function envOfStart(): Record<string, string> {
  const env: Record<string, string> = {};
  for (const [, name, fallback] of scriptOf('start').matchAll(/([A-Z][A-Z0-9_]*)=\$\{\1:-([^}]+)\}/g)) {
    // npm runs the script in the package's folder, so a relative folder is relative to it, not to the bench's working directory.
    env[name!] =
      process.env[name!] ?? (name === 'NODE_COMPILE_CACHE' ? path.resolve(packageRoot.pathname, fallback!) : fallback!);
  }
  return env;
}

/**
 * Runs a bench server in its own process (so the load generator does not share its CPU) and waits
 * for its ready line: by default the first line, as JSON; `readyLine` returns null for a line
 * that is not the one (the rest of the output is read and dropped).
 */
export async function spawnServer(
  script: string,
  env: Record<string, string> = {},
  readyLine: (line: string) => Record<string, unknown> | null = (line) => JSON.parse(line),
  nodeFlags: string[] = [],
): Promise<SpawnedServer> {
  const child: ChildProcess = spawn(process.execPath, [...nodeFlags, script], {
    stdio: ['ignore', 'pipe', 'inherit'],
    env: { ...process.env, ...envOfStart(), ...env },
  });
  const lines = readline.createInterface({ input: child.stdout! });
  const info = await new Promise<Record<string, unknown>>((resolve, reject) => {
    child.once('exit', (code) => reject(new Error(`${script} exited with ${code}`)));
    const onLine = (line: string) => {
      const ready = readyLine(line);
      if (ready === null) return;
      lines.off('line', onLine);
      resolve(ready);
    };
    lines.on('line', onLine);
  });
  const later: string[] = [];
  const waiting: Array<(line: string) => void> = [];
  lines.on('line', (line) => {
    const reader = waiting.shift();
    if (reader) reader(line);
    else later.push(line);
  });
  return {
    pid: child.pid!,
    info,
    nextLine: () =>
      later.length > 0 ? Promise.resolve(later.shift()!) : new Promise((resolve) => waiting.push(resolve)),
    stop: () =>
      new Promise((resolve) => {
        if (child.exitCode !== null) return resolve();
        child.once('exit', () => resolve());
        child.kill('SIGTERM');
        setTimeout(() => child.kill('SIGKILL'), 5000).unref();
      }),
  };
}

/** Samples a process's resident set size every 100 ms; stop() returns the peak in MB. */
export function sampleRss(pid: number): { stop(): number } {
  let peakKb = 0;
  const read = () => {
    try {
      const match = /VmRSS:\s+(\d+) kB/.exec(fs.readFileSync(`/proc/${pid}/status`, 'utf8'));
      if (match) peakKb = Math.max(peakKb, Number(match[1]));
    } catch {
      // the process may have ended
    }
  };
  read();
  const timer = setInterval(read, 100);
  return {
    stop() {
      clearInterval(timer);
      read();
      return peakKb / 1024;
    },
  };
}

/** PostgreSQL's own processes on this machine (its backends and its writers), by their command name. */
export function postgresPids(): number[] {
  return fs
    .readdirSync('/proc')
    .filter((entry) => /^\d+$/.test(entry))
    .filter((pid) => {
      try {
        return fs.readFileSync(`/proc/${pid}/comm`, 'utf8').trim() === 'postgres';
      } catch {
        return false;
      }
    })
    .map(Number);
}

/** CPU seconds (user and system) a process has used so far; 0 once it has ended. */
export function cpuSecondsOf(pid: number): number {
  try {
    const stat = fs.readFileSync(`/proc/${pid}/stat`, 'utf8');
    // utime and stime are fields 14 and 15, counted from the pid; the command name may hold spaces.
    const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
    return (Number(fields[11]) + Number(fields[12])) / 100;
  } catch {
    return 0;
  }
}

/**
 * The sandbox bank as its own process (`npm run sandbox-bank`), as a bank is another system, on a
 * temporary database, sending payers back to a service on `servicePort`. `env` is what the service
 * needs to use it (PORT and SANDBOX_BANK_URL).
 */
export async function spawnSandboxBank(
  servicePort: number,
  bankPort: number,
): Promise<{ env: Record<string, string>; pid: number; stop(): Promise<void> }> {
  const dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'tono-bench-bank-'));
  const bank = await spawnServer(
    'src/sandbox-bank/main.ts',
    {
      PORT: String(bankPort),
      HOST: '127.0.0.1',
      DATA_DIR: dataDir,
      LOG_LEVEL: 'warn',
      SANDBOX_REDIRECT_URI: `http://127.0.0.1:${servicePort}/pay/return`,
    },
    (line) => ({ line }),
    [...nodeFlagsOf('sandbox-bank'), ...benchFlags()],
  );
  return {
    env: { PORT: String(servicePort), SANDBOX_BANK_URL: `http://127.0.0.1:${bankPort}` },
    pid: bank.pid,
    async stop() {
      await bank.stop();
      fs.rmSync(dataDir, { recursive: true, force: true });
    },
  };
}

/**
 * Runs `run` and returns what it returned with the CPU time (user and system) the processes `pids`
 * spent meanwhile, in microseconds per request it made: a figure that moves less than the rate
 * when other machines share the cores.
 */
export async function withCpu<T extends { requests: number }>(
  pids: number[],
  run: () => Promise<T>,
): Promise<T & { cpu_us_per_call: number[] }> {
  const before = pids.map(cpuSecondsOf);
  const result = await run();
  const spent = pids.map((pid, i) => cpuSecondsOf(pid) - before[i]);
  return {
    ...result,
    cpu_us_per_call: spent.map((seconds) => Math.round((seconds * 1e6) / Math.max(1, result.requests))),
  };
}

/**
 * Waits until the processes spend less than a twentieth of a core (read each half second), or
 * `maxMs` passes: the work a load left behind (its jobs, a checkpoint) must not run during the
 * next figure, and least of all during a baseline that a ratio divides by.
 */
export async function untilIdle(pids: number[], maxMs = 30_000): Promise<void> {
  const deadline = Date.now() + maxMs;
  let last = pids.map(cpuSecondsOf);
  while (Date.now() < deadline) {
    await new Promise((resolve) => setTimeout(resolve, 500));
    const now = pids.map(cpuSecondsOf);
    const busiest = Math.max(...now.map((seconds, i) => seconds - last[i]));
    last = now;
    if (busiest < 0.025) return;
  }
}
