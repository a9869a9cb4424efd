import build from 'fast-json-stringify';
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

/** The fields in the order pino writes them, the message (`msg`) last; none `required`, which fast-json-stringify would write first. */
const fieldsThenMessage = build({
  type: 'object',
  properties: {
    reqId: { type: 'string' },
    merchant_id: { type: 'string' },
    mode: { type: 'string' },
    req: {
      type: 'object',
      properties: { method: { type: 'string' }, url: { type: 'string' }, remoteAddress: { type: 'string' } },
    },
    res: { type: 'object', properties: { statusCode: { type: 'integer' } } },
    responseTime: { type: 'number' },
    msg: { type: 'string' },
  },
});

type PinoInternals = Record<symbol, unknown>;

/**
 * Writes a call's access line to the stream of the service's logger, as that logger writes an
 * `info` line with these fields (its level, time, pid and hostname, then the fields, then the
 * message), without its redaction: the line holds no secret. The fields are serialised by a
 * function compiled for their shape; pino, which looks at each value's type as it goes, took
 * about twice as long over the same line (docs/performance.md). Null when the logger is not at
 * `info`, or writes its time otherwise than as milliseconds since the epoch.
 */
export function accessLineWriter(log: Logger): ((fields: AccessFields) => void) | null {
  if (!log.isLevelEnabled('info')) return null;
  const internals = log as unknown as PinoInternals;
  if (internals[pino.symbols.timeSym] !== pino.stdTimeFunctions.epochTime) return null;
  const stream = internals[pino.symbols.streamSym] as pino.DestinationStream;
  const bindings = internals[pino.symbols.chindingsSym] as string;
  const level = log.levels.values.info!;
  return (fields) => stream.write(`{"level":${level},"time":${Date.now()}${bindings},${fieldsThenMessage(fields).slice(1)}\n`);
}
