import { randomInt } from 'node:crypto';
import { constantTimeEqual, randomSecret, sha256Hex } from '../../shared/crypto.ts';
import { newId } from '../../shared/ids.ts';
import { giveBackAttempt, takeAttempt, type AttemptLimit } from '../../store/attempts.ts';
import { payerHasConsents } from '../consents/consents.payer.ts';
import { queueMail } from '../mail/mail.service.ts';
import { payerHasSubscriptions } from '../subscriptions/subscriptions.payer.ts';
import type { Deps } from '../context.ts';
import {
  endSessionRow,
  findSession,
  insertCode,
  insertSession,
  killLiveCodes,
  liveCodeOf,
  markCode,
  spendTry,
  touchSession,
} from './payer.repo.ts';

// Payer sign-in by a one-time code sent to the email registered on their consents and
// subscriptions (docs/payer.md). A code lasts 10 minutes and allows 5 tries; a new code kills the
// old one; codes are limited per email and per client address, in the database so every process
// shares the count. The replies never say whether an email is known. Sessions are server-side, found by the SHA-256 of the cookie's value.

export const CODE_TTL_MS = 10 * 60_000;
export const CODE_TRIES = 5;
export const SESSION_IDLE_MS = 30 * 60_000;
export const SESSION_MAX_MS = 12 * 60 * 60_000;

export type PayerSession = { email: string; csrfToken: string };

/**
 * Sign-in limits (docs/security.md, "Limits"): each attempt is taken before the work it limits, in
 * one atomic step, so concurrent requests cannot all pass a count made before any was recorded.
 */
export const PAYER_LIMITS = {
  /** Codes asked for from one client address in an hour (every ask counts). */
  sendsByClient: { scope: 'payer.code.client', max: 20, windowMs: 60 * 60_000 },
  /** Codes made for one email in an hour. */
  codesByEmail: { scope: 'payer.code.email', max: 5, windowMs: 60 * 60_000 },
  /** Wrong codes from one client address in an hour (a right one is given back). */
  checksByClient: { scope: 'payer.check.client', max: 30, windowMs: 60 * 60_000 },
} as const satisfies Record<string, AttemptLimit>;

export function normaliseEmail(raw: unknown): string | null {
  if (typeof raw !== 'string') return null;
  const email = raw.trim().toLowerCase();
  return email.length <= 254 && /^[^\s@]+@[^\s@]+\.[^\s@]+$/.test(email) ? email : null;
}

export type SendOutcome = { kind: 'sent' } | { kind: 'limited'; retryAfterMs: number };

/**
 * Sends a code when the email has anything to manage. Whether it did is never told: the page says
 * the same either way, and the work done is the same up to the mail queue.
 */
export async function sendCode(deps: Deps, email: string, clientAddress: string): Promise<SendOutcome> {
  const now = deps.clock.now();
  const byAddress = await takeAttempt(deps.db, PAYER_LIMITS.sendsByClient, clientAddress, now);
  if (!byAddress.ok) return { kind: 'limited', retryAfterMs: byAddress.retryAfterMs };
  const known = (await payerHasSubscriptions(deps, email)) || (await payerHasConsents(deps, email));
  return deps.store.transaction(async (trx) => {
    // Taken in the transaction that makes the code: the email's count row stays locked until it
    // commits, so concurrent asks for one email run one after another, each killing the code before.
    const byEmail = await takeAttempt(trx, PAYER_LIMITS.codesByEmail, email, now);
    if (!byEmail.ok) return { kind: 'limited', retryAfterMs: byEmail.retryAfterMs } as const;
    // One live code per email: a new one kills the rest. An unknown email gets a live code too,
    // never sent, so limits, wrong tries and expiry all answer the same whether it is known or not
    // (guessing it would only open an empty page).
    await killLiveCodes(trx, email, now);
    const code = String(randomInt(0, 1_000_000)).padStart(6, '0');
    await insertCode(trx, {
      id: newId('payerCode'),
      email,
      code_sealed: deps.secrets.seal(code),
      tries_left: CODE_TRIES,
      expires_at: now + CODE_TTL_MS,
      used_at: null,
      dead_at: null,
      created_at: now,
    });
    if (known) {
      await queueMail(
        trx,
        {
          to: email,
          template: 'payer_code',
          data: { code, minutes: CODE_TTL_MS / 60_000 },
          related: { type: 'payer', id: email },
        },
        now,
        deps.secrets,
      );
    }
    return { kind: 'sent' } as const;
  });
}

export type VerifyOutcome =
  | { kind: 'signed_in'; sessionId: string }
  | { kind: 'wrong'; triesLeft: number }
  | { kind: 'dead' }
  | { kind: 'limited'; retryAfterMs: number };

/** Checks a code: 5 tries, 10 minutes, once. On success, a new server-side session. */
export async function verifyCode(
  deps: Deps,
  email: string,
  code: string,
  clientAddress: string,
): Promise<VerifyOutcome> {
  const now = deps.clock.now();
  const byAddress = await takeAttempt(deps.db, PAYER_LIMITS.checksByClient, clientAddress, now);
  if (!byAddress.ok) return { kind: 'limited', retryAfterMs: byAddress.retryAfterMs };
  const outcome = await deps.store.transaction(async (trx) => {
    const live = await liveCodeOf(trx, email, now);
    if (!live || live.tries_left <= 0) return { kind: 'dead' } as const;
    // Spend a try first, atomically: concurrent guesses cannot share one.
    if (!(await spendTry(trx, live.id))) return { kind: 'dead' } as const;
    const left = live.tries_left - 1;
    if (!/^\d{6}$/.test(code) || !constantTimeEqual(deps.secrets.open(live.code_sealed), code)) {
      if (left === 0) await markCode(trx, live.id, { dead_at: now });
      return left === 0 ? ({ kind: 'dead' } as const) : ({ kind: 'wrong', triesLeft: left } as const);
    }
    await markCode(trx, live.id, { used_at: now });
    const sessionId = randomSecret(32);
    await insertSession(trx, {
      id_hash: sha256Hex(sessionId),
      email,
      csrf_token: randomSecret(24),
      created_at: now,
      last_seen_at: now,
      expires_at: now + SESSION_MAX_MS,
      ended_at: null,
    });
    return { kind: 'signed_in', sessionId } as const;
  });
  if (outcome.kind === 'signed_in')
    await giveBackAttempt(deps.db, PAYER_LIMITS.checksByClient, clientAddress, byAddress.windowStart);
  return outcome;
}

/** The session a cookie names, if it is live; seeing it keeps it alive (30 minutes idle, 12 hours at most). */
export async function sessionOf(deps: Deps, sessionId: string | undefined): Promise<PayerSession | null> {
  if (!sessionId || sessionId.length > 100) return null;
  const now = deps.clock.now();
  const row = await findSession(deps.db, sha256Hex(sessionId));
  if (!row || row.ended_at !== null || row.expires_at <= now || row.last_seen_at + SESSION_IDLE_MS <= now) return null;
  if (now - row.last_seen_at > 60_000) await touchSession(deps.db, row.id_hash, now);
  return { email: row.email, csrfToken: row.csrf_token };
}

export async function endSession(deps: Deps, sessionId: string | undefined): Promise<void> {
  if (!sessionId) return;
  await endSessionRow(deps.db, sha256Hex(sessionId), deps.clock.now());
}
