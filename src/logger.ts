import pino, { type Bindings, type ChildLoggerOptions, type Level, type Logger, type LoggerOptions } from 'pino';
import { createRequire } from 'node:module';
import type PinoPretty from 'pino-pretty';

// JSON lines for anything that reads logs (a file, a pipe, a log shipper); readable lines for a
// person at a terminal. The choice follows where stdout goes, so `npm start` in a terminal is
// readable and `npm start | tee service.log` or a container keeps JSON.

export type LogFormat = 'pretty' | 'json';

/** pretty only for a terminal; LOG_FORMAT=json|pretty (checked by loadConfig, Config.logFormat) overrides. */
export function logFormatFor(stdoutIsTty: boolean, override?: LogFormat | null): LogFormat {
  return override ?? (stdoutIsTty ? 'pretty' : 'json');
}

/** The most a write to a pipe may hold and still reach it whole, between other writers' lines. */
const PIPE_BUF = 4096;
const unwritten = new Set<() => void>();

/**
 * JSON lines to `dest` (stdout by default), the lines of one turn of the event loop in one write.
 * A write is a system call, and at LOG_LEVEL=info, where every call logs a line, one write a line
 * cost a read about a tenth of its CPU (docs/performance.md). Writes stay synchronous and in
 * order; each holds whole lines and at most PIPE_BUF bytes (a line longer than that goes alone),
 * so the lines of processes sharing a pipe never interleave. What is left is written when the
 * process exits; a SIGKILL loses at most the lines of the turn it interrupts. A line is encoded
 * once, straight into the turn's buffer, rather than measured, joined to a string of the turn's
 * lines and encoded again when they are written.
 */
export function jsonLines(
  dest: number | string = 1,
): pino.DestinationStream & { flushSync(): void; flush(done?: () => void): void } {
  const out = pino.destination({ dest, sync: true, contentMode: 'buffer' } as Parameters<typeof pino.destination>[0]);
  let pending = Buffer.allocUnsafe(PIPE_BUF);
  let pendingBytes = 0;
  let queued = false;
  const flushSync = () => {
    queued = false;
    if (pendingBytes === 0) return;
    const lines = pending.subarray(0, pendingBytes);
    // The stream may hold on to the bytes it was given; the next lines go to a buffer of their own.
    pending = Buffer.allocUnsafe(PIPE_BUF);
    pendingBytes = 0;
    out.write(lines as unknown as string);
  };
  if (unwritten.size === 0)
    process.once('exit', () => {
      for (const flush of unwritten) flush();
    });
  unwritten.add(flushSync);
  return {
    write(line: string) {
      // A UTF-16 code unit is at most three bytes of UTF-8, so only a line that may not fit is measured.
      if (line.length * 3 > PIPE_BUF - pendingBytes) {
        const bytes = Buffer.byteLength(line);
        if (pendingBytes + bytes > PIPE_BUF) flushSync();
        if (bytes > PIPE_BUF) {
          out.write(Buffer.from(line) as unknown as string);
          return;
        }
      }
      pendingBytes += pending.write(line, pendingBytes);
      if (!queued) {
        queued = true;
        setImmediate(flushSync);
      }
    },
    flushSync,
    flush(done) {
      flushSync();
      done?.();
    },
  };
}

export function createLogger(
  options: LoggerOptions,
  format: LogFormat = logFormatFor(process.stdout.isTTY === true),
): Logger {
  if (format === 'json') return pino(options, jsonLines());
  // In-process stream rather than a transport thread: a terminal session needs no extra thread,
  // and a line is written before the process can exit.
  const pretty = createRequire(import.meta.url)('pino-pretty') as typeof PinoPretty;
  return pino(options, pretty({ translateTime: 'SYS:HH:MM:ss.l', ignore: 'pid,hostname', sync: true }));
}

type PinoInternals = Record<symbol, unknown>;

/**
 * Writes `info` lines with these fields to the stream of `log`, as `log` writes them (its level,
 * time, pid, hostname and bindings, then the fields in their order; the last should be `msg`), but
 * without its redaction: only for lines that can hold no secret. The fields are one
 * `JSON.stringify`, where pino's redaction copies and walks every line (about half of a line's
 * cost, docs/performance.md). Null when `log` is not at `info`, or writes its time otherwise than
 * as milliseconds since the epoch.
 */
export function secretFreeLineWriter(log: Logger): ((fields: object) => void) | null {
  if (!log.isLevelEnabled('info')) return null;
  const internals = log as unknown as PinoInternals;
  if (internals[pino.symbols.timeSym] !== pino.stdTimeFunctions.epochTime) return null;
  const stream = internals[pino.symbols.streamSym] as pino.DestinationStream;
  const bindings = internals[pino.symbols.chindingsSym] as string;
  const level = log.levels.values.info!;
  return (fields) =>
    stream.write(`{"level":${level},"time":${Date.now()}${bindings},${JSON.stringify(fields).slice(1)}\n`);
}

/** `log`, for lines that hold no secret: its `info` lines go through secretFreeLineWriter. */
export function secretFreeLog(log: Logger): {
  info(fields: object, msg: string): void;
  warn(fields: object, msg: string): void;
} {
  const write = secretFreeLineWriter(log);
  return {
    info: write ? (fields, msg) => write({ ...fields, msg }) : (fields, msg) => log.info(fields, msg),
    warn: (fields, msg) => log.warn(fields, msg),
  };
}

/**
 * A child logger made when a line is first written through it.
 *
 * Making a pino child serialises its bindings at once, through the service log's redaction:
 * 2.5–5.5 µs (docs/performance.md), for a logger that most HTTP calls and job runs never write
 * to (a call's access line is written apart; a job logs at debug). Here the bindings wait until a
 * line needs them; the line is the same as the eager child's.
 */
class LazyChild {
  readonly #parent: Logger;
  readonly #bindings: Bindings;
  #added: Bindings[] = [];
  #made: Logger | null = null;

  constructor(parent: Logger, bindings: Bindings) {
    this.#parent = parent;
    this.#bindings = bindings;
  }

  #logger(): Logger {
    if (this.#made) return this.#made;
    const made = this.#parent.child(this.#bindings);
    for (const bindings of this.#added) made.setBindings(bindings);
    return (this.#made = made);
  }

  get level(): string {
    return this.#made ? this.#made.level : this.#parent.level;
  }

  set level(level: string) {
    this.#logger().level = level;
  }

  get msgPrefix(): string | undefined {
    return this.#parent.msgPrefix;
  }

  isLevelEnabled(level: string): boolean {
    return (this.#made ?? this.#parent).isLevelEnabled(level);
  }

  bindings(): Bindings {
    return this.#made ? this.#made.bindings() : Object.assign(this.#parent.bindings(), this.#bindings, ...this.#added);
  }

  /** Bindings added before the first line are added to the child when it is made, in their order. */
  setBindings(bindings: Bindings): void {
    if (this.#made) this.#made.setBindings(bindings);
    else this.#added.push(bindings);
  }

  child(bindings: Bindings, options?: ChildLoggerOptions): Logger {
    return this.#logger().child(bindings, options);
  }

  flush(callback?: (error?: Error) => void): void {
    this.#parent.flush(callback);
  }

  fatal(...args: unknown[]): void {
    this.#write('fatal', args);
  }

  error(...args: unknown[]): void {
    this.#write('error', args);
  }

  warn(...args: unknown[]): void {
    this.#write('warn', args);
  }

  info(...args: unknown[]): void {
    this.#write('info', args);
  }

  debug(...args: unknown[]): void {
    this.#write('debug', args);
  }

  trace(...args: unknown[]): void {
    this.#write('trace', args);
  }

  silent(): void {}

  #write(level: Level, args: unknown[]): void {
    // A line below the level makes no child.
    if (!this.isLevelEnabled(level)) return;
    const logger = this.#logger() as unknown as Record<Level, (...line: unknown[]) => void>;
    logger[level](...args);
  }
}

/** A child of `parent` with `bindings`, made when a line is first written through it (see LazyChild). */
export function lazyChild(parent: Logger, bindings: Bindings): Logger {
  return new LazyChild(parent, bindings) as unknown as Logger;
}
