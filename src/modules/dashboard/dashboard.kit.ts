import path from 'node:path';
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import {
  contentSecurityPolicy,
  formTokenMatches,
  pageCookieOptions,
  preSessionToken,
  sendPage,
  templatesIn,
} from '../../http/pages.ts';
import { AppError } from '../../shared/errors.ts';
import { clockAt } from '../merchants/merchants.clock.ts';
import { money, queryOf, when } from './dashboard.format.ts';
import { sessionOf, type DashboardSession } from './dashboard.sessions.ts';
import type { Ctx, Deps, Origin } from '../context.ts';
import type { Mode } from '../../shared/mode.ts';

// What every dashboard page shares: rendering with the layout, the signed-in guard, the CSRF and
// same-origin check on every post, the mode in the URL, and the Ctx the module services take.

const templates = templatesIn(path.join(import.meta.dirname, 'templates'));

export const SESSION_COOKIE = 'tono_dash';
export const PRE_SESSION_COOKIE = 'tono_dash_csrf';
/** The mode the merchant last looked at, so the dashboard opens there (docs/dashboard.md). */
export const MODE_COOKIE = 'tono_dash_mode';
export const DASHBOARD_CSP = contentSecurityPolicy({ scripts: true, styles: 'self', images: true, formsTo: [] });

export const SECTIONS = [
  { path: '', label: 'Home' },
  { path: 'requests', label: 'Requests' },
  { path: 'payments', label: 'Payments' },
  { path: 'refunds', label: 'Refunds' },
  { path: 'customers', label: 'Customers' },
  { path: 'subscriptions', label: 'Subscriptions' },
  { path: 'recurring-consents', label: 'Recurring consents' },
  { path: 'webhooks', label: 'Webhooks' },
  { path: 'events', label: 'Events' },
  { path: 'api-keys', label: 'API keys' },
  { path: 'bank-accounts', label: 'Bank accounts' },
  { path: 'audit', label: 'Audit log' },
  { path: 'clock', label: 'Test clock', testOnly: true },
] as const;

export type Section = (typeof SECTIONS)[number]['path'];

/** What a signed-in page handler gets. */
export type Signed = { session: DashboardSession; mode: Mode; ctx: Ctx; base: string };

export type Kit = ReturnType<typeof dashboardKit>;

/** A template rendered in the layout, with what every page starts from. */
function pageHtml(template: string, helpers: Record<string, unknown>, data: Record<string, unknown>): string {
  return templates.render(template, {
    session: null,
    mode: null,
    section: null,
    flash: null,
    error: null,
    sections: SECTIONS,
    h: helpers,
    ...data,
  });
}

export function dashboardKit(deps: Deps) {
  const zone = () => deps.config.serviceTimeZone;
  const origin = () => new URL(deps.config.publicBaseUrl).origin;
  // Read per request: tests set the public URL after the app is built.
  const cookieOptions = () => pageCookieOptions('/dashboard', deps.config.publicBaseUrl);

  const helpers = {
    when: (ms: number | string | null | undefined) => when(ms, zone()),
    money,
    queryOf,
    json: (value: unknown) => JSON.stringify(value, null, 2),
  };

  /** A page in the layout; `policy` only for a page whose form is answered by a redirect to a bank (form-action). */
  const render = (
    reply: FastifyReply,
    status: number,
    template: string,
    data: Record<string, unknown>,
    policy?: string,
  ) => sendPage(reply, status, pageHtml(template, helpers, data), policy ?? DASHBOARD_CSP);

  const message = (
    reply: FastifyReply,
    status: number,
    heading: string,
    body: string,
    signed?: Signed | null,
    section: string | null = null,
  ) =>
    render(reply, status, 'message', {
      title: heading,
      heading,
      text: body,
      ...(signed ? layoutOf(signed, section) : {}),
    });

  const layoutOf = (signed: Signed, section: string | null) => ({
    session: signed.session,
    mode: signed.mode,
    base: signed.base,
    section,
    csrf: signed.session.csrfToken,
    // Said on every live page, before the merchant tries: the API would refuse a live request.
    liveWithoutBank: signed.mode === 'live' && deps.banks.list('live').length === 0,
  });

  const formCsrfMatches = (request: FastifyRequest, expected: string | undefined): boolean =>
    formTokenMatches(request, expected, origin());

  /** Before sign-in the CSRF token lives in its own cookie (double submit); after, in the session. */
  const preSessionCsrf = {
    token: (request: FastifyRequest, reply: FastifyReply) =>
      preSessionToken(request, reply, { name: PRE_SESSION_COOKIE, options: cookieOptions() }),
    valid: (request: FastifyRequest) => formCsrfMatches(request, request.cookies[PRE_SESSION_COOKIE]),
  };

  const forbidden = (reply: FastifyReply) =>
    message(reply, 403, 'This form has expired', 'Nothing was changed. Go back, reload the page and try again.');

  const guard = signedPageGuard(deps, { message, formCsrfMatches, forbidden, cookieOptions });

  return {
    deps,
    zone,
    cookieOptions,
    render,
    message,
    layoutOf,
    guard,
    formCsrfMatches,
    preSessionCsrf,
    forbidden,
    helpers,
  };
}

/** A page request: path parameters and query values as text. */
export type PageRequest = FastifyRequest<{
  Params: Record<string, string>;
  Querystring: Record<string, unknown>;
  Body: unknown;
}>;

type PageParts = {
  message: (
    reply: FastifyReply,
    status: number,
    heading: string,
    body: string,
    signed?: Signed | null,
    section?: string | null,
  ) => FastifyReply;
  formCsrfMatches: (request: FastifyRequest, expected: string | undefined) => boolean;
  forbidden: (reply: FastifyReply) => FastifyReply;
  cookieOptions: () => ReturnType<typeof pageCookieOptions>;
};

/** Where a change on a page came from, as the audit trail records it. */
export function originOf(request: FastifyRequest): Origin {
  return { ip: request.ip, userAgent: request.headers['user-agent']?.slice(0, 200) ?? null, requestId: request.id };
}

/** The guard every signed-in page goes through: a page handler wrapped with sign-in, mode and CSRF checks. */
function signedPageGuard(deps: Deps, { message, formCsrfMatches, forbidden, cookieOptions }: PageParts) {
  const ctxOf = (request: FastifyRequest, session: DashboardSession, mode: Mode): Ctx => ({
    deps,
    db: deps.db,
    merchant: { id: session.merchant.id, name: session.merchant.name },
    mode,
    clock: clockAt(deps.clock, mode, session.merchant.clockOffsetMs),
    log: request.log as unknown as Ctx['log'],
    actor: { kind: 'member', id: session.merchant.id, email: session.merchant.email },
    origin: originOf(request),
  });

  type Handler = (request: PageRequest, reply: FastifyReply, signed: Signed) => Promise<unknown>;

  /**
   * A signed-in page under /dashboard/{mode}/…: signed out leads to the login page; a mode other
   * than live or test is 404; a post without this session's CSRF token, or from another site, is
   * 403 and runs nothing.
   */
  return (handler: Handler, options: { post?: boolean; testOnly?: boolean } = {}) =>
    async (request: FastifyRequest<any>, reply: FastifyReply) => {
      const session = await sessionOf(deps, request.cookies[SESSION_COOKIE]);
      if (options.post && !formCsrfMatches(request, session?.csrfToken)) return forbidden(reply);
      if (!session)
        return reply.redirect(
          `/dashboard/login${queryOf({ next: request.method === 'GET' ? request.url : undefined })}`,
          303,
        );
      const mode = (request.params as { mode?: string }).mode;
      const signedShell = (m: Mode): Signed => ({
        session,
        mode: m,
        ctx: ctxOf(request, session, m),
        base: `/dashboard/${m}`,
      });
      if (mode !== 'live' && mode !== 'test')
        return message(reply, 404, 'Not found', 'There is no page at this address.', signedShell('live'));
      const signed = signedShell(mode);
      if (request.method === 'GET' && request.cookies[MODE_COOKIE] !== mode)
        reply.setCookie(MODE_COOKIE, mode, { ...cookieOptions(), maxAge: 365 * 86_400 });
      if (options.testOnly && mode !== 'test')
        return message(reply, 404, 'Not found', 'The test clock and test data are in test mode only.', signed);
      try {
        return await handler(request, reply, signed);
      } catch (error) {
        if (error instanceof AppError && error.status === 404)
          return message(reply, 404, 'Not found', `There is nothing with that address in ${mode} mode.`, signed);
        throw error;
      }
    };
}

export type Scope = FastifyInstance<any, any, any, any, any>;

/** The body of a form post as a plain record (formbody gives one; anything else reads as empty). */
export function formOf(request: FastifyRequest): Record<string, unknown> {
  const body = request.body;
  return body && typeof body === 'object' ? (body as Record<string, unknown>) : {};
}

/** A user-facing sentence for a service error: the API's message, which names the field. */
export function problemOf(error: unknown): { code: string; message: string; field: string | null } | null {
  if (!(error instanceof AppError) || error.status >= 500 || error.status === 404) return null;
  const field = typeof error.params.field === 'string' ? error.params.field : null;
  return { code: error.code, message: error.message, field };
}
