import fs from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import cookie from '@fastify/cookie';
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { clientKey } from '../../http/failure-limiter.ts';
import {
  contentSecurityPolicy,
  formField as field,
  formTokenMatches,
  pageCookieOptions,
  preSessionToken as preSessionTokenOf,
  sendPage,
  templatesIn,
} from '../../http/pages.ts';
import { AppError } from '../../shared/errors.ts';
import { consentOfPayer, consentsOfPayer, revokeConsentForPayer } from '../consents/consents.payer.ts';
import {
  cancelSubscriptionForPayer,
  subscriptionOfPayer,
  subscriptionsOfPayer,
} from '../subscriptions/subscriptions.payer.ts';
import {
  endSession,
  normaliseEmail,
  sendCode,
  sessionOf,
  verifyCode,
  SESSION_MAX_MS,
  type PayerSession,
} from './payer.signin.ts';
import { withRefunds } from './payer.refunds.ts';
import { documentsByPayment, payerReceiptPdf } from './payer.receipts.ts';
import type { Deps, Origin } from '../context.ts';
import type { App } from '../../http/app-type.ts';

// The payer dashboard at /customer (docs/payer.md): sign in with a code sent to the email on the
// consents and subscriptions, see them all across merchants, cancel or revoke with a confirmation
// step. Server-rendered with auto-escaping; forms carry a CSRF token and cross-site posts are
// refused; the security headers come from the app's page hook.

const here = path.dirname(fileURLToPath(import.meta.url));
const templates = templatesIn(path.join(here, 'templates'));
const stylesheet = fs.readFileSync(path.join(here, 'assets', 'payer.css'));

const SESSION_COOKIE = 'tono_payer';
const CSRF_COOKIE = 'tono_payer_csrf';
/** No scripts at all: every action is a form. */
const PAYER_CSP = contentSecurityPolicy({ styles: 'self', images: true, formsTo: [] });

const doneMessages: Record<string, string> = {
  cancelled: 'Your subscription is cancelled. Nothing more will be charged.',
  revoked: 'Your payment authority is revoked. No more payments can be taken with it.',
};

/** What every payer page shares: rendering, who is signed in, and the checks of a posted form. */
function payerPages(deps: Deps) {
  // Read per request: tests set the public URL after the app is built.
  const origin = () => new URL(deps.config.publicBaseUrl).origin;
  const cookieOptions = () => pageCookieOptions('/customer', deps.config.publicBaseUrl);

  const page = (reply: FastifyReply, status: number, template: string, data: Record<string, unknown>) =>
    sendPage(reply, status, templates.render(template, { session: null, ...data }), PAYER_CSP);
  const message = (
    reply: FastifyReply,
    status: number,
    heading: string,
    text: string,
    session: PayerSession | null = null,
  ) => page(reply, status, 'message', { title: heading, heading, text, session });

  // Before sign-in the CSRF token lives in its own cookie (double submit); after, in the session.
  const preSessionToken = (request: FastifyRequest, reply: FastifyReply): string =>
    preSessionTokenOf(request, reply, { name: CSRF_COOKIE, options: cookieOptions() });
  const preSessionValid = (request: FastifyRequest): boolean =>
    formTokenMatches(request, request.cookies[CSRF_COOKIE], origin());
  const signedIn = async (request: FastifyRequest) => sessionOf(deps, request.cookies[SESSION_COOKIE]);
  const sessionFormValid = (request: FastifyRequest, session: PayerSession) =>
    formTokenMatches(request, session.csrfToken, origin());
  const forbidden = (reply: FastifyReply) =>
    message(reply, 403, 'This form has expired', 'Nothing was changed. Go back, reload the page and try again.');
  const minutes = (ms: number) => Math.max(1, Math.ceil(ms / 60_000));
  // The same words whether or not a payer has the email: a pause says nothing about who has it.
  const pausedPage = (reply: FastifyReply, csrf: string, email: string, retryAfterMs: number) => {
    reply.header('retry-after', String(Math.ceil(retryAfterMs / 1000)));
    return page(reply, 429, 'signin', {
      title: 'Sign in',
      csrf,
      email,
      error: `Too many wrong codes have been entered for this email, so signing in with it is paused. Try again in ${waitOf(retryAfterMs)}.`,
    });
  };
  const notFoundPage = (reply: FastifyReply, session: PayerSession) =>
    message(reply, 404, 'Not found', 'There is nothing with that address among what you agreed to.', session);

  return {
    deps,
    cookieOptions,
    page,
    message,
    preSessionToken,
    preSessionValid,
    signedIn,
    sessionFormValid,
    forbidden,
    minutes,
    pausedPage,
    notFoundPage,
  };
}

/** A wait as a person reads it, rounded up: "40 minutes", "5 hours", "7 days". */
function waitOf(ms: number): string {
  const count = (unitMs: number, unit: string) => {
    const n = Math.max(1, Math.ceil(ms / unitMs));
    return `${n} ${unit}${n === 1 ? '' : 's'}`;
  };
  if (ms <= 90 * 60_000) return count(60_000, 'minute');
  if (ms <= 48 * 60 * 60_000) return count(60 * 60_000, 'hour');
  return count(24 * 60 * 60_000, 'day');
}

type PayerPages = ReturnType<typeof payerPages>;
type Scope = FastifyInstance<any, any, any, any, any>;
const hidden = { schema: { hide: true } };

export async function registerPayerRoutes(app: App, deps: Deps): Promise<void> {
  const pages = payerPages(deps);
  await app.register(async (scope) => {
    await scope.register(cookie);
    registerHome(scope, pages);
    registerSignIn(scope, pages);
    registerAgreements(scope, pages);
    registerReceipts(scope, pages);
  });
}

/** A receipt's or credit note's PDF, for the payer whose payment it is; anyone else's is a 404. */
function registerReceipts(scope: Scope, { deps, signedIn, notFoundPage }: PayerPages): void {
  scope.get<{ Params: { id: string } }>('/customer/receipts/:id/pdf', hidden, async (request, reply) => {
    const session = await signedIn(request);
    if (!session) return reply.redirect('/customer', 303);
    const file = await payerReceiptPdf(deps, session.email, request.params.id.slice(0, 64));
    if (!file) return notFoundPage(reply, session);
    return reply
      .header('content-type', 'application/pdf')
      .header('content-disposition', `attachment; filename="${file.filename}"`)
      .header('cache-control', 'no-store')
      .send(file.pdf);
  });
}

/** The stylesheet, and the home page: what the payer agreed to, or the sign-in form. */
function registerHome(scope: Scope, { deps, page, preSessionToken, signedIn }: PayerPages): void {
  scope.get('/customer/assets/payer.css', hidden, async (_request, reply) =>
    reply
      .header('content-type', 'text/css; charset=utf-8')
      .header('cache-control', 'public, max-age=300')
      .header('x-content-type-options', 'nosniff')
      .send(stylesheet),
  );

  scope.get<{ Querystring: { done?: string } }>('/customer', hidden, async (request, reply) => {
    const session = await signedIn(request);
    if (!session) return page(reply, 200, 'signin', { title: 'Sign in', csrf: preSessionToken(request, reply) });
    const [subscriptions, consents] = await Promise.all([
      subscriptionsOfPayer(deps, session.email),
      consentsOfPayer(deps, session.email),
    ]);
    return page(reply, 200, 'home', { title: 'What you agreed to', session, subscriptions, consents, flash: null });
  });
}

/**
 * The page that asks for the code. `codeError` is about what was typed in the Code field, which it
 * marks and describes; `error`, about neither field, is only announced.
 */
function codePage(
  page: PayerPages['page'],
  reply: FastifyReply,
  status: number,
  { csrf, email, error, codeError }: { csrf: string; email: string; error?: string; codeError?: string },
) {
  return page(reply, status, 'code', {
    title: 'Enter your code',
    csrf,
    email,
    error: codeError ?? error,
    codeInvalid: codeError !== undefined,
  });
}

/** The sign-in page again for an email that is not one: the Email field is marked and described by the error. */
function emailPage(page: PayerPages['page'], reply: FastifyReply, csrf: string, email?: string) {
  return page(reply, 400, 'signin', {
    title: 'Sign in',
    csrf,
    email,
    error: 'Enter the email address your plans were set up with, like name@example.com',
    emailInvalid: true,
  });
}

/** Sign-in by a code sent to the payer's email, and sign-out. */
function registerSignIn(scope: Scope, pages: PayerPages): void {
  const {
    deps,
    cookieOptions,
    page,
    preSessionToken,
    preSessionValid,
    signedIn,
    sessionFormValid,
    forbidden,
    minutes,
    pausedPage,
  } = pages;
  scope.post('/customer/code', hidden, async (request, reply) => {
    if (!preSessionValid(request)) return forbidden(reply);
    const csrf = preSessionToken(request, reply);
    const email = normaliseEmail(field(request.body, 'email'));
    if (!email) return emailPage(page, reply, csrf, field(request.body, 'email').slice(0, 254));
    const sent = await sendCode(deps, email, clientKey(request.ip));
    if (sent.kind === 'paused') return pausedPage(reply, csrf, email, sent.retryAfterMs);
    if (sent.kind === 'limited') {
      reply.header('retry-after', String(Math.ceil(sent.retryAfterMs / 1000)));
      return page(reply, 429, 'signin', {
        title: 'Sign in',
        csrf,
        email,
        error: `Too many codes have been asked for. Try again in ${minutes(sent.retryAfterMs)} minutes.`,
      });
    }
    return codePage(page, reply, 200, { csrf, email });
  });

  scope.post('/customer/verify', hidden, async (request, reply) => {
    // The form sent again after its first post signed this browser in (back, then resubmit).
    if (await signedIn(request)) return reply.redirect('/customer', 303);
    if (!preSessionValid(request)) return forbidden(reply);
    const csrf = preSessionToken(request, reply);
    const email = normaliseEmail(field(request.body, 'email'));
    if (!email) return emailPage(page, reply, csrf);
    // Spaces are dropped there (a pasted "123 456"); a code that is not 6 digits spends nothing.
    const outcome = await verifyCode(deps, email, field(request.body, 'code'), clientKey(request.ip), csrf);
    switch (outcome.kind) {
      case 'signed_in':
        // A new session id at every sign-in; the pre-session token is done with.
        reply.setCookie(SESSION_COOKIE, outcome.sessionId, { ...cookieOptions(), maxAge: SESSION_MAX_MS / 1000 });
        reply.clearCookie(CSRF_COOKIE, cookieOptions());
        return reply.redirect('/customer', 303);
      case 'malformed':
        return codePage(page, reply, 400, { csrf, email, codeError: 'Enter the 6-digit code from the email' });
      case 'wrong':
        return codePage(page, reply, 400, {
          csrf,
          email,
          codeError: `That code is not right. You have ${outcome.triesLeft} ${outcome.triesLeft === 1 ? 'try' : 'tries'} left.`,
        });
      case 'dead':
        return page(reply, 400, 'signin', {
          title: 'Sign in',
          csrf,
          email,
          error: 'That code no longer works: it has expired, was used, or had too many wrong tries. Ask for a new one.',
        });
      case 'paused':
        return pausedPage(reply, csrf, email, outcome.retryAfterMs);
      case 'limited':
        reply.header('retry-after', String(Math.ceil(outcome.retryAfterMs / 1000)));
        return codePage(page, reply, 429, {
          csrf,
          email,
          error: `Too many wrong codes from here. Try again in ${minutes(outcome.retryAfterMs)} minutes.`,
        });
    }
  });

  scope.post('/customer/logout', hidden, async (request, reply) => {
    const session = await signedIn(request);
    if (session && !sessionFormValid(request, session)) return forbidden(reply);
    await endSession(deps, request.cookies[SESSION_COOKIE]);
    reply.clearCookie(SESSION_COOKIE, cookieOptions());
    return reply.redirect('/customer', 303);
  });
}

/** Each payment with its receipt and credit notes, to download. */
async function withDocuments<P extends { id: string }>(deps: Deps, payments: P[]) {
  const documents = await documentsByPayment(
    deps,
    payments.map((payment) => payment.id),
  );
  return payments.map((payment) => ({ ...payment, documents: documents.get(payment.id) ?? [] }));
}

/** What the payer can end: a subscription (cancel) or a payment authority (revoke). */
type AgreementKind = {
  path: string;
  name: string;
  load: (email: string, id: string) => Promise<any>;
  act: (email: string, id: string, origin: Origin) => Promise<void>;
  verb: string;
  actionLabel: string;
  consequence: (item: any) => string;
  done: string;
};

function agreementKinds(deps: Deps): AgreementKind[] {
  return [
    {
      path: 'subscriptions',
      name: 'Subscription',
      load: (email, id) => subscriptionOfPayer(deps, email, id),
      act: (email, id, origin) => cancelSubscriptionForPayer(deps, email, id, origin),
      verb: 'cancel',
      actionLabel: 'Cancel this subscription',
      done: 'cancelled',
      consequence: (item) =>
        `Nothing more will be charged, and ${item.merchant} is told at once. This cannot be undone.`,
    },
    {
      path: 'recurring-consents',
      name: 'Payment authority',
      load: (email, id) => consentOfPayer(deps, email, id),
      act: (email, id, origin) => revokeConsentForPayer(deps, email, id, origin),
      verb: 'revoke',
      actionLabel: 'Revoke this authority',
      done: 'revoked',
      consequence: (item) =>
        `${item.merchant} will not be able to take any more payments with it, and your bank is told too. This cannot be undone.`,
    },
  ];
}

/** A subscription or a payment authority: its page, and cancelling or revoking it with a confirmation step. */
function registerAgreements(scope: Scope, pages: PayerPages): void {
  for (const kind of agreementKinds(pages.deps)) registerAgreementKind(scope, pages, kind);
}

function registerAgreementKind(scope: Scope, pages: PayerPages, kind: AgreementKind): void {
  const { deps, page, message, signedIn, sessionFormValid, forbidden, notFoundPage } = pages;
  const load = async (reply: FastifyReply, session: PayerSession, id: string) => {
    try {
      return await kind.load(session.email, id);
    } catch (error) {
      if (error instanceof AppError && error.status === 404) {
        notFoundPage(reply, session);
        return null;
      }
      throw error;
    }
  };
  scope.get<{ Params: { id: string }; Querystring: { done?: string } }>(
    `/customer/${kind.path}/:id`,
    hidden,
    async (request, reply) => {
      const session = await signedIn(request);
      if (!session) return reply.redirect('/customer', 303);
      const item = await load(reply, session, request.params.id);
      if (!item) return reply;
      const action =
        item.status === 'active' || (kind.verb === 'cancel' && item.status === 'paused')
          ? { href: `/customer/${kind.path}/${item.id}/${kind.verb}`, label: kind.actionLabel }
          : null;
      const flash = request.query.done === kind.done ? doneMessages[kind.done] : null;
      return page(reply, 200, 'detail', {
        title: `${item.title} (${kind.name.toLowerCase()} with ${item.merchant})`,
        session,
        item,
        kindName: kind.name,
        // Each payment with its refunds under it.
        payments: await withDocuments(deps, await withRefunds(deps, item.payments)),
        action,
        flash,
      });
    },
  );
  scope.get<{ Params: { id: string } }>(`/customer/${kind.path}/:id/${kind.verb}`, hidden, async (request, reply) => {
    const session = await signedIn(request);
    if (!session) return reply.redirect('/customer', 303);
    const item = await load(reply, session, request.params.id);
    if (!item) return reply;
    return page(reply, 200, 'confirm', {
      title: kind.actionLabel,
      session,
      item,
      heading: `${kind.actionLabel}: “${item.title}” with ${item.merchant}?`,
      consequence: kind.consequence(item),
      action: `/customer/${kind.path}/${item.id}/${kind.verb}`,
      confirm: `Yes, ${kind.verb} it`,
      back: `/customer/${kind.path}/${item.id}`,
    });
  });
  scope.post<{ Params: { id: string } }>(`/customer/${kind.path}/:id/${kind.verb}`, hidden, async (request, reply) => {
    const session = await signedIn(request);
    if (!session) return reply.redirect('/customer', 303);
    if (!sessionFormValid(request, session)) return forbidden(reply);
    const item = await load(reply, session, request.params.id);
    if (!item) return reply;
    try {
      await kind.act(session.email, item.id, {
        ip: request.ip,
        userAgent: request.headers['user-agent']?.slice(0, 200) ?? null,
        requestId: request.id,
      });
    } catch (error) {
      if (error instanceof AppError && error.code === 'conflict.invalid_state') {
        return message(
          reply,
          409,
          `This ${kind.name.toLowerCase()} has already ended`,
          'Nothing was changed.',
          session,
        );
      }
      throw error;
    }
    return reply.redirect(`/customer/${kind.path}/${item.id}?done=${kind.done}`, 303);
  });
}
