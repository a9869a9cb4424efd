import dns from 'node:dns';
import { Agent } from 'undici';
import { ipLiteral, mayReach, type Reach } from './network.ts';

// The one way the service connects to a URL a merchant gave it. Unless its reach is `any`, every
// address is checked where the connection is made: the resolved address of a name (so a name that
// passed validation cannot be re-pointed at our network later, DNS rebinding), and a literal IP
// before anything is sent.

export class NonGlobalTargetError extends Error {
  readonly code = 'ENONGLOBAL';
  constructor(host: string, address: string) {
    super(`${host === address ? address : `${host} is ${address}, which`} is not a globally routable address`);
  }
}

type LookupCallback = (
  err: NodeJS.ErrnoException | null,
  address: string | dns.LookupAddress[],
  family?: number,
) => void;
/** The shape of dns.lookup as net.connect calls it (with `all: true` when it tries several addresses). */
export type Lookup = (hostname: string, options: dns.LookupOptions, callback: LookupCallback) => void;

const systemLookup: Lookup = (hostname, options, callback) =>
  dns.lookup(hostname, options as dns.LookupAllOptions, callback as any);

/** `base`, failing for a name when any address it resolves to is beyond `reach`. */
export function within(reach: Reach, base: Lookup): Lookup {
  if (reach === 'any') return base;
  return (hostname, options, callback) => {
    base(hostname, options, (err, address, family) => {
      if (err) return callback(err, address, family);
      const addresses = Array.isArray(address) ? address.map((entry) => entry.address) : [address];
      const bad = addresses.find((candidate) => !mayReach(reach, candidate));
      if (bad !== undefined) return callback(new NonGlobalTargetError(hostname, bad), address, family);
      callback(null, address, family);
    });
  };
}

/** dns.lookup that fails for any non-global address. */
export const globalOnlyLookup: Lookup = within('global', systemLookup);

/** Throws NonGlobalTargetError for a URL whose host is an IP literal beyond `reach` (no lookup happens for those). */
export function refuseLiteralBeyond(reach: Reach, url: string): void {
  const host = new URL(url).hostname;
  const literal = ipLiteral(host);
  if (literal !== null && !mayReach(reach, literal)) throw new NonGlobalTargetError(host, literal);
}

/** `lookup` replaces the system resolver (tests resolve made-up names with it); the check wraps it all the same. */
export type OutboundPolicy = { reach: Reach; lookup?: Lookup };

/** An undici Agent whose connections follow the policy. */
export function outboundAgent(policy: OutboundPolicy, options: Agent.Options = {}): Agent {
  const lookup = within(policy.reach, policy.lookup ?? systemLookup);
  return new Agent({ ...options, connect: { ...(options.connect as object), lookup: lookup as any } });
}
