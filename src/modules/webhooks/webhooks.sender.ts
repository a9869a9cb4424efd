import dns from 'node:dns';
import { Agent, request } from 'undici';
import { isNonPublicAddress } from './url-policy.ts';

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
  send(target: { url: string; live: boolean }, body: string, headers: Record<string, string>, timeoutMs: number): Promise<SendResult>;
  close(): Promise<void>;
};

const REPLY_KEEP_BYTES = 1024;
const REPLY_READ_BYTES = 64 * 1024;

type LookupCallback = (err: NodeJS.ErrnoException | null, address: string | dns.LookupAddress[], family?: number) => void;

/** A lookup that refuses non-public addresses, so a live endpoint cannot be re-pointed at our network by DNS. */
function publicOnlyLookup(hostname: string, options: dns.LookupOptions, callback: LookupCallback): void {
  dns.lookup(hostname, options as dns.LookupAllOptions, (err, address: any, family?: number) => {
    if (err) return callback(err, address, family);
    const addresses: string[] = Array.isArray(address) ? address.map((a: dns.LookupAddress) => a.address) : [address];
    if (addresses.some(isNonPublicAddress)) {
      const refused = Object.assign(new Error(`${hostname} resolves to a non-public address`), { code: 'EADDRNOTPUBLIC' });
      return callback(refused, address, family);
    }
    callback(null, address, family);
  });
}

function describeError(error: unknown, timeoutMs: number): string {
  const err = error as { name?: string; code?: string; message?: string; cause?: { code?: string; message?: string } };
  if (err?.name === 'TimeoutError' || err?.name === 'AbortError' || err?.code === 'UND_ERR_HEADERS_TIMEOUT' || err?.code === 'UND_ERR_BODY_TIMEOUT') {
    return `timeout: no complete reply within ${timeoutMs} ms`;
  }
  const code = err?.cause?.code ?? err?.code;
  const message = err?.cause?.message ?? err?.message ?? String(error);
  return (code && !message.includes(code) ? `${code}: ${message}` : message).slice(0, 1000);
}

/** undici with keep-alive; per-origin connections bounded so one endpoint cannot take every socket. */
export function createUndiciSender(options: { allowPrivate: boolean; connectionsPerOrigin: number }): Sender {
  const agentOptions = { keepAliveTimeout: 30_000, keepAliveMaxTimeout: 60_000, connections: options.connectionsPerOrigin, pipelining: 1 };
  const agent = new Agent(agentOptions);
  const liveAgent = options.allowPrivate ? agent : new Agent({ ...agentOptions, connect: { lookup: publicOnlyLookup as any } });
  return {
    async send(target, body, headers, timeoutMs) {
      const started = performance.now();
      try {
        const reply = await request(target.url, {
          method: 'POST',
          headers,
          body,
          dispatcher: target.live ? liveAgent : agent,
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
        return { statusCode: reply.statusCode, responseBody: kept, error: null, latencyMs: Math.round(performance.now() - started) };
      } catch (error) {
        return { statusCode: null, responseBody: null, error: describeError(error, timeoutMs), latencyMs: Math.round(performance.now() - started) };
      }
    },
    async close() {
      await agent.close();
      if (liveAgent !== agent) await liveAgent.close();
    },
  };
}
