import cluster, { type Worker } from 'node:cluster';
import type { Logger } from 'pino';

// The primary of `npm start` with WEB_CONCURRENCY > 1 (PostgreSQL only): it forks that many
// processes of src/main.ts, which share the port through node:cluster, each serving HTTP and, with
// WORKERS, running the job worker and the module runners. Everything they share lives in
// PostgreSQL; the primary serves nothing and holds no connection once they run. It keeps their
// number up, and stops them all on SIGTERM/SIGINT.

/** A process that dies sooner than this after its start counts as failing at start. */
export const QUICK_DEATH_MS = 10_000;
/** This many quick deaths in a row (no process surviving QUICK_DEATH_MS between them) and the primary gives up. */
export const MAX_QUICK_DEATHS = 5;

/** What a cluster process sends the primary once it listens. */
export const LISTENING_MESSAGE = { tono: 'listening' } as const;

export type ClusterOptions = {
  processes: number;
  log: Logger;
  /** Called once, when every process of the first start listens. */
  onListening(): void;
};

export function runCluster({ processes, log, onListening }: ClusterOptions): void {
  const alive = new Set<Worker>();
  const listening = new Set<Worker>();
  let announced = false;
  let stopping = false;
  let exitCode = 0;
  let quickDeaths = 0;

  const stop = (code: number) => {
    if (stopping) return;
    stopping = true;
    exitCode = code;
    if (alive.size === 0) process.exit(exitCode);
    // Each process closes its own runtime on SIGTERM: requests in flight finish, workers stop.
    for (const worker of alive) worker.process.kill('SIGTERM');
  };

  const start = () => {
    const worker = cluster.fork();
    const startedAt = Date.now();
    alive.add(worker);
    // Surviving its start ends a run of quick deaths.
    const survived = setTimeout(() => (quickDeaths = 0), QUICK_DEATH_MS);
    survived.unref();
    worker.on('message', (message: unknown) => {
      if ((message as { tono?: unknown } | null)?.tono !== LISTENING_MESSAGE.tono) return;
      listening.add(worker);
      if (!announced && listening.size === processes) {
        announced = true;
        onListening();
      }
    });
    worker.on('exit', (code, signal) => {
      clearTimeout(survived);
      alive.delete(worker);
      listening.delete(worker);
      const pid = worker.process.pid;
      if (stopping) {
        // A process still starting may end by the signal itself; one that fails to close says so.
        if (code !== 0 && code !== null) {
          log.error({ service_pid: pid, code }, 'a service process did not stop cleanly');
          exitCode = 1;
        }
        if (alive.size === 0) process.exit(exitCode);
        return;
      }
      quickDeaths = Date.now() - startedAt < QUICK_DEATH_MS ? quickDeaths + 1 : 0;
      if (quickDeaths >= MAX_QUICK_DEATHS) {
        log.fatal({ service_pid: pid, code, signal }, 'a service process exited');
        process.stderr.write(
          `tono: service processes keep exiting within ${QUICK_DEATH_MS / 1000} s of starting (${quickDeaths} in a row); stopping\n`,
        );
        stop(1);
        return;
      }
      log.error({ service_pid: pid, code, signal }, 'a service process exited; starting another');
      start();
    });
  };

  for (const signal of ['SIGTERM', 'SIGINT'] as const) {
    process.on(signal, () => {
      if (!stopping) log.info({ signal }, 'stopping');
      stop(0);
    });
  }
  for (let i = 0; i < processes; i += 1) start();
}
