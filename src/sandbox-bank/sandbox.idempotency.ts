import { stringify as canonicalJson } from 'safe-stable-stringify';
import { sha256Hex } from '../shared/crypto.ts';
import { DAY_MS } from '../shared/time.ts';
import { fieldInvalid } from './sandbox.errors.ts';
import type { SandboxDb } from './sandbox.context.ts';
import { claimIdempotency, deleteIdempotency, findIdempotency } from './sandbox.repo.ts';

// x-idempotency-key: one processing per client, endpoint and key for 24 hours. Call inside the
// transaction that creates the resource, so a failed attempt releases the key with its rollback.

export const IDEMPOTENCY_WINDOW_MS = DAY_MS;

/** The same JSON with its keys in another order is the same request. */
export function fingerprintOf(body: unknown): string {
  return sha256Hex(canonicalJson(body) ?? 'null');
}

/** Either the id of the resource this key already made, or `fresh: newId` now held for us. */
export async function holdIdempotencyKey(
  trx: SandboxDb,
  input: { clientId: string; endpoint: string; key: string; fingerprint: string; newId: string; now: number },
): Promise<{ replayOf: string | null }> {
  // Claimed first: a fresh key, the common case, then costs one statement.
  for (let attempt = 0; attempt < 2; attempt++) {
    const claimed = await claimIdempotency(trx, {
      client_id: input.clientId,
      endpoint: input.endpoint,
      key: input.key,
      fingerprint: input.fingerprint,
      resource_id: input.newId,
      created_at: input.now,
    });
    if (claimed) return { replayOf: null };
    const existing = await findIdempotency(trx, input.clientId, input.endpoint, input.key);
    if (!existing) continue;
    if (existing.created_at > input.now - IDEMPOTENCY_WINDOW_MS) {
      if (existing.fingerprint !== input.fingerprint) {
        throw fieldInvalid('x-idempotency-key', 'x-idempotency-key was already used with a different request body');
      }
      return { replayOf: existing.resource_id };
    }
    // Older than the window: the key is free again.
    await deleteIdempotency(trx, input.clientId, input.endpoint, input.key);
  }
  throw fieldInvalid('x-idempotency-key', 'x-idempotency-key is in use by a concurrent request; retry');
}
