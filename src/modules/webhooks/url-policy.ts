import { lookup } from 'node:dns/promises';
import { invalidParam } from '../../shared/errors.ts';
import { ipLiteral, isLoopbackHost, mayReach, type Reach } from '../../shared/network.ts';
import type { Mode } from '../../shared/mode.ts';

// Where webhooks may be sent. Live endpoints must be https; test endpoints may also use http on
// this machine. Every address of the host must be within the mode's reach: globally routable
// unicast, plus loopback in test mode on a service that listens on loopback alone, or anything with
// ALLOW_PRIVATE_TARGETS=true (docs/security.md). The sender checks the address again at connect time.

const URL_FORM = 'an https URL (http only to localhost with a test key), at most 2048 characters';
export type Resolver = (hostname: string) => Promise<string[]>;
const dnsResolver: Resolver = async (hostname) =>
  (await lookup(hostname, { all: true, verbatim: true })).map((entry) => entry.address);

/** Checks a webhook URL for a mode, resolving its host unless any target is allowed. Returns it normalised. */
export async function validateWebhookUrl(
  raw: string,
  mode: Mode,
  options: { reach: Reach; resolve?: Resolver },
): Promise<string> {
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
  if (options.reach !== 'any') {
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
    const loopbackName = isLoopbackHost(host) && options.reach !== 'loopback';
    if (addresses.length === 0 || loopbackName || !addresses.every((address) => mayReach(options.reach, address))) {
      throw invalidParam(
        'url',
        `url's host ${host} is not a globally routable address (private, loopback, link-local or another special-purpose range); ` +
          `webhooks must reach a public address${options.reach === 'loopback' ? ' or this machine' : ''} unless the operator sets ALLOW_PRIVATE_TARGETS=true`,
        { host },
      );
    }
  }
  return url.toString();
}
