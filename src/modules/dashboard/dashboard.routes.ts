import fs from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import cookie from '@fastify/cookie';
import type { FastifyReply } from 'fastify';
import { clientKey, retryAfterSeconds } from '../../http/failure-limiter.ts';
import { text } from './dashboard.format.ts';
import {
  dashboardKit,
  formOf,
  permissionOfHandler,
  ROUTE_PERMISSIONS,
  MODE_COOKIE,
  originOf,
  PRE_SESSION_COOKIE,
  SESSION_COOKIE,
  type Kit,
  type Scope,
} from './dashboard.kit.ts';
import { registerAuditPages } from './sections/audit.ts';
import { registerPayerEmailPages } from './sections/payer-emails.ts';
import { hasAnyRequest } from '../requests/requests.service.ts';
import type { Mode } from '../../shared/mode.ts';
import {
  askForReset,
  endSession,
  liveSessions,
  normaliseEmail,
  resetIsLive,
  resetPassword,
  revokeSession,
  sessionOf,
  signIn,
  SESSION_MAX_MS,
} from './dashboard.sessions.ts';
import { registerHome } from './sections/home.ts';
import { registerRequestPages } from './sections/requests.ts';
import { registerPaymentPages } from './sections/payments.ts';
import { registerPaymentRefund } from './sections/payment-refund.ts';
import { registerRefundPages } from './sections/refunds.ts';
import { registerReconciliationPages } from './sections/reconciliation.ts';
import { registerRefundAuthorityPages } from './sections/refund-authority.ts';
import { registerWebhookPages } from './sections/webhooks.ts';
import { registerKeyPages } from './sections/api-keys.ts';
import { registerCustomerPages } from './sections/customers.ts';
import { registerRecurringPages } from './sections/recurring.ts';
import { registerConsentCharge } from './sections/consent-charge.ts';
import { registerBankAccountPages } from './sections/bank-accounts.ts';
import { registerTaxPages } from './sections/tax.ts';
import { registerClockPages } from './sections/clock.ts';
import { registerInvitationPages, registerTeamPages } from './sections/team.ts';
import { continueToSecondStep, registerTwoFactorPages, twoFactorAccountView } from './sections/two-factor.ts';
import type { Deps } from '../context.ts';
import type { App } from '../../http/app-type.ts';
import type { Contributions } from '../manifest.ts';

// The merchant dashboard at /dashboard (docs/dashboard.md): sign-in, then every section under
// /dashboard/{live|test}/…, each action through the owning module's service, as the API does.
// Server-rendered with auto-escaping; every form carries a CSRF token and cross-site posts are
// refused; the page hook adds the security headers.

const here = path.dirname(fileURLToPath(import.meta.url));
const assets = new Map<string, { type: string; body: Buffer }>([
  [
    'dashboard.css',
    { type: 'text/css; charset=utf-8', body: fs.readFileSync(path.join(here, 'assets', 'dashboard.css')) },
  ],
  [
    'dashboard.js',
    { type: 'text/javascript; charset=utf-8', body: fs.readFileSync(path.join(here, 'assets', 'dashboard.js')) },
  ],
]);

/** Only a path inside the dashboard is followed after login, so the login page redirects nowhere else. */
function safeNext(next: string): string {
  return /^\/dashboard\/(live|test)(\/[A-Za-z0-9_\-/?=&%.]*)?$/.test(next) && !next.includes('//')
    ? next
    : '/dashboard';
}

/**
 * The mode the dashboard opens in: the one last looked at; the first time, test mode until the
 * merchant has made something live (where everything they tried out is).
 */
async function homeMode(deps: Deps, merchantId: string, remembered: string | undefined): Promise<Mode> {
  if (remembered === 'live' || remembered === 'test') return remembered;
  return (await hasAnyRequest(deps.db, { userId: merchantId, mode: 'live' })) ? 'live' : 'test';
}

export async function registerDashboardRoutes(app: App, deps: Deps, contributions: Contributions): Promise<void> {
  const kit = dashboardKit(deps);

  await app.register(async (scope) => {
    await scope.register(cookie);
    const hidden = { schema: { hide: true } };
    // The registry of route → permission (docs/team.md), from the guard each route is wrapped in.
    scope.addHook('onRoute', (route) => {
      const permission = permissionOfHandler(route.handler);
      if (!permission) return;
      for (const method of [route.method].flat()) ROUTE_PERMISSIONS.set(`${method} ${route.url}`, permission);
    });

    scope.get<{ Params: { name: string } }>('/dashboard/assets/:name', hidden, async (request, reply) => {
      const asset = assets.get(request.params.name);
      if (!asset) return kit.message(reply, 404, 'Not found', 'There is no page at this address.');
      return reply.header('content-type', asset.type).header('cache-control', 'public, max-age=300').send(asset.body);
    });

    scope.get('/dashboard', hidden, async (request, reply) => {
      const session = await sessionOf(deps, request.cookies[SESSION_COOKIE]);
      if (!session) return reply.redirect('/dashboard/login', 303);
      return reply.redirect(
        `/dashboard/${await homeMode(deps, session.merchant.id, request.cookies[MODE_COOKIE])}`,
        303,
      );
    });

    registerSignIn(scope, kit);

    registerAccountPages(scope, kit);
    registerTeamPages(scope, kit);
    registerInvitationPages(scope, kit);
    registerHome(scope, kit);
    registerRequestPages(scope, kit);
    registerPaymentPages(scope, kit);
    registerPaymentRefund(scope, kit);
    registerRefundPages(scope, kit);
    registerRefundAuthorityPages(scope, kit);
    registerReconciliationPages(scope, kit);
    registerCustomerPages(scope, kit);
    registerRecurringPages(scope, kit);
    registerConsentCharge(scope, kit);
    registerWebhookPages(scope, kit);
    registerKeyPages(scope, kit);
    registerBankAccountPages(scope, kit);
    registerTaxPages(scope, kit);
    registerAuditPages(scope, kit);
    registerPayerEmailPages(scope, kit);
    registerClockPages(scope, kit, contributions.testData);
    registerTwoFactorPages(scope, kit);
  });
}

/** The signed-in member's own account: their sessions, any of which they can end. */
function registerAccountPages(scope: Scope, kit: Kit): void {
  const deps = kit.deps;
  const hidden = { schema: { hide: true } };
  scope.get(
    '/dashboard/account',
    hidden,
    kit.accountGuard(
      async (request, reply, { session }) => {
        const flash = (request.query as { done?: string }).done === 'ended' ? 'That session is ended.' : null;
        return kit.render(reply, 200, 'account', {
          title: 'Account',
          session,
          sessions: await liveSessions(deps, session),
          flash,
          twoFactor: await twoFactorAccountView(kit, session, (request.query as { done?: string }).done),
        });
      },
      { permission: 'read' },
    ),
  );
  scope.post<{ Params: { ref: string } }>(
    '/dashboard/account/sessions/:ref/end',
    hidden,
    kit.accountGuard(
      async (request, reply, { session }) => {
        await revokeSession(deps, session, request.params.ref, originOf(request));
        return reply.redirect('/dashboard/account?done=ended', 303);
      },
      { permission: 'read', post: true },
    ),
  );
}

function registerSignIn(scope: Scope, kit: Kit): void {
  registerLogin(scope, kit);
  registerPasswordReset(scope, kit);
}

/** Logging in and out. */
function registerLogin(scope: Scope, kit: Kit): void {
  const deps = kit.deps;
  const hidden = { schema: { hide: true } };
  const preSessionToken = kit.preSessionCsrf.token;
  const preSessionValid = kit.preSessionCsrf.valid;
  const minutes = (ms: number) => Math.max(1, Math.ceil(ms / 60_000));

  scope.get<{ Querystring: { next?: string } }>('/dashboard/login', hidden, async (request, reply) => {
    const session = await sessionOf(deps, request.cookies[SESSION_COOKIE]);
    if (session) return reply.redirect(safeNext(text(request.query.next)), 303);
    const flash =
      (request.query as { done?: string }).done === 'reset' ? 'Your password is changed. Log in with it.' : null;
    return kit.render(reply, 200, 'login', {
      title: 'Log in',
      csrf: preSessionToken(request, reply),
      next: text(request.query.next),
      flash,
    });
  });

  scope.post('/dashboard/login', hidden, async (request, reply) => {
    if (!preSessionValid(request)) return kit.forbidden(reply);
    const form = formOf(request);
    const csrf = preSessionToken(request, reply);
    const rawEmail = text(form.email, 254);
    const next = text(form.next);
    const again = (status: number, error: string) =>
      kit.render(reply, status, 'login', { title: 'Log in', csrf, email: rawEmail, next, error });
    const email = normaliseEmail(rawEmail);
    const password = typeof form.password === 'string' ? form.password : '';
    if (!email || !password) return again(400, 'Enter your email address and your password.');
    const outcome = await signIn(deps, {
      email,
      password,
      client: clientKey(request.ip),
      origin: originOf(request),
      previousSessionId: request.cookies[SESSION_COOKIE],
    });
    if (outcome.kind === 'limited') {
      reply.header('retry-after', String(retryAfterSeconds(outcome.retryAfterMs)));
      return again(
        429,
        `Too many wrong passwords. Logging in is locked for ${minutes(outcome.retryAfterMs)} minutes; you can reset your password meanwhile.`,
      );
    }
    if (outcome.kind === 'busy') {
      reply.header('retry-after', '5');
      return again(429, 'Too many people are logging in right now. Wait a few seconds and log in again.');
    }
    if (outcome.kind === 'wrong') return again(400, 'That email and password do not match. Check them and try again.');
    if (outcome.kind === 'second_step') return continueToSecondStep(kit, reply, outcome, safeNext(next));
    reply.setCookie(SESSION_COOKIE, outcome.sessionId, { ...kit.cookieOptions(), maxAge: SESSION_MAX_MS / 1000 });
    reply.clearCookie(PRE_SESSION_COOKIE, kit.cookieOptions());
    return reply.redirect(safeNext(next), 303);
  });

  scope.post('/dashboard/logout', hidden, async (request, reply) => {
    const session = await sessionOf(deps, request.cookies[SESSION_COOKIE]);
    if (session && !kit.formCsrfMatches(request, session.csrfToken)) return kit.forbidden(reply);
    await endSession(deps, request.cookies[SESSION_COOKIE]);
    reply.clearCookie(SESSION_COOKIE, kit.cookieOptions());
    return reply.redirect('/dashboard/login', 303);
  });
}

/** A forgotten password: a reset link by email, and the new password. */
function registerPasswordReset(scope: Scope, kit: Kit): void {
  const deps = kit.deps;
  const hidden = { schema: { hide: true } };
  const preSessionToken = kit.preSessionCsrf.token;
  const preSessionValid = kit.preSessionCsrf.valid;
  const minutes = (ms: number) => Math.max(1, Math.ceil(ms / 60_000));

  scope.get('/dashboard/forgot', hidden, async (request, reply) =>
    kit.render(reply, 200, 'forgot', { title: 'Reset your password', csrf: preSessionToken(request, reply) }),
  );

  scope.post('/dashboard/forgot', hidden, async (request, reply) => {
    if (!preSessionValid(request)) return kit.forbidden(reply);
    const csrf = preSessionToken(request, reply);
    const raw = text(formOf(request).email, 254);
    const email = normaliseEmail(raw);
    if (!email)
      return kit.render(reply, 400, 'forgot', {
        title: 'Reset your password',
        csrf,
        email: raw,
        error: 'Enter your email address, like name@example.com',
      });
    const asked = await askForReset(deps, email, clientKey(request.ip));
    if (asked.kind === 'limited') {
      reply.header('retry-after', String(retryAfterSeconds(asked.retryAfterMs)));
      return kit.render(reply, 429, 'forgot', {
        title: 'Reset your password',
        csrf,
        email,
        error: `Too many reset links have been asked for from here. Try again in ${minutes(asked.retryAfterMs)} minutes.`,
      });
    }
    return kit.render(reply, 200, 'forgot', { title: 'Reset your password', csrf, email, sent: true });
  });

  const deadLink = (reply: FastifyReply) =>
    kit.message(
      reply,
      400,
      'This link no longer works',
      'Reset links work once, for 30 minutes. Ask for a new one from the log-in page.',
    );

  // The reset token is in these URLs: their request lines are kept out of the info-level request log.
  const quiet = { ...hidden, logLevel: 'warn' as const };

  scope.get<{ Params: { token: string } }>('/dashboard/reset/:token', quiet, async (request, reply) => {
    if (!(await resetIsLive(deps, request.params.token))) return deadLink(reply);
    return kit.render(reply, 200, 'reset', {
      title: 'Choose a new password',
      csrf: preSessionToken(request, reply),
      token: request.params.token,
    });
  });

  scope.post<{ Params: { token: string } }>('/dashboard/reset/:token', quiet, async (request, reply) => {
    if (!preSessionValid(request)) return kit.forbidden(reply);
    const password = formOf(request).password;
    const outcome = await resetPassword(
      deps,
      request.params.token,
      typeof password === 'string' ? password : '',
      originOf(request),
    );
    if (outcome.kind === 'dead') return deadLink(reply);
    if (outcome.kind === 'busy') {
      reply.header('retry-after', '5');
      return kit.render(reply, 429, 'reset', {
        title: 'Choose a new password',
        csrf: preSessionToken(request, reply),
        token: request.params.token,
        error: 'Too many passwords are being checked right now. Wait a few seconds and send it again.',
      });
    }
    if (outcome.kind === 'weak') {
      return kit.render(reply, 400, 'reset', {
        title: 'Choose a new password',
        csrf: preSessionToken(request, reply),
        token: request.params.token,
        error: 'Choose a password of 12 to 200 characters.',
      });
    }
    reply.clearCookie(SESSION_COOKIE, kit.cookieOptions());
    return reply.redirect('/dashboard/login?done=reset', 303);
  });
}
