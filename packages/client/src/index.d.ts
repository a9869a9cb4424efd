import type { Client } from 'openapi-fetch';
import type { components, operations, paths, webhooks } from './schema.js';

export type { components, operations, paths, webhooks };
export type TonoClient = Client<paths>;

export type Request = components['schemas']['Request'];
export type Payment = components['schemas']['Payment'];
export type Customer = components['schemas']['Customer'];
export type RecurringConsent = components['schemas']['RecurringConsent'];
export type Subscription = components['schemas']['Subscription'];
export type Event = components['schemas']['Event'];
export type WebhookEndpoint = components['schemas']['WebhookEndpoint'];
export type Delivery = components['schemas']['Delivery'];
export type Refund = components['schemas']['Refund'];
export type RefundAuthority = components['schemas']['RefundAuthority'];
export type Receipt = components['schemas']['Receipt'];
export type Statement = components['schemas']['Statement'];
export type StatementLine = components['schemas']['StatementLine'];
export type Reconciliation = components['schemas']['Reconciliation'];
export type TaxSettings = components['schemas']['TaxSettings'];
export type AuditEvent = components['schemas']['AuditEvent'];
export type Amount = components['schemas']['Amount'];
export type ErrorBody = components['schemas']['Error'];

/** The error codes one call can answer, from its operation's error responses. */
export type ErrorCodeOf<R> = R extends { error?: infer E }
  ? E extends { code?: infer C }
    ? Exclude<C, undefined>
    : never
  : never;

export declare class TonoError<Code extends string = string> extends Error {
  readonly status: number;
  readonly code: Code;
  readonly params: Record<string, unknown>;
  constructor(status: number, body: unknown);
}

export declare function createTonoClient(options: {
  /** sk_live_… or sk_test_… */
  apiKey: string;
  /** The service's PUBLIC_BASE_URL, e.g. https://pay.example.co.nz */
  baseUrl: string;
  fetch?: (input: globalThis.Request) => Promise<Response>;
  headers?: Record<string, string>;
}): TonoClient;

/** The data of a call, or throws TonoError whose `code` is one of that operation's codes. */
export declare function unwrap<R extends { data?: unknown; error?: unknown; response: Response }>(
  call: Promise<R>,
): Promise<Exclude<R['data'], undefined>>;
