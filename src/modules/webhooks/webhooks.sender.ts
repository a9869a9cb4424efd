import type { Logger } from 'pino';
import { request } from 'undici';
import type { Mode } from '../../shared/mode.ts';
import type { Reach } from '../../shared/network.ts';
import { outboundAgent, refuseLiteralBeyond, type Lookup } from '../../shared/outbound.ts';

// The HTTP side of a delivery attempt: one POST, never throws, reports what happened.

export type SendResult = {
  statusCode: number | null;
  /** First 1 kB of the reply. */
  responseBody: string | null;
  /** Timeout or network error when there is no reply. */
  error: string | null;
  latencyMs: number;
};

export type Sender = {
  send(
    target: { url: string; live: boolean },
    body: string,
    headers: Record<string, string>,
    timeoutMs: number,
  ): Promise<SendResult>;
  close(): Promise<void>;
};

const REPLY_KEEP_BYTES = 1024;
const REPLY_READ_BYTES = 64 * 1024;

function describeError(error: unknown, timeoutMs: number): string {
  const err = error as { name?: string; code?: string; message?: string; cause?: { code?: string; message?: string } };
  if (
    err?.name === 'TimeoutError' ||
    err?.name === 'AbortError' ||
    err?.code === 'UND_ERR_HEADERS_TIMEOUT' ||
    err?.code === 'UND_ERR_BODY_TIMEOUT'
  ) {
    return `timeout: no complete reply within ${timeoutMs} ms`;
  }
  const code = err?.cause?.code ?? err?.code;
  const message = err?.cause?.message ?? err?.message ?? String(error);
  return (code && !message.includes(code) ? `${code}: ${message}` : message).slice(0, 1000);
}

/**
 * undici with keep-alive; per-origin connections bounded so one endpoint cannot take every socket.
 * Each connection's address is checked against its mode's reach (docs/security.md), so live and
 * test deliveries go through agents of their own.
 */
export function createUndiciSender(options: {
  reach: Record<Mode, Reach>;
  connectionsPerOrigin: number;
  lookup?: Lookup;
  log?: Logger;
}): Sender {
  const agentOf = (mode: Mode) =>
    outboundAgent(
      { reach: options.reach[mode], lookup: options.lookup },
      {
        keepAliveTimeout: 30_000,
        keepAliveMaxTimeout: 60_000,
        connections: options.connectionsPerOrigin,
        pipelining: 1,
      },
    );
  const agents = { live: agentOf('live'), test: agentOf('test') };
  const sender: Sender = {
    async send(target, body, headers, timeoutMs) {
      const started = performance.now();
      const mode: Mode = target.live ? 'live' : 'test';
      try {
        refuseLiteralBeyond(options.reach[mode], target.url);
        const reply = await request(target.url, {
          method: 'POST',
          headers,
          body,
          dispatcher: agents[mode],
          signal: AbortSignal.timeout(timeoutMs),
          headersTimeout: timeoutMs,
          bodyTimeout: timeoutMs,
        });
        const chunks: Buffer[] = [];
        let read = 0;
        for await (const chunk of reply.body) {
          if (read < REPLY_KEEP_BYTES) chunks.push(chunk as Buffer);
          read += (chunk as Buffer).length;
          if (read >= REPLY_READ_BYTES) {
            reply.body.destroy();
            break;
          }
        }
        const kept = Buffer.concat(chunks).subarray(0, REPLY_KEEP_BYTES).toString('utf8');
        return {
          statusCode: reply.statusCode,
          responseBody: kept,
          error: null,
          latencyMs: Math.round(performance.now() - started),
        };
      } catch (error) {
        return {
          statusCode: null,
          responseBody: null,
          error: describeError(error, timeoutMs),
          latencyMs: Math.round(performance.now() - started),
        };
      }
    },
    async close() {
      await Promise.all([agents.live.close(), agents.test.close()]);
    },
  };
  return options.log ? loggingAttempts(sender, options.log) : sender;
}

/** One debug line per attempt: where it went (origin only: a path may carry a merchant's token), and what came back. */
export function loggingAttempts(sender: Sender, log: Logger): Sender {
  return {
    async send(target, body, headers, timeoutMs) {
      const result = await sender.send(target, body, headers, timeoutMs);
      log.debug(
        {
          event_id: headers['x-service-event-id'],
          attempt: Number(headers['x-service-delivery-attempt']),
          origin: originOf(target.url),
          status_code: result.statusCode,
          error: result.error,
          latency_ms: result.latencyMs,
        },
        'webhook attempt',
      );
      return result;
    },
    close: () => sender.close(),
  };
}

function originOf(url: string): string {
  try {
    return new URL(url).origin;
  } catch {
    return 'invalid url';
  }
}
