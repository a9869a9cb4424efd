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
 * Writes a call's access line, an `info` line of the service's logger without its redaction (the
 * line holds no secret; see secretFreeLineWriter). Null when the logger is not at `info`.
 */
export function accessLineWriter(log: Logger): ((fields: AccessFields) => void) | null {
  return secretFreeLineWriter(log);
}
