import { lookup } from 'node:dns/promises';
import { isIP } from 'node:net';
import { isLoopbackHost, isNonPublicAddress } from '../../shared/network.ts';
import { invalidParam } from '../../shared/errors.ts';
import type { Mode } from '../../store/tables.ts';

// Where webhooks may be sent. Live endpoints must be https and must not reach into the service's
// own network (SSRF): private, loopback, link-local and other non-public ranges are refused unless
// the operator sets WEBHOOK_ALLOW_PRIVATE=true. Test endpoints may also use http on this machine.

export { isLoopbackHost, isNonPublicAddress } from '../../shared/network.ts';

const URL_FORM = 'an https URL (http only to localhost with a test key), at most 2048 characters';
export type Resolver = (hostname: string) => Promise<string[]>;
const dnsResolver: Resolver = async (hostname) => (await lookup(hostname, { all: true, verbatim: true })).map((entry) => entry.address);

/** Checks a webhook URL for a mode, resolving its host for live endpoints. Returns it normalised. */
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
    return url.toString();
  }
  if (url.protocol !== 'https:') throw invalidParam('url', `url must be ${URL_FORM}`);
  if (mode === 'live' && !options.allowPrivate) {
    let addresses: string[];
    if (isIP(host)) addresses = [host];
    else {
      try {
        addresses = await (options.resolve ?? dnsResolver)(host);
      } catch {
        throw invalidParam('url', `url's host ${host} does not resolve`, { host });
      }
    }
    if (addresses.length === 0 || isLoopbackHost(host) || addresses.some(isNonPublicAddress)) {
      throw invalidParam('url', `url's host ${host} is a private, loopback or link-local address; live webhooks must reach a public address`, { host });
    }
  }
  return url.toString();
}
