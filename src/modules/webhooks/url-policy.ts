import { lookup } from 'node:dns/promises';
import { BlockList, isIP } from 'node:net';
import { invalidParam } from '../../shared/errors.ts';
import type { Mode } from '../../store/tables.ts';

// Where webhooks may be sent. Live endpoints must be https and must not reach into the service's
// own network (SSRF): private, loopback, link-local and other non-public ranges are refused unless
// the operator sets WEBHOOK_ALLOW_PRIVATE=true. Test endpoints may also use http on this machine.

const nonPublic = new BlockList();
for (const [net, prefix] of [
  ['0.0.0.0', 8], ['10.0.0.0', 8], ['100.64.0.0', 10], ['127.0.0.0', 8], ['169.254.0.0', 16], ['172.16.0.0', 12],
  ['192.0.0.0', 24], ['192.168.0.0', 16], ['198.18.0.0', 15], ['224.0.0.0', 4], ['240.0.0.0', 4],
] as const) nonPublic.addSubnet(net, prefix, 'ipv4');
for (const [net, prefix] of [
  ['::', 128], ['::1', 128], ['fc00::', 7], ['fe80::', 10], ['ff00::', 8], ['64:ff9b:1::', 48],
] as const) nonPublic.addSubnet(net, prefix, 'ipv6');

/** True for addresses a public webhook target never has (private, loopback, link-local, …). */
export function isNonPublicAddress(address: string): boolean {
  const family = isIP(address);
  if (family === 0) return false;
  if (family === 6) {
    const mapped = /^::ffff:(\d+\.\d+\.\d+\.\d+)$/i.exec(address);
    if (mapped) return nonPublic.check(mapped[1], 'ipv4');
    return nonPublic.check(address, 'ipv6');
  }
  return nonPublic.check(address, 'ipv4');
}

export function isLoopbackHost(hostname: string): boolean {
  const host = hostname.replace(/^\[|\]$/g, '').toLowerCase();
  return host === 'localhost' || host.endsWith('.localhost') || host === '::1' || (isIP(host) === 4 && host.startsWith('127.'));
}

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
