import { randomUUID } from 'node:crypto';
import { setTimeout as sleep } from 'node:timers/promises';
import { Agent, request, type Dispatcher } from 'undici';
import type { BankFailure } from './bank-connector.ts';
import { INTERACTION_ID_HEADER } from '../../shared/open-banking.wire.ts';

// HTTP to banks: one keep-alive pool, a deadline per call, and retries only where a repeat is
// harmless (reads, and writes carrying an idempotency key). An outcome we cannot know becomes a
// BankFailure with unknown: true, never an exception, and never a refusal (docs/banks.md, "When a
// bank misbehaves"):
// - a timeout, a lost connection, a 5xx;
// - 408 and 429 (busy: retried after Retry-After, at most BUSY_WAIT_MAX_MS, then unknown) and 409
//   (the standard has none: a bank still working on the idempotency key);
// - a redirect (a bank's address that moved: the operator's to fix, never the payer's refusal);
// - any refusal after an attempt of the same call whose answer was lost: the lost one may have
//   been taken, and a bank that checks its consent or limits before its keys refuses the repeat
//   of a payment it made.
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

/** The longest a call waits for a busy bank's Retry-After before answering unknown (the caller's job retries later). */
export const BUSY_WAIT_MAX_MS = 2_000;

/** How long a Retry-After header (seconds, or an HTTP date) asks to wait, or null. */
export function retryAfterMs(header: string | undefined, now = Date.now()): number | null {
  if (!header) return null;
  const seconds = Number(header);
  if (Number.isFinite(seconds) && seconds >= 0) return seconds * 1000;
  const at = Date.parse(header);
  return Number.isFinite(at) ? Math.max(0, at - now) : null;
}

const isBusy = (status: number) => status === 408 || status === 429;

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
    const path = new URL(call.url).pathname;
    const logged = { interaction_id: interactionId, bank_call: `${call.method} ${path}`, ...call.trace };
    let last: BankReply = unknownFailure('network_error', 'No attempt was made');
    /** An attempt of this call that may have reached the bank ended without its answer. */
    let lost = false;
    let wait = 0;
    for (let attempt = 0; attempt < attempts; attempt++) {
      if (attempt > 0) await sleep(wait);
      last = await this.once(call, interactionId);
      const again = !last.ok ? last.reason === 'network_error' : last.status >= 500 || isBusy(last.status);
      if (!last.ok || last.status >= 500) lost = true;
      if (!again || attempt + 1 === attempts) break;
      const asked = last.ok && isBusy(last.status) ? retryAfterMs(last.headers['retry-after']) : null;
      if (asked !== null && asked > BUSY_WAIT_MAX_MS) break;
      wait = Math.max(this.backoffMs * 2 ** attempt, asked ?? 0);
      this.log?.warn(
        { ...logged, attempt: attempt + 1, ...(last.ok ? { status: last.status } : { reason: last.reason }) },
        'bank call attempt failed; trying again',
      );
    }
    if (last.ok) this.log?.info({ ...logged, status: last.status }, 'bank call');
    else this.log?.warn({ ...logged, reason: last.reason }, 'bank call failed');
    return last.ok ? unknownUnlessAnswered(last, lost) : last;
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
          // A 401 is read by its status alone: the caller fetches a new client token.
          if (response.statusCode < 500 && response.statusCode !== 401)
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

/** A reply as the caller may read it: an answer, or unknown when the bank's word cannot be taken for one. */
function unknownUnlessAnswered(reply: BankReply & { ok: true }, lost: boolean): BankReply {
  const { status } = reply;
  if (status >= 500) return unknownFailure('bank_unavailable', `The bank answered ${status}`);
  if (isBusy(status)) return unknownFailure('bank_busy', `The bank answered ${status}: busy, try again later`);
  if (status === 409)
    return unknownFailure('bank_unavailable', 'The bank answered 409: it is still working on this idempotency key');
  if (status >= 300 && status < 400)
    return unknownFailure('bank_redirected', `The bank answered ${status}: its address in BANKS_FILE may have moved`);
  if (lost && status >= 400)
    return unknownFailure(
      'bank_unavailable',
      `The bank answered ${status} after an attempt whose answer was lost, and which it may have taken`,
    );
  return reply;
}

export function unknownFailure(reason: string, message: string): BankFailure {
  return { ok: false, reason, message, unknown: true };
}
