import type { FastifyReply } from 'fastify';
import { contentSecurityPolicy } from './pages.ts';

// Every HTML page the service sends (the hosted page and its error pages, the payer dashboard,
// the sandbox bank's pages) carries the same security headers, set here once. A page that needs a
// different Content-Security-Policy (the embed, framed by one merchant origin) sets its own; the
// default refuses everything but our own styles, scripts and images, and any framing.
// Every other response (JSON, the widget's script, styles) gets nosniff too, so a browser never
// reads one as a type it was not sent as.

export const DEFAULT_PAGE_CSP = contentSecurityPolicy({
  scripts: true,
  styles: 'self',
  images: true,
  connect: true,
  formsTo: [],
});

/** Sets the headers on a reply about to be sent (from an onSend hook). */
export function pageSecurityHeaders(reply: FastifyReply): void {
  reply.header('x-content-type-options', 'nosniff');
  const type = reply.getHeader('content-type');
  if (typeof type !== 'string' || !type.startsWith('text/html')) return;
  reply.header('referrer-policy', 'no-referrer');
  if (!reply.hasHeader('cache-control')) reply.header('cache-control', 'no-store');
  if (!reply.hasHeader('content-security-policy')) reply.header('content-security-policy', DEFAULT_PAGE_CSP);
}

/** The headers as an onSend hook of their own (an app with no other onSend work). */
export function pageSecurityHeadersHook(
  _request: unknown,
  reply: FastifyReply,
  payload: unknown,
  done: (error: null, payload: unknown) => void,
): void {
  pageSecurityHeaders(reply);
  done(null, payload);
}
