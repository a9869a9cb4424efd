import { randomInt } from 'node:crypto';
import { constantTimeEqual, randomSecret, sha256Hex } from '../../shared/crypto.ts';
import { newId } from '../../shared/ids.ts';
import { giveBackAttempt, refusedForMs, takeAttempt, type AttemptLimit } from '../../store/attempts.ts';
import type { Db } from '../../store/db.ts';
import { DEFAULT_ZONE, describeMoment } from '../../shared/zone.ts';
import { payerHasConsents } from '../consents/consents.payer.ts';
import { queueMail } from '../mail/mail.service.ts';
import { payerHasSubscriptions } from '../subscriptions/subscriptions.payer.ts';
import type { Deps } from '../context.ts';
import {
  endSessionRow,
  extendCode,
  codeUsedBy,
  findSession,
  insertCode,
  insertSession,
  liveCodeOf,
  markCode,
  spendTry,
  touchSession,
  type PayerCodeRow,
} from './payer.repo.ts';

// Payer sign-in by a one-time code sent to the email registered on their consents and
// subscriptions (docs/payer.md). A code lasts 10 minutes from its last mail and allows 5 tries.
// An email has one live code at a time, and asking again while it is live mails that same code
// (once) rather than a new one, so nobody else asking can kill the code a payer is typing. Codes
// are limited per email and per client address, and wrong codes per email over a week, in the
// database so every process shares the count. The replies never say whether an email is known.
// Sessions are server-side, found by the SHA-256 of the cookie's value.

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
  /** Codes made for one email in an hour (an ask that finds a live code makes none). */
  codesByEmail: { scope: 'payer.code.email', max: 5, windowMs: 60 * 60_000 },
  /** Wrong codes from one client address in an hour (a right one is given back). */
  checksByClient: { scope: 'payer.check.client', max: 30, windowMs: 60 * 60_000 },
  /**
   * Wrong codes for one email in a week, from anywhere and over all its codes (a right one is
   * given back): what bounds guessing over months, as the hourly limits still let 25 guesses an
   * hour at one email through. 20 a week is a chance under 0.11% a year of finding a 6-digit code
   * (docs/security.md); once spent, the email's codes are neither sent nor checked.
   */
  wrongCodesByEmail: { scope: 'payer.wrong.email', max: 20, windowMs: 7 * 24 * 60 * 60_000 },
  /** Emails of one live code after its first: one, keyed by the code (its window ends when the code does). */
  resendsByCode: { scope: 'payer.code.resend', max: 1, windowMs: CODE_TTL_MS },
} as const satisfies Record<string, AttemptLimit>;

export function normaliseEmail(raw: unknown): string | null {
  if (typeof raw !== 'string') return null;
  const email = raw.trim().toLowerCase();
  return email.length <= 254 && /^[^\s@]+@[^\s@]+\.[^\s@]+$/.test(email) ? email : null;
}

/** Refused for a while: `limited` by the hourly limits, `paused` by the email's wrong codes of the week. */
type Refused = { kind: 'limited' | 'paused'; retryAfterMs: number };

export type SendOutcome = { kind: 'sent' } | Refused;

const payerHasEmail = async (deps: Deps, email: string) =>
  (await payerHasSubscriptions(deps, email)) || (await payerHasConsents(deps, email));

/**
 * Sends a code when the email has anything to manage. Whether it did is never told: the page says
 * the same either way, and the work done is the same up to the mail queue.
 */
export async function sendCode(deps: Deps, email: string, clientAddress: string): Promise<SendOutcome> {
  const now = deps.clock.now();
  const byAddress = await takeAttempt(deps.db, PAYER_LIMITS.sendsByClient, clientAddress, now);
  if (!byAddress.ok) return { kind: 'limited', retryAfterMs: byAddress.retryAfterMs };
  // A paused email's codes could not be checked: none is sent (nor sent again).
  const pausedForMs = await refusedForMs(deps.db, PAYER_LIMITS.wrongCodesByEmail, email, now);
  if (pausedForMs > 0) return { kind: 'paused', retryAfterMs: pausedForMs };
  const known = await payerHasEmail(deps, email);
  return deps.store.transaction(async (trx) => {
    // Taken in the transaction that makes the code: the email's count row stays locked until it
    // commits, so concurrent asks for one email run one after another and the second finds the
    // first one's code live.
    const byEmail = await takeAttempt(trx, PAYER_LIMITS.codesByEmail, email, now);
    const live = await liveCodeOf(trx, email, now);
    if (live) {
      // Nothing new to guess, so the hour's codes are not spent: a stranger asking can neither
      // kill the payer's code nor use up the asks they need.
      if (byEmail.ok) await giveBackAttempt(trx, PAYER_LIMITS.codesByEmail, email, byEmail.windowStart);
      await sendAgainOnce(trx, deps, live, known, now);
      return { kind: 'sent' } as const;
    }
    if (!byEmail.ok) return { kind: 'limited', retryAfterMs: byEmail.retryAfterMs } as const;
    // An unknown email gets a live code too, never sent, so limits, wrong tries and expiry all
    // answer the same whether it is known or not (guessing it would only open an empty page).
    const code = String(randomInt(0, 1_000_000)).padStart(6, '0');
    await insertCode(trx, {
      id: newId('payerCode'),
      email,
      code_sealed: deps.secrets.seal(code),
      tries_left: CODE_TRIES,
      expires_at: now + CODE_TTL_MS,
      used_at: null,
      used_with: null,
      dead_at: null,
      created_at: now,
    });
    if (known) await mailCode(trx, deps, email, code, now);
    return { kind: 'sent' } as const;
  });
}

/**
 * Mails the live code again the first time it is asked for again (a mail late or lost), its 10
 * minutes counted from this mail; later asks send nothing, as the code is in that inbox twice. Its
 * tries are never renewed, and it lives 20 minutes at most.
 */
async function sendAgainOnce(trx: Db, deps: Deps, live: PayerCodeRow, known: boolean, now: number) {
  const again = await takeAttempt(trx, PAYER_LIMITS.resendsByCode, live.id, now);
  if (!again.ok) return;
  await extendCode(trx, live.id, now + CODE_TTL_MS);
  if (known) await mailCode(trx, deps, live.email, deps.secrets.open(live.code_sealed), now);
}

async function mailCode(trx: Db, deps: Deps, email: string, code: string, now: number) {
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

export type VerifyOutcome =
  | { kind: 'signed_in'; sessionId: string }
  | { kind: 'wrong'; triesLeft: number }
  | { kind: 'dead' }
  /** Not 6 digits: a slip, never a guess, so no try and no limit is spent on it. */
  | { kind: 'malformed' }
  | Refused;

/** A code as typed: its 6 digits, spaces anywhere dropped (a pasted "123 456"); null when it is not 6 digits. */
export function normaliseCode(raw: unknown): string | null {
  if (typeof raw !== 'string') return null;
  const code = raw.slice(0, 100).replace(/\s+/g, '');
  return /^\d{6}$/.test(code) ? code : null;
}

/** What checking the live code found: `wrong` with no try left is the wrong code that killed it. */
type CodeCheck = { kind: 'signed_in'; sessionId: string } | { kind: 'wrong'; triesLeft: number } | { kind: 'dead' };

/**
 * Checks a code: 5 tries, 10 minutes, once, and 20 wrong codes for the email in a week. On
 * success, a new server-side session. A code that is not 6 digits is refused before anything is
 * counted: it could never be right, so it spends no try of the code and no limit.
 */
export async function verifyCode(
  deps: Deps,
  email: string,
  code: string,
  clientAddress: string,
  /** The browser's pre-session token (its sign-in form's CSRF cookie). */
  browserToken: string,
): Promise<VerifyOutcome> {
  const typed = normaliseCode(code);
  if (typed === null) return { kind: 'malformed' };
  const now = deps.clock.now();
  const byAddress = await takeAttempt(deps.db, PAYER_LIMITS.checksByClient, clientAddress, now);
  if (!byAddress.ok) return { kind: 'limited', retryAfterMs: byAddress.retryAfterMs };
  const outcome = await deps.store.transaction(async (trx) => {
    // Taken before the check, so concurrent guesses cannot pass a count made before any of them,
    // and given back unless a wrong code was checked: only guesses count.
    const byEmail = await takeAttempt(trx, PAYER_LIMITS.wrongCodesByEmail, email, now);
    if (!byEmail.ok) return { kind: 'paused', retryAfterMs: byEmail.retryAfterMs, startsNow: false } as const;
    const checked = await checkLiveCode(trx, deps, email, typed, now, sha256Hex(browserToken));
    if (checked.kind !== 'wrong') {
      await giveBackAttempt(trx, PAYER_LIMITS.wrongCodesByEmail, email, byEmail.windowStart);
      return checked;
    }
    if (byEmail.attempts < PAYER_LIMITS.wrongCodesByEmail.max) return checked;
    // This wrong code spent the week's last: the pause starts now, and is told now.
    const retryAfterMs = byEmail.windowStart + PAYER_LIMITS.wrongCodesByEmail.windowMs - now;
    return { kind: 'paused', retryAfterMs, startsNow: true, windowStart: byEmail.windowStart } as const;
  });
  if (outcome.kind === 'signed_in')
    await giveBackAttempt(deps.db, PAYER_LIMITS.checksByClient, clientAddress, byAddress.windowStart);
  if (outcome.kind === 'paused') {
    if (outcome.startsNow) await tellPause(deps, email, outcome.windowStart, now + outcome.retryAfterMs);
    return { kind: 'paused', retryAfterMs: outcome.retryAfterMs };
  }
  return outcome.kind === 'wrong' && outcome.triesLeft === 0 ? { kind: 'dead' } : outcome;
}

/**
 * A browser's second post of the sign-in form it just sent (a double click, a resubmitted page)
 * finds its code used by the first, whose answer it may never have seen: for this long the same
 * code from the same browser signs it in again. No other browser can use a used code.
 */
export const REPEAT_SIGN_IN_MS = 60_000;

const isRight = (deps: Deps, sealed: string, code: string) =>
  /^\d{6}$/.test(code) && constantTimeEqual(deps.secrets.open(sealed), code);

/** Spends a try of the email's live code on `code`; right, a new session. */
async function checkLiveCode(
  trx: Db,
  deps: Deps,
  email: string,
  code: string,
  now: number,
  usedWith: string,
): Promise<CodeCheck> {
  const live = await liveCodeOf(trx, email, now);
  if (!live) {
    const repeated = await codeUsedBy(trx, email, usedWith, now - REPEAT_SIGN_IN_MS);
    if (repeated && isRight(deps, repeated.code_sealed, code)) return newSession(trx, email, now);
    return { kind: 'dead' };
  }
  // Spend a try first, atomically: concurrent guesses cannot share one.
  if (!(await spendTry(trx, live.id))) return { kind: 'dead' };
  const left = live.tries_left - 1;
  if (!isRight(deps, live.code_sealed, code)) {
    if (left === 0) await markCode(trx, live.id, { dead_at: now });
    return { kind: 'wrong', triesLeft: left };
  }
  await markCode(trx, live.id, { used_at: now, used_with: usedWith });
  return newSession(trx, email, now);
}

async function newSession(trx: Db, email: string, now: number): Promise<CodeCheck> {
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
  return { kind: 'signed_in', sessionId };
}

/**
 * Tells that a pause starts, from the wrong code that started it: the log, for any email (guessing
 * at one no payer has is worth seeing too), with whether a payer has it; and the payer, by email,
 * once a window (the dedupe key names it, should two wrong codes both see the last attempt). Never a code.
 */
async function tellPause(deps: Deps, email: string, windowStart: number, resumesAt: number): Promise<void> {
  const known = await payerHasEmail(deps, email);
  deps.log.warn(
    { email_sha256: sha256Hex(email), payer: known, resumes_at: new Date(resumesAt).toISOString() },
    'payer sign-in paused: too many wrong codes for this email in a week',
  );
  if (!known) return;
  await deps.store.transaction((trx) =>
    queueMail(
      trx,
      {
        to: email,
        template: 'payer_signin_paused',
        data: { until: describeMoment(resumesAt, DEFAULT_ZONE) },
        related: { type: 'payer', id: email },
        dedupeKey: `payer_signin_paused:${sha256Hex(email)}:${windowStart}`,
      },
      deps.clock.now(),
    ),
  );
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
