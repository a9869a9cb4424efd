import { randomUUID } from 'node:crypto';
import Fastify, { LogController, type FastifyReply, type FastifyRequest } from 'fastify';
import type { Logger } from 'pino';
import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox';
import type { App } from './http/app-type.ts';
import swagger from '@fastify/swagger';
import swaggerUi from '@fastify/swagger-ui';
import formbody from '@fastify/formbody';
import { errorHandler, notFoundHandler, requireJsonBody } from './http/errors.ts';
import { cachedSerializerCompiler, cachedValidatorCompiler } from './http/schema-compilers.ts';
import { refuseNulCharacters } from './http/text-guard.ts';
import { checksHook } from './http/hooks.ts';
import { clientErrorHandler } from './http/client-errors.ts';
import { emptyJsonIsNoBody, strictApiRoute } from './http/strict-routes.ts';
import { pageSecurityHeaders } from './http/page-headers.ts';
import { lazyRequestLogger } from './http/request-logger.ts';
import { accessLineWriter, type AccessFields } from './http/access-line.ts';
import { createMetrics, type HttpDurations } from './http/metrics.ts';
import { refuseValidatingResponseSchemas } from './http/schemas.ts';
import { docsUiOptions, swaggerOptions } from './http/openapi.ts';
import { eventWebhooks } from './modules/events/events.openapi.ts';
import { keyScopeExtension } from './modules/merchants/merchants.auth.ts';
import { registerModuleRoutes } from './modules/index.ts';
import type { Deps } from './modules/context.ts';
import type { TrustProxy } from './config.ts';
import { closeQuietConnectionsOf } from './http/quiet-connections.ts';
import { withoutPorts } from './http/forwarded-for.ts';

const requestIdShape = /^[A-Za-z0-9._-]{1,64}$/;

/** Fields redacted from every log line wherever they are named, as docs/security.md ("Logs") lists them. */
export const redactedFieldNames = [
  'token',
  'secret',
  'password',
  'live_key',
  'test_key',
  'dashboard_password',
  'access_token',
  'refresh_token',
  'id_token',
  'client_secret',
  'bank_access_token',
  'bank_refresh_token',
];

/**
 * pino's redaction paths: the headers, and each redacted name at the top level of a line and one
 * and two levels down (pino's paths have no recursive wildcard; `*.*.token` covers `err.body.token`).
 */
export const loggerRedactPaths = [
  'req.headers.authorization',
  'req.headers.cookie',
  'headers.authorization',
  'headers.cookie',
  ...redactedFieldNames.flatMap((name) => [name, `*.${name}`, `*.*.${name}`]),
];

/** TRUST_PROXY as Fastify's trustProxy: a hop count as a function, since Fastify trusts no peer for a bare number. */
function trustProxyOption(trust: TrustProxy): boolean | string[] | ((address: string, hop: number) => boolean) {
  if (typeof trust === 'number') return (_address, hop) => hop < trust;
  return trust;
}

/**
 * What is recorded of every call when it is answered (or its connection fails): its duration in
 * the metrics, and one access line in place of Fastify's two ("incoming request", then "request
 * completed", each through its request or reply serialiser): at LOG_LEVEL=info those two lines
 * cost a read about a third of its CPU (docs/performance.md). Done here rather than in an
 * onResponse hook, which cost every call a turn through Fastify's hook runner. The line keeps
 * what Fastify's lines said; Fastify's error lines are unchanged. It carries no secret, so it is
 * written, to the service log's own stream, without the redaction every other line goes through
 * (about half of a line's cost); the request id and the caller are fields of its own.
 */
class CompletedCalls extends LogController {
  private readonly write: ((fields: AccessFields) => void) | null;
  private readonly durations: HttpDurations;

  constructor(write: ((fields: AccessFields) => void) | null, durations: HttpDurations) {
    super();
    this.write = write;
    this.durations = durations;
  }

  override incomingRequest(): void {}

  override requestCompleted(error: Error | null | undefined, request: FastifyRequest, reply: FastifyReply): void {
    this.durations.observe(
      request.method,
      request.routeOptions.url ?? 'unmatched',
      reply.statusCode,
      reply.elapsedTime / 1000,
    );
    if (error) return super.requestCompleted(error, request, reply);
    // A route may log below info (the password-reset links, whose URLs hold their token).
    if (!this.write || !(request.log as unknown as Logger).isLevelEnabled('info')) return;
    const caller = request.ctx as FastifyRequest['ctx'] | undefined;
    this.write({
      reqId: request.id,
      merchant_id: caller?.merchant.id,
      mode: caller?.mode,
      req: { method: request.method, url: request.url, remoteAddress: request.ip },
      res: { statusCode: reply.statusCode },
      responseTime: reply.elapsedTime,
      msg: 'request completed',
    });
  }
}

/**
 * `stopping` says the process has begun to stop (SIGTERM, runtime.close()): /readyz answers 503 at
 * once, and each reply closes its keep-alive connection, so the server's close is not held by a
 * client's idle connection after its call in flight.
 */
export async function buildApp(deps: Deps, options: { stopping?: () => boolean } = {}): Promise<App> {
  const stopping = options.stopping ?? (() => false);
  const metrics = createMetrics(deps);
  const app = Fastify({
    loggerInstance: deps.log,
    bodyLimit: 102_400,
    genReqId: (req) => {
      const incoming = req.headers['x-request-id'];
      return typeof incoming === 'string' && requestIdShape.test(incoming) ? incoming : randomUUID();
    },
    routerOptions: { ignoreTrailingSlash: true },
    // The client address every per-address limit, audit record and access line uses is request.ip.
    trustProxy: trustProxyOption(deps.config.trustProxy),
    logController: new CompletedCalls(accessLineWriter(deps.log), metrics.httpDuration),
    childLoggerFactory: lazyRequestLogger,
    clientErrorHandler,
    // Errors Fastify raises before routing (a path with broken percent-encoding) get the API's shape too.
    frameworkErrors: (_error, _request, reply) => {
      void (reply as FastifyReply).status(400).send({
        code: 'bad_request.invalid_url',
        message: 'The URL is not valid: check its percent-encoding',
        params: {},
      });
    },
  }).withTypeProvider<TypeBoxTypeProvider>();

  closeQuietConnectionsOf(app);
  if (deps.config.trustProxy !== false)
    // Before anything reads request.ip: an address the proxy wrote with its port is the address.
    app.addHook('onRequest', (request, _reply, done) => {
      const forwarded = request.raw.headers['x-forwarded-for'];
      if (typeof forwarded === 'string' && forwarded.includes(':'))
        request.raw.headers['x-forwarded-for'] = withoutPorts(forwarded);
      done();
    });
  app.removeContentTypeParser('application/json');
  app.addContentTypeParser(
    'application/json',
    { parseAs: 'string' },
    emptyJsonIsNoBody(app.getDefaultJsonParser('error', 'error')),
  );
  app.setValidatorCompiler(cachedValidatorCompiler);
  app.setSerializerCompiler(cachedSerializerCompiler);
  app.setErrorHandler(errorHandler);
  app.setNotFoundHandler(notFoundHandler);
  app.addHook('onRoute', strictApiRoute);
  app.addHook('onRoute', refuseValidatingResponseSchemas);
  app.addHook('preValidation', checksHook(requireJsonBody, refuseNulCharacters));
  // Hooks on every call take a callback rather than returning a promise: one fewer turn of the
  // microtask queue each, on a read that does little else.
  app.addHook('onSend', (request, reply, payload, done) => {
    reply.header('x-request-id', request.id);
    if (stopping()) reply.header('connection', 'close');
    pageSecurityHeaders(reply);
    done(null, payload);
  });
  await app.register(formbody);

  await app.register(swagger, swaggerOptions({ webhooks: eventWebhooks(), operationExtensions: keyScopeExtension }));
  await app.register(swaggerUi, docsUiOptions(deps.config.publicBaseUrl));

  app.get('/v1/openapi.json', { schema: { hide: true } }, async () => app.swagger());
  app.get('/metrics', { schema: { hide: true } }, async (_request, reply) => {
    reply.header('content-type', metrics.registry.contentType);
    return metrics.registry.metrics();
  });
  app.get('/healthz', { schema: { hide: true } }, async () => ({ status: 'ok' }));
  app.get('/readyz', { schema: { hide: true } }, async (_request, reply) => {
    if (stopping())
      return reply.status(503).send({ code: 'service_unavailable', message: 'The service is stopping', params: {} });
    try {
      await deps.store.check();
      return { status: 'ready' };
    } catch {
      return reply
        .status(503)
        .send({ code: 'service_unavailable', message: 'The database is not reachable', params: {} });
    }
  });

  await registerModuleRoutes(app, deps);
  return app;
}
