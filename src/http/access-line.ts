import pino, { type Logger } from 'pino';

export type AccessFields = {
  reqId: string;
  merchant_id?: string;
  mode?: string;
  req: { method: string; url: string; remoteAddress: string };
  res: { statusCode: number };
  responseTime: number;
  msg: string;
};

type PinoInternals = Record<symbol, unknown>;

/**
 * Writes a call's access line to the stream of the service's logger, as that logger writes an
 * `info` line with these fields (its level, time, pid and hostname, then the fields in the order
 * they are given, the message last), without its redaction: the line holds no secret. The fields
 * are written by `JSON.stringify`, which makes the line one string where pino (or a serialiser
 * compiled by fast-json-stringify) joins it from a piece per field: as fast in a loop, and a
 * fraction of the garbage (docs/performance.md). Null when the logger is not at `info`, or writes
 * its time otherwise than as milliseconds since the epoch.
 */
export function accessLineWriter(log: Logger): ((fields: AccessFields) => void) | null {
  if (!log.isLevelEnabled('info')) return null;
  const internals = log as unknown as PinoInternals;
  if (internals[pino.symbols.timeSym] !== pino.stdTimeFunctions.epochTime) return null;
  const stream = internals[pino.symbols.streamSym] as pino.DestinationStream;
  const bindings = internals[pino.symbols.chindingsSym] as string;
  const level = log.levels.values.info!;
  return (fields) => stream.write(`{"level":${level},"time":${Date.now()}${bindings},${JSON.stringify(fields).slice(1)}\n`);
}
