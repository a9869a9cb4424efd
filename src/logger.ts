import pino, { type Logger, type LoggerOptions } from 'pino';
import pretty from 'pino-pretty';

// JSON lines for anything that reads logs (a file, a pipe, a log shipper); readable lines for a
// person at a terminal. The choice follows where stdout goes, so `npm start` in a terminal is
// readable and `npm start | tee service.log` or a container keeps JSON.

export type LogFormat = 'pretty' | 'json';

/** pretty only for a terminal; LOG_FORMAT=json|pretty overrides. */
export function logFormatFor(stdoutIsTty: boolean, override?: string): LogFormat {
  if (override === 'json' || override === 'pretty') return override;
  return stdoutIsTty ? 'pretty' : 'json';
}

export function createLogger(options: LoggerOptions, format: LogFormat = logFormatFor(process.stdout.isTTY === true, process.env.LOG_FORMAT)): Logger {
  if (format === 'json') return pino(options);
  // In-process stream rather than a transport thread: a terminal session needs no extra thread,
  // and a line is written before the process can exit.
  return pino(options, pretty({ translateTime: 'SYS:HH:MM:ss.l', ignore: 'pid,hostname', sync: true }));
}
