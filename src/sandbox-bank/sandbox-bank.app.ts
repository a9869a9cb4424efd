import { randomUUID } from 'node:crypto';
import Fastify, { type FastifyBaseLogger, type FastifyInstance } from 'fastify';
import formbody from '@fastify/formbody';
import { Migrator, sql, type Kysely } from 'kysely';
import { engineOf } from '../store/db.ts';
import type { Logger } from 'pino';
import { cachedSerializerCompiler, cachedValidatorCompiler } from '../http/schema-compilers.ts';
import { refuseNulCharacters } from '../http/text-guard.ts';
import { checksHook } from '../http/hooks.ts';
import { pageSecurityHeadersHook } from '../http/page-headers.ts';
import { closeQuietConnectionsOf } from '../http/quiet-connections.ts';
import { sandboxBankMigrations } from './migrations/index.ts';
import { systemClock, type Clock } from '../shared/time.ts';
import { INTERACTION_ID_HEADER } from '../shared/open-banking.wire.ts';
import { registerApiRoutes } from './api.routes.ts';
import { registerAuthRoutes } from './auth.routes.ts';
import { bankErrorHandler, bankNotFoundHandler } from './sandbox.errors.ts';
import { TokenLifetimes, type SandboxClient, type SandboxDeps } from './sandbox.context.ts';
import type { SandboxTables } from './sandbox.tables.ts';
import { ensureDefaultPayer, Latency } from './hooks.service.ts';
import { registerHookRoutes } from './hooks.routes.ts';

export type { SandboxClient } from './sandbox.context.ts';

export type SandboxBankOptions = {
  /** Any Kysely whose database has the sandbox_ tables (the service's, or the bank's own file). */
  db: Kysely<any>;
  clock?: Clock;
  /** Time zone of calendar periods for enduring-consent limits. */
  zone: string;
  /** The registered clients; a function so redirect URIs can follow a base URL set after start. */
  clients: () => SandboxClient[];
  requireClientCertificate?: boolean;
  /**
   * How long an enduring consent's access token lasts, in seconds, before its refresh token must be
   * used; unset or null, it never expires (the default). The test hook changes it per client.
   */
  enduringTokenSeconds?: number | null;
};

/** The client the service uses at its sandbox bank. */
export const SERVICE_CLIENT_ID = 'tono';
/**
 * The secret a sandbox bank run on its own (npm run sandbox-bank) accepts unless SANDBOX_CLIENT_SECRET
 * says otherwise. The bank the service mounts never accepts it: its secret is made at first start
 * (src/modules/banks/sandbox-client.ts).
 */
export const STANDALONE_CLIENT_SECRET = 'tono-sandbox-secret';

/** The service as the one client of the bank it mounts, returning to its own /pay/return. */
export function serviceClient(publicBaseUrl: () => string, clientSecret: string): () => SandboxClient[] {
  return () => [{ clientId: SERVICE_CLIENT_ID, clientSecret, redirectUris: [`${publicBaseUrl()}/pay/return`] }];
}

/**
 * The sandbox bank as a Fastify plugin: register it with a prefix (the service mounts it at
 * /sandbox-bank). Its errors take the standard's shape, whatever the host app does.
 */
export async function sandboxBank(app: FastifyInstance, options: SandboxBankOptions): Promise<void> {
  const deps: SandboxDeps = {
    db: options.db as Kysely<SandboxTables>,
    clock: options.clock ?? systemClock,
    zone: options.zone,
    clients: options.clients,
    requireClientCertificate: options.requireClientCertificate ?? false,
    tokenLifetimes: new TokenLifetimes(
      options.enduringTokenSeconds == null ? null : options.enduringTokenSeconds * 1000,
    ),
  };
  await ensureDefaultPayer(deps);
  const latency = new Latency();
  // The bank is not part of the service's API: keep its routes out of the service's OpenAPI.
  app.addHook('onRoute', (route) => {
    route.schema = { ...route.schema, hide: true };
  });
  app.setValidatorCompiler(cachedValidatorCompiler);
  app.setSerializerCompiler(cachedSerializerCompiler);
  app.setErrorHandler(bankErrorHandler);
  app.setNotFoundHandler(bankNotFoundHandler);
  // x-fapi-interaction-id on every answer: the caller's, echoed, or a new one to quote to the bank.
  app.addHook('onRequest', async (request, reply) => {
    const sent = request.headers[INTERACTION_ID_HEADER];
    reply.header(
      INTERACTION_ID_HEADER,
      typeof sent === 'string' && /^[\x21-\x7e]{1,128}$/.test(sent) ? sent : randomUUID(),
    );
  });
  // The same input checks as the service's (nesting depth, NUL), for the bank running alone too.
  app.addHook('preValidation', checksHook(refuseNulCharacters));
  app.get('/', async () => ({
    name: 'Sandbox Bank',
    standard: 'NZ payment initiation',
    login: 'username sandbox, any password',
  }));
  await registerAuthRoutes(app, deps);
  await app.register(async (hooks) => registerHookRoutes(hooks, deps, latency));
  await app.register(async (api) => registerApiRoutes(api, deps, latency));
}

/** The sandbox bank alone, as its own server (npm run sandbox-bank). */
export async function buildSandboxBankApp(
  options: SandboxBankOptions & { log?: Logger; https?: { cert: string; key: string; clientCa?: string } },
): Promise<FastifyInstance> {
  const https = options.https;
  // With a client CA, certificates are asked for on every connection but checked only where the
  // API needs them: the payer's browser reaches the sign-in pages without one.
  const app = Fastify({
    loggerInstance: options.log as FastifyBaseLogger | undefined,
    routerOptions: { ignoreTrailingSlash: true },
    bodyLimit: 102_400,
    ...(https && {
      https: {
        cert: https.cert,
        key: https.key,
        ...(https.clientCa && { ca: https.clientCa, requestCert: true, rejectUnauthorized: false }),
      },
    }),
  }) as unknown as FastifyInstance;
  closeQuietConnectionsOf(app);
  await app.register(formbody);
  app.addHook('onSend', pageSecurityHeadersHook);
  await app.register(sandboxBank, {
    ...options,
    requireClientCertificate: options.requireClientCertificate ?? Boolean(https?.clientCa),
  });
  return app;
}

/** The bank's own tables on a database of its own (standalone): only its migration runs there. */
export async function migrateSandboxBank(db: Kysely<any>): Promise<void> {
  // Name the schema on PostgreSQL: Kysely otherwise looks for its bookkeeping tables in every schema.
  const schema =
    engineOf(db) === 'postgres'
      ? (await sql<{ schema: string }>`select current_schema() as schema`.execute(db)).rows[0]?.schema
      : undefined;
  const migrator = new Migrator({
    db,
    provider: {
      getMigrations: async () => sandboxBankMigrations,
    },
    ...(schema && { migrationTableSchema: schema }),
  });
  const { error } = await migrator.migrateToLatest();
  if (error) throw error instanceof Error ? error : new Error(String(error));
}

/**
 * The sandbox bank as an application of its own: what a host mounts and migrates. The service
 * mounts `plugin` at /sandbox-bank in its database (its migrations include these); `npm run
 * sandbox-bank` serves it alone on its own database (main.ts, buildSandboxBankApp).
 */
export const sandboxBankManifest = {
  name: 'sandbox-bank',
  plugin: sandboxBank,
  migrations: sandboxBankMigrations,
} as const;
