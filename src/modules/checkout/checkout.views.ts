import path from 'node:path';
import type { FastifyReply } from 'fastify';
import { contentSecurityPolicy, sendPage as sendWithPolicy, templatesIn } from '../../http/pages.ts';

// The hosted page's templates (the page kit's set-up) and the policy every checkout page carries.

const templates = templatesIn(path.join(import.meta.dirname, 'templates'));

export function render(template: string, data: Record<string, unknown>): string {
  return templates.render(template, data);
}

/** One or more DNS labels (letters, digits, inner hyphens) joined by dots: one host, never a pattern. */
const DNS_HOSTNAME = /^(?=.{1,253}$)[a-z0-9](?:[a-z0-9-]{0,61}[a-z0-9])?(?:\.[a-z0-9](?:[a-z0-9-]{0,61}[a-z0-9])?)*$/;
/** Hosts on the developer's own computer, the only ones a shop's page may frame the page from over plain http. */
const LOCAL_HOSTS = new Set(['localhost', '127.0.0.1']);

/**
 * The origin the page may be framed by (the embed widget's parent), or null for no framing. It goes
 * into the CSP's `frame-ancestors` and is the target of the result's postMessage, so it must be one
 * exact origin: https (plain http on localhost only) and a DNS host name, so no wildcard (`*.com`)
 * and no CSP punctuation (`;`, quotes) get through, which URL parsing alone lets pass. The service's
 * own origin is also accepted as it is, for its embed demo, which frames the page from itself.
 */
export function parseEmbedOrigin(value: unknown, serviceOrigin: string | null = null): string | null {
  if (typeof value !== 'string' || value.length > 300) return null;
  if (value === serviceOrigin) return value;
  let url: URL;
  try {
    url = new URL(value);
  } catch {
    return null;
  }
  // Only an origin as a browser writes it: no path, no default port, a lower-case host.
  if (url.origin !== value || !DNS_HOSTNAME.test(url.hostname)) return null;
  if (url.protocol === 'https:') return value;
  return url.protocol === 'http:' && LOCAL_HOSTS.has(url.hostname) ? value : null;
}

/**
 * Strict CSP: our own scripts, styles and images only (data: for the QR code); no inline code.
 * Framing is refused except by the one origin the embed widget was mounted on. Forms are not
 * restricted: the bank choice is answered by a redirect to the bank, which form-action would block.
 */
export function checkoutPolicy(embedOrigin: string | null, frameSrc: string | null = null): string {
  return contentSecurityPolicy({
    scripts: true,
    styles: 'self',
    images: true,
    connect: true,
    framedBy: embedOrigin,
    frames: frameSrc,
  });
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
  return sendWithPolicy(reply, status, html, checkoutPolicy(embedOrigin, frameSrc));
}
