import { flushCompileCache } from 'node:module';
import type { Config } from './config.ts';
import { createRuntime, type Runtime } from './runtime.ts';
import { SecretKeyError } from './store/secret-key.ts';

// One serving process: the whole service when it runs alone, or one process of a cluster
// (src/cluster.ts). Start-up failures end the process with one line on stderr, no stack trace.

/** The one line a failed start prints (the key, or the database), then exit 1. */
export function exitOnStartFailure(error: Error): never {
  process.stderr.write(
    error instanceof SecretKeyError
      ? `tono: ${error.message}\n`
      : `tono: could not open the database: ${error.message}\n`,
  );
  process.exit(1);
}

/** The runtime, or exit 1 with one line. */
export async function openRuntime(config: Config, options: { prepareStore: boolean }): Promise<Runtime> {
  return createRuntime(config, { prepareStore: options.prepareStore }).catch(exitOnStartFailure);
}

/**
 * SIGTERM and SIGINT, and in a cluster process the primary going away, close the runtime (requests
 * in flight finish, workers stop) and exit 0. Installed before the runtime exists: a stop that
 * comes earlier exits at once, as nothing is served or claimed until the runtime is handed over
 * (the worker starts in the same turn of the event loop that hands it over).
 */
export function closeOnStop(options: { inCluster: boolean }): { attach(runtime: Runtime): void } {
  let runtime: Runtime | null = null;
  let stopping = false;
  const stop = (reason: string) => {
    if (stopping) return;
    stopping = true;
    if (!runtime) process.exit(0);
    runtime.app.log.info({ reason }, 'stopping');
    runtime.close().then(
      () => process.exit(0),
      () => process.exit(1),
    );
  };
  for (const signal of ['SIGTERM', 'SIGINT'] as const) process.on(signal, () => stop(signal));
  // A cluster process whose primary died (SIGKILL, say) would otherwise run workers unsupervised.
  if (options.inCluster) process.on('disconnect', () => stop('primary exited'));
  return {
    attach(value) {
      runtime = value;
    },
  };
}

/** Listens on HOST:PORT (shared by every process of a cluster), or closes the runtime and exits 1. */
export async function listenOrExit(runtime: Runtime, config: Config): Promise<void> {
  try {
    await runtime.app.listen({ port: config.port, host: config.host });
  } catch (error) {
    process.stderr.write(`tono: cannot listen on ${config.host}:${config.port}: ${(error as Error).message}\n`);
    await runtime.close().catch(() => {});
    process.exit(1);
  }
  // Everything the service loads at start is loaded now: its compiled code (and the TypeScript
  // stripped of its types) is written to the compile cache now rather than at exit, which a
  // SIGKILL never reaches (docs/configuration.md, "Memory and start-up").
  flushCompileCache();
}
