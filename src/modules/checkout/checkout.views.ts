import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { Eta } from 'eta';
import type { FastifyReply } from 'fastify';

// Server-rendered pages: Eta templates with auto-escaping on (`<%= %>` escapes; `<%~ %>` is used
// only for our own rendered partials), and the security headers every checkout page carries.

const here = path.dirname(fileURLToPath(import.meta.url));
const eta = new Eta({ views: path.join(here, 'templates'), autoEscape: true, cache: true, autoTrim: [false, 'nl'] });

export function render(template: string, data: Record<string, unknown>): string {
  return eta.render(`./${template}`, data);
}

/** An origin the page may be framed by (the embed widget's parent), or null when the value is not an origin. */
export function parseEmbedOrigin(value: unknown): string | null {
  if (typeof value !== 'string' || value.length > 300) return null;
  try {
    const url = new URL(value);
    if (url.protocol !== 'https:' && url.protocol !== 'http:') return null;
    return url.origin === value ? value : null;
  } catch {
    return null;
  }
}

/**
 * Strict CSP: our own scripts, styles and images only (data: for the QR code); no inline code.
 * Framing is refused except by the one origin the embed widget was mounted on.
 */
export function contentSecurityPolicy(embedOrigin: string | null, frameSrc: string | null = null): string {
  return [
    "default-src 'none'",
    "script-src 'self'",
    "style-src 'self'",
    "img-src 'self' data:",
    "connect-src 'self'",
    "base-uri 'none'",
    `frame-ancestors ${embedOrigin ?? "'none'"}`,
    ...(frameSrc ? [`frame-src ${frameSrc}`] : []),
  ].join('; ');
}

/**
 * `frameSrc` only for the embed demo, which frames the payment page itself. The headers every page
 * shares (nosniff, Referrer-Policy, Cache-Control) come from the app's page hook (src/http/page-headers.ts).
 */
export function sendPage(
  reply: FastifyReply,
  status: number,
  html: string,
  embedOrigin: string | null = null,
  frameSrc: string | null = null,
): FastifyReply {
  return reply
    .status(status)
    .header('content-type', 'text/html; charset=utf-8')
    .header('content-security-policy', contentSecurityPolicy(embedOrigin, frameSrc))
    .send(html);
}
