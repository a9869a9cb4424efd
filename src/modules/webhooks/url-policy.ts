import { lookup } from 'node:dns/promises';
import { invalidParam } from '../../shared/errors.ts';
import { ipLiteral, isGlobalUnicast, isLoopbackHost } from '../../shared/network.ts';
import type { Mode } from '../../shared/mode.ts';

// Where webhooks may be sent. Live endpoints must be https; test endpoints may also use http on
// this machine. In both modes every address of the host must be globally routable unicast unless
// non-global targets are allowed (ALLOW_PRIVATE_TARGETS, on by default only for a service that
// listens on loopback alone): docs/security.md. The sender checks the address again at connect time.

const URL_FORM = 'an https URL (http only to localhost with a test key), at most 2048 characters';
export type Resolver = (hostname: string) => Promise<string[]>;
const dnsResolver: Resolver = async (hostname) => (await lookup(hostname, { all: true, verbatim: true })).map((entry) => entry.address);

/** Checks a webhook URL for a mode, resolving its host unless non-global targets are allowed. Returns it normalised. */
export async function validateWebhookUrl(raw: string, mode: Mode, options: { allowPrivate: boolean; resolve?: Resolver }): Promise<string> {
  let url: URL;
  try {
    url = new URL(raw);
  } catch {
    throw invalidParam('url', `url must be ${URL_FORM}`);
  }
  if (url.username || url.password) throw invalidParam('url', 'url must not contain a user name or password');
  const host = url.hostname.replace(/^\[|\]$/g, '');
  if (url.protocol === 'http:') {
    if (mode !== 'test' || !isLoopbackHost(host)) throw invalidParam('url', `url must be ${URL_FORM}`);
  } else if (url.protocol !== 'https:') {
    throw invalidParam('url', `url must be ${URL_FORM}`);
  }
  if (!options.allowPrivate) {
    const literal = ipLiteral(host);
    let addresses: string[];
    if (literal !== null) addresses = [literal];
    else {
      try {
        addresses = await (options.resolve ?? dnsResolver)(host);
      } catch {
        throw invalidParam('url', `url's host ${host} does not resolve`, { host });
      }
    }
    if (addresses.length === 0 || isLoopbackHost(host) || !addresses.every(isGlobalUnicast)) {
      throw invalidParam('url', `url's host ${host} is not a globally routable address (private, loopback, link-local or another special-purpose range); `
        + 'webhooks must reach a public address unless the operator sets ALLOW_PRIVATE_TARGETS=true', { host });
    }
  }
  return url.toString();
}
