import type { Logger } from 'pino';
import { secretFreeLineWriter } from '../logger.ts';

export type AccessFields = {
  reqId: string;
  merchant_id?: string;
  mode?: string;
  req: { method: string; url: string; remoteAddress: string };
  res: { statusCode: number };
  responseTime: number;
  msg: string;
};

/**
 * Writes a call's access line to the stream of the service's logger, as that logger writes an
 * `info` line with these fields (the message last), without its redaction: the line holds no
 * secret. The fields are written by `JSON.stringify`, which makes the line one string where pino
 * (or a serialiser compiled by fast-json-stringify) joins it from a piece per field: as fast in a
 * loop, and a fraction of the garbage (docs/performance.md). Null when the logger is not at
 * `info`, or writes its time otherwise than as milliseconds since the epoch.
 */
export function accessLineWriter(log: Logger): ((fields: AccessFields) => void) | null {
  return secretFreeLineWriter(log);
}
