import type { FastifyBaseLogger, FastifyServerOptions } from 'fastify';
import type { Bindings, ChildLoggerOptions, Level, Logger } from 'pino';

/**
 * The logger of one call, made when a line is first written through it.
 *
 * Fastify gives every call a child of the service's logger bound to its request id, and the
 * API-key check adds the merchant and the mode. Making a pino child serialises its bindings at
 * once, through the service log's redaction: 2.5–5.5 µs a call (docs/performance.md), for a
 * logger that most calls never write to (their access line is written apart). Here the
 * bindings wait until a line needs them; the line is the same as the eager child's.
 */
class RequestLogger {
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

/**
 * Fastify's `childLoggerFactory`: a lazily made child for calls at the service's own level, an
 * eager one for a route that sets its own level or serialisers.
 */
export const lazyRequestLogger: NonNullable<FastifyServerOptions['childLoggerFactory']> = (logger, bindings, options) => {
  if (options.level !== undefined || options.serializers !== undefined) return logger.child(bindings, options);
  return new RequestLogger(logger as unknown as Logger, bindings) as unknown as FastifyBaseLogger;
};
