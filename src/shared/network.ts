import ipaddr from 'ipaddr.js';

// Which addresses the service may reach on a merchant's behalf (webhooks, logo and banner
// fetches): globally routable unicast only, from ipaddr.js's table of the IANA special-purpose
// registries. Everything else (loopback, private, link-local, carrier-grade NAT, documentation
// and benchmarking ranges, multicast, and every IPv6 form that embeds an IPv4 address: mapped,
// compatible, NAT64, 6to4, Teredo) is refused, unless the operator allows non-global targets
// (docs/security.md). IPv6 must also be inside 2000::/3, the only block allocated for global unicast.

/**
 * How far outbound connections for one mode may reach: `global` addresses only; those and this
 * machine's loopback (test mode of a service listening on loopback alone, so a laptop's local
 * webhook receiver works); or `any` address (ALLOW_PRIVATE_TARGETS=true).
 */
export type Reach = 'global' | 'loopback' | 'any';

/** Whether a connection under `reach` may go to `address` (an IP literal). */
export function mayReach(reach: Reach, address: string): boolean {
  if (reach === 'any' || isGlobalUnicast(address)) return true;
  return reach === 'loopback' && isLoopbackHost(address);
}

const globalUnicastV6 = ipaddr.parseCIDR('2000::/3') as [ipaddr.IPv6, number];

/** True only for a globally routable unicast address; false for anything else, including non-addresses. */
export function isGlobalUnicast(address: string): boolean {
  const text = ipLiteral(address);
  if (text === null) return false;
  const parsed = ipaddr.parse(text);
  if (parsed.kind() === 'ipv4') return parsed.range() === 'unicast';
  const v6 = parsed as ipaddr.IPv6;
  return v6.range() === 'unicast' && v6.match(globalUnicastV6);
}

/** An IP literal host (with or without brackets; IPv4 only as four decimal parts), or null for anything else. */
export function ipLiteral(hostname: string): string | null {
  const host = hostname.replace(/^\[|\]$/g, '');
  return ipaddr.isValid(host) && (ipaddr.IPv4.isValidFourPartDecimal(host) || host.includes(':')) ? host : null;
}

export function isLoopbackHost(hostname: string): boolean {
  const host = hostname.replace(/^\[|\]$/g, '').toLowerCase();
  if (host === 'localhost' || host.endsWith('.localhost')) return true;
  return ipaddr.isValid(host) && ipaddr.process(host).range() === 'loopback';
}
