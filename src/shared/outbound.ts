import dns from 'node:dns';
import { Agent } from 'undici';
import { ipLiteral, isGlobalUnicast } from './network.ts';

// The one way the service connects to a URL a merchant gave it. With `allowNonGlobal` false, every
// address is checked where the connection is made: the resolved address of a name (so a name that
// passed validation cannot be re-pointed at our network later, DNS rebinding), and a literal IP
// before anything is sent.

export class NonGlobalTargetError extends Error {
  readonly code = 'ENONGLOBAL';
  constructor(host: string, address: string) {
    super(`${host} is ${address}, which is not a globally routable address`);
  }
}

type LookupCallback = (err: NodeJS.ErrnoException | null, address: string | dns.LookupAddress[], family?: number) => void;

/** dns.lookup that fails for any non-global address. */
export function globalOnlyLookup(hostname: string, options: dns.LookupOptions, callback: LookupCallback): void {
  dns.lookup(hostname, options as dns.LookupAllOptions, (err, address: any, family?: number) => {
    if (err) return callback(err, address, family);
    const addresses: string[] = Array.isArray(address) ? address.map((entry: dns.LookupAddress) => entry.address) : [address];
    const bad = addresses.find((candidate) => !isGlobalUnicast(candidate));
    if (bad !== undefined) return callback(new NonGlobalTargetError(hostname, bad), address, family);
    callback(null, address, family);
  });
}

/** Throws NonGlobalTargetError for a URL whose host is a non-global IP literal (no lookup happens for those). */
export function refuseNonGlobalLiteral(url: string): void {
  const host = new URL(url).hostname;
  const literal = ipLiteral(host);
  if (literal !== null && !isGlobalUnicast(literal)) throw new NonGlobalTargetError(host, literal);
}

export type OutboundPolicy = { allowNonGlobal: boolean };

/** An undici Agent whose connections follow the policy. */
export function outboundAgent(policy: OutboundPolicy, options: Agent.Options = {}): Agent {
  return policy.allowNonGlobal ? new Agent(options) : new Agent({ ...options, connect: { ...(options.connect as object), lookup: globalOnlyLookup as any } });
}
