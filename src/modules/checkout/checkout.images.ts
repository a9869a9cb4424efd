import { fetch, type Agent } from 'undici';
import type { Reach } from '../../shared/network.ts';
import { outboundAgent, refuseLiteralBeyond } from '../../shared/outbound.ts';
import { isAllowedUrl } from '../requests/requests.rules.ts';

// Merchant logos and banners are fetched by the service and served from its own origin, so the
// page keeps a strict img-src 'self' and the payer's browser never contacts a third party. Only
// real raster images are relayed (checked by their first bytes), at most 2 MB, no redirects. The
// address connected to must be within the request's mode's reach (checked at connect time,
// docs/security.md), so a merchant cannot make the service fetch from its own network.

const MAX_BYTES = 2 * 1024 * 1024;
const TTL_MS = 10 * 60_000;
const MAX_ENTRIES = 200;

type Image = { type: string; bytes: Buffer };
const cache = new Map<string, { at: number; image: Image | null }>();

export function sniffImageType(bytes: Buffer): string | null {
  if (bytes.length >= 8 && bytes.subarray(0, 8).equals(Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a])))
    return 'image/png';
  if (bytes.length >= 3 && bytes[0] === 0xff && bytes[1] === 0xd8 && bytes[2] === 0xff) return 'image/jpeg';
  if (bytes.length >= 6 && /^GIF8[79]a$/.test(bytes.subarray(0, 6).toString('latin1'))) return 'image/gif';
  if (
    bytes.length >= 12 &&
    bytes.subarray(0, 4).toString('latin1') === 'RIFF' &&
    bytes.subarray(8, 12).toString('latin1') === 'WEBP'
  )
    return 'image/webp';
  return null;
}

const agents = new Map<Reach, Agent>();
function agentFor(reach: Reach): Agent {
  let agent = agents.get(reach);
  if (!agent) agents.set(reach, (agent = outboundAgent({ reach }, { connections: 4 })));
  return agent;
}

async function fetchImage(url: string, reach: Reach): Promise<Image | null> {
  if (!isAllowedUrl(url)) return null;
  try {
    refuseLiteralBeyond(reach, url);
    const response = await fetch(url, {
      redirect: 'error',
      signal: AbortSignal.timeout(5000),
      headers: { accept: 'image/png,image/jpeg,image/gif,image/webp' },
      dispatcher: agentFor(reach),
    });
    if (!response.ok || !response.body) return null;
    const chunks: Buffer[] = [];
    let size = 0;
    for await (const chunk of response.body) {
      size += chunk.length;
      if (size > MAX_BYTES) return null;
      chunks.push(Buffer.from(chunk));
    }
    const bytes = Buffer.concat(chunks);
    const type = sniffImageType(bytes);
    return type ? { type, bytes } : null;
  } catch {
    return null;
  }
}

/** The image at `url`, cached for ten minutes, fetched only from an address within `reach`. */
export async function merchantImage(url: string, options: { reach: Reach }, now = Date.now()): Promise<Image | null> {
  const key = `${options.reach} ${url}`;
  const hit = cache.get(key);
  if (hit && now - hit.at < TTL_MS) return hit.image;
  const image = await fetchImage(url, options.reach);
  if (cache.size >= MAX_ENTRIES) cache.delete(cache.keys().next().value!);
  cache.set(key, { at: now, image });
  return image;
}
