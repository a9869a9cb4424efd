import type { FastifyBodyParser, FastifyInstance, FastifyRequest, RouteOptions } from 'fastify';
import { Type } from 'typebox';
import { AppError, unknownParam } from '../shared/errors.ts';

// The API refuses what it does not take, on every operation: a query parameter no route declares
// (a misspelt filter silently ignored looks like an empty result), and a body sent to an action
// that takes none (PUT …/revoke, DELETE …).

const NoQuery = Type.Object({}, { additionalProperties: false });

/** Checked before the body is validated, so a misspelt parameter is named even when the body is also wrong. */
function refuseUnknownQuery(allowed: Set<string>) {
  // A callback hook (not async): it runs on every API call, and a promise costs a microtask turn.
  return (request: FastifyRequest, _reply: unknown, done: (error?: Error) => void): void => {
    for (const name of Object.keys((request.query ?? {}) as object))
      if (!allowed.has(name)) return done(unknownParam(name));
    done();
  };
}

/** API routes: /v1/… and the unversioned read aliases; pages and the sandbox bank have their own rules. */
function isApiRoute(url: string): boolean {
  return url.startsWith('/v1/') || /^\/(requests|customers|subscriptions)\//.test(url);
}

declare module 'fastify' {
  interface FastifyContextConfig {
    /** The route has a body schema, yet no body at all is taken too (its handler supplies the default). */
    bodyOptional?: boolean;
  }
}

async function refuseBody(request: FastifyRequest): Promise<void> {
  const body = request.body;
  if (body === undefined) return;
  if (body !== null && typeof body === 'object' && !Array.isArray(body)) {
    const [first] = Object.keys(body);
    if (first !== undefined) throw unknownParam(first);
    return;
  }
  throw new AppError('bad_request.invalid_json', 'This action takes no body: send none, or {}', {});
}

/** An onRoute hook: fills in the strict defaults a route did not declare. */
export function strictApiRoute(route: RouteOptions): void {
  if (!isApiRoute(route.url)) return;
  const schema = (route.schema ??= {});
  if (!schema.querystring) schema.querystring = NoQuery;
  const allowed = new Set(Object.keys((schema.querystring as { properties?: object }).properties ?? {}));
  const methods = Array.isArray(route.method) ? route.method : [route.method];
  const takesBody = methods.some(
    (method) => method === 'POST' || method === 'PUT' || method === 'PATCH' || method === 'DELETE',
  );
  const existing = route.preValidation
    ? Array.isArray(route.preValidation)
      ? route.preValidation
      : [route.preValidation]
    : [];
  route.preValidation = [
    refuseUnknownQuery(allowed),
    ...existing,
    ...(takesBody && !schema.body ? [refuseBody] : []),
  ] as RouteOptions['preValidation'];
}

/**
 * Wraps Fastify's JSON parser (prototype poisoning refused as before): an empty body sent with
 * `Content-Type: application/json` is no body at all on a route that takes none, or takes none
 * optionally, as many HTTP clients send that header on every call. Elsewhere it stays invalid JSON.
 */
export function emptyJsonIsNoBody(parse: FastifyBodyParser<string>): FastifyBodyParser<string> {
  return function parseJson(this: FastifyInstance, request, body, done) {
    const route = request.routeOptions;
    if (body.length === 0 && (!route.schema?.body || route.config?.bodyOptional === true)) {
      done(null, undefined);
      return;
    }
    return parse.call(this, request, body, done);
  };
}
