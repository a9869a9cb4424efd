import { setTimeout as sleep } from 'node:timers/promises';
import { Agent, request, type Dispatcher } from 'undici';
import type { BankFailure } from './bank-connector.ts';

// HTTP to banks: one keep-alive pool, a deadline per call, and retries only where a repeat is
// harmless (reads, and writes carrying an idempotency key). An outcome we cannot know (timeout,
// connection lost, 5xx) becomes a BankFailure with unknown: true, never an exception.

export type BankHttpOptions = {
  /** Deadline for one attempt, headers and body included. */
  timeoutMs?: number;
  /** Extra attempts for retryable calls after a network error or a 5xx. */
  retries?: number;
  /** First backoff; doubles per retry. */
  backoffMs?: number;
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
};

export type BankReply = { ok: true; status: number; body: any } | BankFailure;

export class BankHttp {
  readonly agent: Agent;
  private readonly timeoutMs: number;
  private readonly retries: number;
  private readonly backoffMs: number;

  constructor(options: BankHttpOptions = {}) {
    this.agent = new Agent({ keepAliveTimeout: 10_000, keepAliveMaxTimeout: 60_000, connections: 128 });
    this.timeoutMs = options.timeoutMs ?? 10_000;
    this.retries = options.retries ?? 2;
    this.backoffMs = options.backoffMs ?? 100;
  }

  async send(call: BankCall): Promise<BankReply> {
    const attempts = call.retryable ? this.retries + 1 : 1;
    let last: BankReply = unknownFailure('network_error', 'No attempt was made');
    for (let attempt = 0; attempt < attempts; attempt++) {
      if (attempt > 0) await sleep(this.backoffMs * 2 ** (attempt - 1));
      last = await this.once(call);
      const again = !last.ok ? last.reason === 'network_error' : last.status >= 500;
      if (!again) break;
    }
    if (last.ok && last.status >= 500) {
      return unknownFailure('bank_unavailable', `The bank answered ${last.status}`);
    }
    return last;
  }

  private async once(call: BankCall): Promise<BankReply> {
    const headers: Record<string, string> = { accept: 'application/json', ...call.headers };
    let body: string | undefined;
    if (call.form) {
      headers['content-type'] = 'application/x-www-form-urlencoded';
      body = new URLSearchParams(call.form).toString();
    } else if (call.json !== undefined) {
      headers['content-type'] = 'application/json';
      body = JSON.stringify(call.json);
    }
    const timeoutMs = call.timeoutMs ?? this.timeoutMs;
    try {
      const response: Dispatcher.ResponseData = await request(call.url, {
        method: call.method,
        headers,
        body,
        dispatcher: this.agent,
        signal: AbortSignal.timeout(timeoutMs),
      });
      const text = await response.body.text();
      let parsed: unknown = undefined;
      if (text) {
        try {
          parsed = JSON.parse(text);
        } catch {
          if (response.statusCode < 500) return unknownFailure('bank_unavailable', `The bank answered ${response.statusCode} without JSON`);
        }
      }
      return { ok: true, status: response.statusCode, body: parsed };
    } catch (error) {
      const name = (error as Error).name;
      if (name === 'TimeoutError' || name === 'AbortError') {
        return unknownFailure('timeout', `No answer from the bank within ${timeoutMs} ms`);
      }
      return unknownFailure('network_error', `Could not reach the bank: ${(error as Error).message}`);
    }
  }

  async close(): Promise<void> {
    await this.agent.close();
  }
}

export function unknownFailure(reason: string, message: string): BankFailure {
  return { ok: false, reason, message, unknown: true };
}
