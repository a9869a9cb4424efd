import { randomBytes } from 'node:crypto';
import { Eta } from 'eta';
import type {} from '@fastify/cookie';
import type { FastifyReply, FastifyRequest } from 'fastify';
import { constantTimeEqual, randomSecret } from '../shared/crypto.ts';
import { isSameOriginPost } from './same-origin.ts';

// The page kit: what every server-rendered page of the service shares (the hosted page, the
// merchant dashboard, the payer dashboard, the sandbox bank's pages) and the emails' templates.
// One template set-up, one Content-Security-Policy builder, and the CSRF and cookie rules of forms.
// The headers every page carries besides its policy (nosniff, Referrer-Policy, Cache-Control) are
// set by the app's page hook (page-headers.ts).

export type Templates = { render(template: string, data: Record<string, unknown>): string };

/**
 * The templates in `views`: Eta with auto-escaping on (`<%= %>` escapes; `<%~ %>` only for our own
 * rendered partials), compiled once. `plainText` turns escaping off, for the text part of an email.
 */
export function templatesIn(views: string, options: { plainText?: boolean } = {}): Templates {
  const eta = options.plainText
    ? new Eta({ views, autoEscape: false, cache: true, autoTrim: false })
    : new Eta({ views, autoEscape: true, cache: true, autoTrim: [false, 'nl'] });
  return { render: (template, data) => eta.render(`./${template}`, data) };
}

/** What a page may load and do; everything not named is refused (`default-src 'none'`). */
export type PagePolicy = {
  /** Our own scripts. */
  scripts?: boolean;
  /** Our own stylesheets, or inline styles under this nonce (a page with no assets of its own). */
  styles?: 'self' | { nonce: string };
  /** Our own images and data: URLs (the QR code). */
  images?: boolean;
  /** fetch() to ourselves (the hosted page's status polling). */
  connect?: boolean;
  /** Where forms may post: ourselves, and these origins. Absent: not restricted (a post answered by a redirect to a bank). */
  formsTo?: string[];
  /** The one origin that may frame the page (the embed widget's parent); otherwise nobody. */
  framedBy?: string | null;
  /** What the page may frame (the embed demo frames the payment page). */
  frames?: string | null;
};

export function contentSecurityPolicy(policy: PagePolicy): string {
  const styles =
    policy.styles === undefined ? null : policy.styles === 'self' ? "'self'" : `'nonce-${policy.styles.nonce}'`;
  return [
    "default-src 'none'",
    policy.scripts ? "script-src 'self'" : null,
    styles ? `style-src ${styles}` : null,
    policy.images ? "img-src 'self' data:" : null,
    policy.connect ? "connect-src 'self'" : null,
    policy.formsTo ? `form-action ${["'self'", ...policy.formsTo].join(' ')}` : null,
    "base-uri 'none'",
    `frame-ancestors ${policy.framedBy ?? "'none'"}`,
    policy.frames ? `frame-src ${policy.frames}` : null,
  ]
    .filter((directive) => directive !== null)
    .join('; ');
}

/** A nonce for one response's inline styles. */
export function styleNonce(): string {
  return randomBytes(16).toString('base64');
}

/** Sends a rendered page with its policy. */
export function sendPage(reply: FastifyReply, status: number, html: string, policy: string): FastifyReply {
  return reply
    .status(status)
    .header('content-type', 'text/html; charset=utf-8')
    .header('content-security-policy', policy)
    .send(html);
}

/** Cookies of signed-in pages: this path only, never to scripts, not sent on cross-site posts, Secure over HTTPS. */
export function pageCookieOptions(cookiePath: string, publicBaseUrl: string) {
  return {
    path: cookiePath,
    httpOnly: true,
    sameSite: 'lax' as const,
    secure: publicBaseUrl.startsWith('https:'),
  };
}

/** The `name` field of a posted form, as text ('' when absent). */
export function formField(body: unknown, name: string): string {
  const value = (body as Record<string, unknown> | undefined)?.[name];
  return typeof value === 'string' ? value : '';
}

/**
 * Whether a posted form may act: sent from our own origin, carrying the token it was given
 * (`expected`: the session's, or the pre-session cookie's), compared in constant time.
 */
export function formTokenMatches(request: FastifyRequest, expected: string | undefined, origin: string): boolean {
  const sent = formField(request.body, 'csrf').slice(0, 200);
  return isSameOriginPost(request, origin) && !!expected && sent.length > 0 && constantTimeEqual(sent, expected);
}

/**
 * The CSRF token of a form shown before sign-in, kept in its own cookie (double submit): the one
 * the browser holds, or a new one set now.
 */
export function preSessionToken(
  request: FastifyRequest,
  reply: FastifyReply,
  cookie: { name: string; options: ReturnType<typeof pageCookieOptions> },
): string {
  const held = request.cookies[cookie.name];
  if (held && /^[A-Za-z0-9_-]{32}$/.test(held)) return held;
  const token = randomSecret(24);
  reply.setCookie(cookie.name, token, cookie.options);
  return token;
}
