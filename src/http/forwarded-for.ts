import ipaddr from 'ipaddr.js';

/**
 * X-Forwarded-For with the ports some proxies append taken off its entries (`203.0.113.5:4711`,
 * `[2001:db8::1]:4711`): with a port, each new connection of one client would be a new address to
 * every per-address limit. An entry that is no address either way is left as it is.
 */
export function withoutPorts(header: string): string {
  return header
    .split(',')
    .map((entry) => addressOf(entry.trim()))
    .join(', ');
}

function addressOf(entry: string): string {
  const bracketed = /^\[([^\]]+)\](?::\d{1,5})?$/.exec(entry);
  if (bracketed && ipaddr.IPv6.isValid(bracketed[1]!)) return bracketed[1]!;
  const v4WithPort = /^(\d{1,3}(?:\.\d{1,3}){3}):\d{1,5}$/.exec(entry);
  if (v4WithPort && ipaddr.IPv4.isValidFourPartDecimal(v4WithPort[1]!)) return v4WithPort[1]!;
  return entry;
}
