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
import { can, ROLE_LABELS, type Permission } from '../team/team.permissions.ts';
import type { Ctx, Deps, Origin } from '../context.ts';
import type { Mode } from '../../shared/mode.ts';

// What every dashboard page shares: rendering with the layout, the signed-in guard, the CSRF and
// same-origin check on every post, the mode in the URL, and the Ctx the module services take.

const templates = templatesIn(path.join(import.meta.dirname, 'templates'));

export const SESSION_COOKIE = 'tono_dash';
export const PRE_SESSION_COOKIE = 'tono_dash_csrf';
/** The mode the merchant last looked at, so the dashboard opens there (docs/dashboard.md). */
export const MODE_COOKIE = 'tono_dash_mode';
export const DASHBOARD_CSP = contentSecurityPolicy({
  scripts: true,
  styles: 'self',
  images: true,
  // The passkey script posts the WebAuthn ceremony's steps to the dashboard itself.
  connect: true,
  formsTo: [],
});

/** The sections in the navigation, each shown to the roles with its permission (docs/team.md). */
export const SECTIONS = [
  { path: '', label: 'Home', permission: 'read' },
  { path: 'requests', label: 'Requests', permission: 'read' },
  { path: 'payments', label: 'Payments', permission: 'read' },
  { path: 'refunds', label: 'Refunds', permission: 'read' },
  { path: 'reconciliation', label: 'Reconciliation', permission: 'read' },
  { path: 'customers', label: 'Customers', permission: 'read' },
  { path: 'subscriptions', label: 'Subscriptions', permission: 'read' },
  { path: 'recurring-consents', label: 'Recurring consents', permission: 'read' },
  { path: 'webhooks', label: 'Webhooks', permission: 'read' },
  { path: 'events', label: 'Events', permission: 'read' },
  { path: 'api-keys', label: 'API keys', permission: 'read' },
  { path: 'bank-accounts', label: 'Bank accounts', permission: 'read' },
  { path: 'tax', label: 'Tax & receipts', permission: 'read' },
  { path: 'audit', label: 'Audit log', permission: 'read' },
  { path: 'clock', label: 'Test clock', testOnly: true, permission: 'read' },
] as const satisfies readonly { path: string; label: string; permission: Permission; testOnly?: boolean }[];

/**
 * Every signed-in dashboard route and the permission it needs, as `METHOD /path` (the path as
 * registered, `/dashboard/:mode/…`). Filled as routes are registered, from the guard each one is
 * wrapped in (an onRoute hook of the dashboard's scope); a test fails on a route under a mode that
 * is not here.
 */
export const ROUTE_PERMISSIONS = new Map<string, Permission>();
const PERMISSION_OF = Symbol('dashboard route permission');

/** The permission a guarded handler was made with; undefined for a handler the guard did not wrap. */
export function permissionOfHandler(handler: unknown): Permission | undefined {
  return (handler as { [PERMISSION_OF]?: Permission } | null)?.[PERMISSION_OF];
}

/** What a route's guard decides on: the permission it needs is required, so no route is written without a decision. */
export type GuardOptions = { permission: Permission; post?: boolean; testOnly?: boolean };

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
    can: (permission: Permission) => can(signed.session.member.role, permission),
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

  const notAllowed = notAllowedPage(render, layoutOf);

  const guard = signedPageGuard(deps, { message, formCsrfMatches, forbidden, cookieOptions, notAllowed });
  const accountGuard = accountPageGuard(deps, { formCsrfMatches, forbidden, notAllowed });

  return {
    deps,
    zone,
    cookieOptions,
    render,
    message,
    layoutOf,
    guard,
    accountGuard,
    notAllowed,
    formCsrfMatches,
    preSessionCsrf,
    forbidden,
    helpers,
  };
}

/** A signed-in member whose role lacks the route's permission: 403 in the layout, nothing done. */
function notAllowedPage(
  render: (reply: FastifyReply, status: number, template: string, data: Record<string, unknown>) => FastifyReply,
  layoutOf: (signed: Signed, section: string | null) => Record<string, unknown>,
) {
  return (reply: FastifyReply, signed: Signed | null, session: DashboardSession) =>
    render(reply, 403, 'message', {
      title: 'Not allowed',
      heading: 'Your role does not allow this',
      text: `You are signed in as ${ROLE_LABELS[session.member.role]}, which cannot do this. Nothing was changed. An owner or an admin of the team can change your role.`,
      ...(signed
        ? layoutOf(signed, null)
        : { session, can: (permission: Permission) => can(session.member.role, permission) }),
    });
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
  notAllowed: (reply: FastifyReply, signed: Signed | null, session: DashboardSession) => FastifyReply;
};

/** Where a change on a page came from, as the audit trail records it. */
export function originOf(request: FastifyRequest): Origin {
  return { ip: request.ip, userAgent: request.headers['user-agent']?.slice(0, 200) ?? null, requestId: request.id };
}

/** Marks a guarded handler with its permission, for the route registry. */
function withPermission<H extends object>(handler: H, permission: Permission): H {
  return Object.assign(handler, { [PERMISSION_OF]: permission });
}

/** What a signed-in page outside the modes (the account, the team) gets. */
export type SignedAccount = { session: DashboardSession };

/**
 * What both guards check first: the session the cookie names, or null once the reply is sent: a
 * post without its CSRF token is 403, and signed out leads to the login page (back here after a
 * GET). Null rather than the reply, which is thenable: awaited, it gives undefined.
 */
async function signedInOr(
  deps: Deps,
  request: FastifyRequest,
  reply: FastifyReply,
  options: GuardOptions,
  { formCsrfMatches, forbidden }: Pick<PageParts, 'formCsrfMatches' | 'forbidden'>,
): Promise<DashboardSession | null> {
  const session = await sessionOf(deps, request.cookies[SESSION_COOKIE]);
  if (options.post && !formCsrfMatches(request, session?.csrfToken)) {
    forbidden(reply);
    return null;
  }
  if (!session) {
    reply.redirect(`/dashboard/login${queryOf({ next: request.method === 'GET' ? request.url : undefined })}`, 303);
    return null;
  }
  return session;
}

/**
 * The guard of the signed-in pages outside the modes (/dashboard/team…): signed out leads to the
 * login page; a post without this session's CSRF token is 403; a role without the permission is 403.
 */
function accountPageGuard(
  deps: Deps,
  { formCsrfMatches, forbidden, notAllowed }: Pick<PageParts, 'formCsrfMatches' | 'forbidden' | 'notAllowed'>,
) {
  type Handler = (request: PageRequest, reply: FastifyReply, signed: SignedAccount) => Promise<unknown>;
  return (handler: Handler, options: GuardOptions) =>
    withPermission(async (request: FastifyRequest<any>, reply: FastifyReply) => {
      const session = await signedInOr(deps, request, reply, options, { formCsrfMatches, forbidden });
      if (!session) return reply;
      if (!can(session.member.role, options.permission)) return notAllowed(reply, null, session);
      return handler(request, reply, { session });
    }, options.permission);
}

/** The guard every signed-in page goes through: a page handler wrapped with sign-in, mode and CSRF checks. */
function signedPageGuard(deps: Deps, { message, formCsrfMatches, forbidden, cookieOptions, notAllowed }: PageParts) {
  const ctxOf = (request: FastifyRequest, session: DashboardSession, mode: Mode): Ctx => ({
    deps,
    db: deps.db,
    merchant: { id: session.merchant.id, name: session.merchant.name },
    mode,
    clock: clockAt(deps.clock, mode, session.merchant.clockOffsetMs),
    log: request.log as unknown as Ctx['log'],
    actor: { kind: 'member', id: session.member.id, email: session.member.email },
    origin: originOf(request),
  });

  type Handler = (request: PageRequest, reply: FastifyReply, signed: Signed) => Promise<unknown>;

  /**
   * A signed-in page under /dashboard/{mode}/…: signed out leads to the login page; a mode other
   * than live or test is 404; a post without this session's CSRF token, or from another site, is
   * 403 and runs nothing; so is any request of a member whose role lacks the route's permission.
   */
  return (handler: Handler, options: GuardOptions) =>
    withPermission(async (request: FastifyRequest<any>, reply: FastifyReply) => {
      const session = await signedInOr(deps, request, reply, options, { formCsrfMatches, forbidden });
      if (!session) return reply;
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
      if (!can(session.member.role, options.permission)) return notAllowed(reply, signed, session);
      try {
        return await handler(request, reply, signed);
      } catch (error) {
        if (error instanceof AppError && error.status === 404)
          return message(reply, 404, 'Not found', `There is nothing with that address in ${mode} mode.`, signed);
        throw error;
      }
    }, options.permission);
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
