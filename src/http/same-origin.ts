import type { FastifyRequest } from 'fastify';

/**
 * Whether a form post comes from our own pages; a cross-site one is refused before anything else.
 * Browsers say where a post comes from in Sec-Fetch-Site; without it, the Origin (or Referer) must
 * be ours. Chromium sends `Origin: null` from pages with Referrer-Policy: no-referrer, so
 * Sec-Fetch-Site is read first.
 */
export function isSameOriginPost(request: FastifyRequest, ourOrigin: string): boolean {
  const site = request.headers['sec-fetch-site'];
  if (typeof site === 'string') return site === 'same-origin';
  const from = request.headers.origin ?? request.headers.referer;
  if (typeof from !== 'string') return true;
  try {
    return new URL(from).origin === ourOrigin;
  } catch {
    return false;
  }
}
