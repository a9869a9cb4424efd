import { randomUUID } from 'node:crypto';
import { setTimeout as sleep } from 'node:timers/promises';
import { Agent, request, type Dispatcher } from 'undici';
import type { BankFailure } from './bank-connector.ts';
import { INTERACTION_ID_HEADER } from '../../shared/open-banking.wire.ts';

// HTTP to banks: one keep-alive pool, a deadline per call, and retries only where a repeat is
// harmless (reads, and writes carrying an idempotency key). An outcome we cannot know (timeout,
// connection lost, 5xx) becomes a BankFailure with unknown: true, never an exception.
//
// Every call carries x-fapi-interaction-id, a fresh UUID kept across its retries, so one call can
// be found in the bank's logs and ours (the standard's banks echo it in their answer).

export type BankHttpOptions = {
  /** Deadline for one attempt, headers and body included. */
  timeoutMs?: number;
  /** Extra attempts for retryable calls after a network error or a 5xx. */
  retries?: number;
  /** First backoff; doubles per retry. */
  backoffMs?: number;
  /** Mutual TLS: the client certificate and key (PEM), and the CA to trust when the bank's is private. */
  tls?: { cert?: string | Buffer; key?: string | Buffer; ca?: string | Buffer };
};

export type BankCall = {
  method: 'GET' | 'POST' | 'DELETE';
  url: string;
  headers?: Record<string, string>;
  /** JSON body, or a form (token endpoint). */
  json?: unknown;
  form?: Record<string, string>;
  /** Safe to repeat: a read, or a write the bank deduplicates (x-idempotency-key). */
  retryable: boolean;
  timeoutMs?: number;
  /** Carried into the log line of the call, e.g. { payment_id }. */
  trace?: Record<string, string>;
};

export type BankReply =
  | { ok: true; status: number; body: any; headers: Record<string, string>; interactionId: string }
  | BankFailure;

/** One request and its answer as they went over the wire, for observers (the contract test). */
export type BankExchange = {
  method: string;
  url: string;
  requestHeaders: Record<string, string>;
  /** Parsed JSON, or the form's fields. */
  requestBody: unknown;
  status: number;
  responseHeaders: Record<string, string>;
  responseBody: unknown;
};

const observers = new Set<(exchange: BankExchange) => void>();

/** Sees every exchange with a bank that gets an answer, from every BankHttp; returns the way to stop. */
export function observeBankExchanges(observer: (exchange: BankExchange) => void): () => void {
  observers.add(observer);
  return () => observers.delete(observer);
}

export { INTERACTION_ID_HEADER };

/** Where a call's outcome is logged: the service's logger, or nothing. */
export type BankLog = { info(object: object, message: string): void; warn(object: object, message: string): void };

export class BankHttp {
  readonly agent: Agent;
  private readonly timeoutMs: number;
  private readonly retries: number;
  private readonly backoffMs: number;

  private readonly log: BankLog | undefined;

  constructor(options: BankHttpOptions & { log?: BankLog } = {}) {
    this.log = options.log;
    const tls = options.tls;
    this.agent = new Agent({
      keepAliveTimeout: 10_000,
      keepAliveMaxTimeout: 60_000,
      connections: 128,
      ...(tls && {
        connect: {
          ...(tls.cert && { cert: tls.cert }),
          ...(tls.key && { key: tls.key }),
          ...(tls.ca && { ca: tls.ca }),
        },
      }),
    });
    this.timeoutMs = options.timeoutMs ?? 10_000;
    this.retries = options.retries ?? 2;
    this.backoffMs = options.backoffMs ?? 100;
  }

  async send(call: BankCall): Promise<BankReply> {
    const attempts = call.retryable ? this.retries + 1 : 1;
    const interactionId = randomUUID();
    let last: BankReply = unknownFailure('network_error', 'No attempt was made');
    for (let attempt = 0; attempt < attempts; attempt++) {
      if (attempt > 0) await sleep(this.backoffMs * 2 ** (attempt - 1));
      last = await this.once(call, interactionId);
      const again = !last.ok ? last.reason === 'network_error' : last.status >= 500;
      if (!again) break;
    }
    const path = new URL(call.url).pathname;
    const logged = { interaction_id: interactionId, bank_call: `${call.method} ${path}`, ...call.trace };
    if (last.ok) this.log?.info({ ...logged, status: last.status }, 'bank call');
    else this.log?.warn({ ...logged, reason: last.reason }, 'bank call failed');
    if (last.ok && last.status >= 500) {
      return unknownFailure('bank_unavailable', `The bank answered ${last.status}`);
    }
    return last;
  }

  private async once(call: BankCall, interactionId: string): Promise<BankReply> {
    const headers: Record<string, string> = {
      accept: 'application/json',
      [INTERACTION_ID_HEADER]: interactionId,
      ...call.headers,
    };
    let body: string | undefined;
    if (call.form) {
      headers['content-type'] = 'application/x-www-form-urlencoded';
      body = new URLSearchParams(call.form).toString();
    } else if (call.json !== undefined) {
      headers['content-type'] = 'application/json';
      body = JSON.stringify(call.json);
    }
    const timeoutMs = call.timeoutMs ?? this.timeoutMs;
    // A timer cleared once the answer is read, rather than AbortSignal.timeout(): that one fires
    // after every call, answered or not, and makes a DOMException with its stack each time.
    const deadline = new AbortController();
    const timer = setTimeout(
      () => deadline.abort(new DOMException(`no answer within ${timeoutMs} ms`, 'TimeoutError')),
      timeoutMs,
    ).unref();
    try {
      const response: Dispatcher.ResponseData = await request(call.url, {
        method: call.method,
        headers,
        body,
        dispatcher: this.agent,
        signal: deadline.signal,
      });
      const text = await response.body.text();
      let parsed: unknown;
      if (text) {
        try {
          parsed = JSON.parse(text);
        } catch {
          if (response.statusCode < 500)
            return unknownFailure('bank_unavailable', `The bank answered ${response.statusCode} without JSON`);
        }
      }
      const responseHeaders: Record<string, string> = {};
      for (const [name, value] of Object.entries(response.headers)) {
        if (value !== undefined) responseHeaders[name] = Array.isArray(value) ? value.join(', ') : value;
      }
      if (observers.size > 0) {
        const exchange: BankExchange = {
          method: call.method,
          url: call.url,
          requestHeaders: headers,
          requestBody: call.form ?? call.json,
          status: response.statusCode,
          responseHeaders,
          responseBody: parsed,
        };
        for (const observer of observers) observer(exchange);
      }
      return { ok: true, status: response.statusCode, body: parsed, headers: responseHeaders, interactionId };
    } catch (error) {
      const name = (error as Error).name;
      if (name === 'TimeoutError' || name === 'AbortError') {
        return unknownFailure('timeout', `No answer from the bank within ${timeoutMs} ms`);
      }
      return unknownFailure('network_error', `Could not reach the bank: ${(error as Error).message}`);
    } finally {
      clearTimeout(timer);
    }
  }

  async close(): Promise<void> {
    await this.agent.close();
  }
}

export function unknownFailure(reason: string, message: string): BankFailure {
  return { ok: false, reason, message, unknown: true };
}
