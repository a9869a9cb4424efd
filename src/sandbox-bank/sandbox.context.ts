import type { KeyObject } from 'node:crypto';
import type { FastifyInstance, FastifyRequest } from 'fastify';
import type { Kysely } from 'kysely';
import type { Clock } from '../shared/time.ts';
import type { SandboxTables } from './sandbox.tables.ts';

export type SandboxDb = Kysely<SandboxTables>;

/**
 * A client (a payment service) registered at the bank, with the redirect URIs it may use. With a
 * public key it must authenticate with private_key_jwt, and its secret is not accepted.
 */
export type SandboxClient = { clientId: string; clientSecret: string; redirectUris: string[]; publicKey?: KeyObject };

export type SandboxDeps = {
  db: SandboxDb;
  /** Real time at the bank: tokens, codes and idempotency keys age by it. */
  clock: Clock;
  /** Time zone of the bank's calendar periods (the service's SERVICE_TIME_ZONE). */
  zone: string;
  /** Read on every use, so a test can change the service's public URL after listening. */
  clients: () => SandboxClient[];
  /** Mutual TLS: the token endpoint, the API and the test hooks need a client certificate the bank trusts. */
  requireClientCertificate: boolean;
  /** How long enduring consents' access tokens last (the option, or the test hook). */
  tokenLifetimes: TokenLifetimes;
};

/**
 * How long the access token of an enduring consent lasts, per client: null, it never expires (and
 * the token endpoint's answer has no expires_in), as the bank's default. Its refresh token does not
 * expire; it is used once. Held in memory by the bank's process: `POST /test/token-lifetime`
 * changes it for the calling client, for the tokens issued after it.
 */
export class TokenLifetimes {
  private readonly initialMs: number | null;
  private readonly byClient = new Map<string, number | null>();
  constructor(initialMs: number | null) {
    this.initialMs = initialMs;
  }
  enduringMs(clientId: string): number | null {
    const set = this.byClient.get(clientId);
    return set === undefined ? this.initialMs : set;
  }
  setEnduring(clientId: string, ms: number | null): void {
    this.byClient.set(clientId, ms);
  }
}

/** Whether a request came over TLS with a client certificate signed by a CA the bank trusts. */
export function hasTrustedClientCertificate(socket: unknown): boolean {
  return Boolean(
    (socket as { authorized?: boolean; encrypted?: boolean }).encrypted &&
      (socket as { authorized?: boolean }).authorized,
  );
}

/** The time a request is about: x-sandbox-time when given, else the bank's clock. */
export type BankTime = number;

/** An address of this bank (a resource's `Self` link, the token endpoint), under the prefix it is mounted at. */
export function selfUrl(app: FastifyInstance, request: FastifyRequest, path: string): string {
  return `${request.protocol}://${request.host}${app.prefix}${path}`;
}
