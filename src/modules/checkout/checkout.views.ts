import path from 'node:path';
import type { FastifyReply } from 'fastify';
import { contentSecurityPolicy, sendPage as sendWithPolicy, templatesIn } from '../../http/pages.ts';

// The hosted page's templates (the page kit's set-up) and the policy every checkout page carries.

const templates = templatesIn(path.join(import.meta.dirname, 'templates'));

export function render(template: string, data: Record<string, unknown>): string {
  return templates.render(template, data);
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
