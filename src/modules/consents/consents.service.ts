import type { Kysely } from 'kysely';
import { invalidState } from '../../shared/errors.ts';
import { pageOf } from '../../shared/pagination.ts';
import type { Clock } from '../../shared/time.ts';
import { enqueue, realTimeOf } from '../../jobs/queue.ts';
import type { JobHandler } from '../../jobs/worker.ts';
import { testClockOffsetOf as clockOffset } from '../merchants/merchants.service.ts';
import type { Database } from '../../store/tables.ts';
import { emitEvent } from '../events/events.service.ts';
import { recordAudit } from '../audit/audit.service.ts';
import { connectorFor } from '../payments/payments.banks.ts';
import { clockIdOf, clockOf } from '../merchants/merchants.clock.ts';
import {
  countConsentsByStatus,
  findConsentById,
  getConsent,
  listConsents,
  lockConsent,
  updateConsent,
  type ConsentRow,
  type Owner,
} from './consents.repo.ts';
import { presentConsent, type ConsentObject } from './consents.present.ts';
import { effectiveConsentStatus, limitsOf } from './consents.rules.ts';
import { noticeConsentRevoked } from './consents.notices.ts';
import type { ListConsentsQuery } from './consents.schemas.ts';
import { limitWindow } from './limits.ts';
import { usageOf } from './usage.service.ts';
import type { Actor, Ctx, Deps, Origin } from '../context.ts';

// Reading, revoking and expiring recurring consents. Executions are in execute.service.ts and
// authorisation at checkout in authorise.service.ts.

export const EXPIRE_CONSENT_JOB = 'recurring_consent.expire';
export const REVOKE_AT_BANK_JOB = 'recurring_consent.revoke_at_bank';

declare module '../../jobs/queue.ts' {
  interface JobPayloads {
    'recurring_consent.expire': { consent_id: string };
    'recurring_consent.revoke_at_bank': { consent_id: string };
  }
}

const ownerOf = (ctx: Ctx): Owner => ({ userId: ctx.merchant.id, mode: ctx.mode });

/**
 * The consent as the API shows it, with its usage as of the consent's clock. A read stores
 * nothing: a window the counters do not hold yet is summed here and stored by the next execution.
 */
export async function consentObject(
  db: Kysely<Database>,
  row: ConsentRow,
  now: number,
  zone: string,
): Promise<ConsentObject> {
  const usage = await usageOf(db, row, limitWindow(limitsOf(row), now, zone));
  return presentConsent(row, usage, now, zone);
}

export async function retrieveConsent(ctx: Ctx, id: string) {
  const row = await getConsent(ctx.db, ownerOf(ctx), id);
  return { recurring_consent: await consentObject(ctx.db, row, ctx.clock.now(), ctx.deps.config.serviceTimeZone) };
}

/** The sandbox bank's consent behind one of the caller's recurring consents (the test helpers' bank hooks). */
export async function bankConsentOfConsent(ctx: Ctx, id: string): Promise<string> {
  return (await getConsent(ctx.db, ownerOf(ctx), id)).bank_consent_id;
}

export async function listConsentsFor(ctx: Ctx, query: ListConsentsQuery) {
  const limit = query.limit ?? 100;
  const filters = { ...query, email: query.email?.trim().toLowerCase(), limit };
  const { items, hasMore } = pageOf(await listConsents(ctx.db, ownerOf(ctx), filters), limit);
  const now = ctx.clock.now();
  const zone = ctx.deps.config.serviceTimeZone;
  const objects = [];
  for (const row of items) objects.push(await consentObject(ctx.db, row, now, zone));
  return { recurring_consents: objects, has_more: hasMore };
}

type RevokedBy = 'merchant' | 'payer';

/**
 * Revokes a consent here (no executions from this commit on) and asks the bank to revoke it too.
 * The bank call happens after the commit; a job in the same transaction retries it if it fails.
 * Revoking a revoked consent changes nothing; an expired one cannot be revoked.
 */
async function revoke(
  deps: Deps,
  consentId: string,
  by: RevokedBy,
  clock: Clock,
  who: { actor: Actor; origin?: Origin },
): Promise<ConsentRow> {
  const { row, changed } = await deps.store.transaction(async (trx) => {
    const consent = (await lockConsent(trx, consentId))!;
    const now = clock.now();
    const status = effectiveConsentStatus(consent, now);
    if (status === 'revoked') return { row: consent, changed: false };
    if (status !== 'active') throw invalidState('recurring_consent', status, 'revoke');
    const revoked: ConsentRow = { ...consent, status: 'revoked', revoked_by: by, revoked_at: now, updated_at: now };
    await updateConsent(trx, consent.id, { status: 'revoked', revoked_by: by, revoked_at: now, updated_at: now });
    if (by === 'payer') {
      await emitEvent(
        trx,
        { userId: consent.user_id, mode: consent.mode },
        'recurring_payment.revoked',
        consent.id,
        {
          id: consent.id,
          merchant_identifier: consent.merchant_identifier,
          status: 'revoked',
        },
        now,
      );
    }
    await noticeConsentRevoked(trx, revoked, by, now);
    await enqueue(
      trx,
      {
        kind: REVOKE_AT_BANK_JOB,
        runAt: deps.clock.now() + 60_000,
        payload: { consent_id: consent.id },
        dedupeKey: `${REVOKE_AT_BANK_JOB}:${consent.id}`,
      },
      deps.clock.now(),
    );
    await recordAudit(trx, {
      userId: consent.user_id,
      mode: consent.mode,
      ...who,
      action: 'consent.revoke',
      objectId: consent.id,
      summary: { status: { from: status, to: 'revoked' }, revoked_by: by },
      at: now,
    });
    return { row: revoked, changed: true };
  });
  if (changed)
    await revokeAtBank(deps, row).catch((error) =>
      deps.log.warn({ err: error, consent_id: row.id }, 'revoking at the bank failed; the job retries'),
    );
  return row;
}

/** Asks the bank to revoke; true once the bank no longer holds an authorised consent. */
async function revokeAtBank(deps: Deps, consent: ConsentRow): Promise<boolean> {
  const connector = connectorFor(deps, consent.bank_id, consent.mode);
  if (!connector) return false;
  const state = await connector.getConsent({ consentId: consent.bank_consent_id, kind: 'enduring' });
  if (state.ok && state.status !== 'Authorised' && state.status !== 'AwaitingAuthorisation') return true;
  const result = await connector.revokeConsent({ consentId: consent.bank_consent_id });
  return result.ok;
}

/** PUT /v1/recurring-consents/{id}/revoke. */
export async function revokeConsentByMerchant(ctx: Ctx, id: string) {
  const found = await getConsent(ctx.db, ownerOf(ctx), id);
  const row = await revoke(ctx.deps, found.id, 'merchant', ctx.clock, ctx);
  return { recurring_consent: await consentObject(ctx.db, row, ctx.clock.now(), ctx.deps.config.serviceTimeZone) };
}

/** The payer revoked in the payer dashboard: revoked here and at the bank, recurring_payment.revoked to the merchant. */
export async function revokeConsentByPayer(
  deps: Deps,
  consentId: string,
  who: { actor: Actor; origin?: Origin },
): Promise<ConsentRow> {
  const found = await findConsentById(deps.db, consentId);
  if (!found) throw new Error(`no recurring consent ${consentId}`);
  return revoke(deps, consentId, 'payer', await clockOf(deps, found), who);
}

/** Job: retries revocation at the bank until the bank confirms it. */
export function revokeAtBankJob(deps: Deps): JobHandler {
  return async (payload: { consent_id: string }, { job }) => {
    const consent = await findConsentById(deps.db, payload.consent_id);
    if (consent?.status !== 'revoked' || consent.revoked_by === 'bank') return;
    if (!(await revokeAtBank(deps, consent)))
      return {
        retryAt: deps.clock.now() + Math.min(30_000 * 2 ** job.attempts, 3_600_000),
        error: 'bank did not revoke yet',
      };
    // The bank confirmed: the consent can take no payment there either.
    await deps.store.transaction((trx) =>
      recordAudit(trx, {
        userId: consent.user_id,
        mode: consent.mode,
        actor: { kind: 'service', job: REVOKE_AT_BANK_JOB },
        action: 'consent.revoke_at_bank',
        objectId: consent.id,
        summary: { revoked_by: consent.revoked_by },
        at: deps.clock.now(),
      }),
    );
  };
}

/**
 * Enqueued at authorisation when the consent has an end: due just after end_at on the consent's
 * clock. The real due time comes from the stored clock offset, not from two readings of "now", so
 * a test clock advanced exactly to the end runs it.
 */
export async function scheduleExpiry(
  trx: Kysely<Database>,
  deps: Deps,
  consent: Pick<ConsentRow, 'id' | 'end_at' | 'user_id' | 'mode'>,
): Promise<void> {
  if (consent.end_at === null) return;
  const offset = consent.mode === 'test' ? await clockOffset(trx, consent.user_id) : 0;
  await enqueue(
    trx,
    {
      kind: EXPIRE_CONSENT_JOB,
      runAt: realTimeOf(Number(consent.end_at) + 1, offset),
      clockId: clockIdOf(consent),
      payload: { consent_id: consent.id },
      dedupeKey: `${EXPIRE_CONSENT_JOB}:${consent.id}`,
    },
    deps.clock.now(),
  );
}

/** Job: an active consent past its end_at becomes expired. Safe to run twice. */
export function expireConsentJob(deps: Deps): JobHandler {
  return async (payload: { consent_id: string }, { clock, finishIn }) => {
    const now = clock.now();
    return deps.store.transaction(async (trx) => {
      const consent = await lockConsent(trx, payload.consent_id);
      if (consent && consent.status === 'active' && consent.end_at !== null) {
        if (Number(consent.end_at) >= now) return { retryAt: deps.clock.now() + (Number(consent.end_at) + 1 - now) };
        await updateConsent(trx, consent.id, { status: 'expired', expired_at: now, updated_at: now });
        await emitEvent(
          trx,
          { userId: consent.user_id, mode: consent.mode },
          'recurring_payment.expired',
          consent.id,
          { id: consent.id, merchant_identifier: consent.merchant_identifier, status: 'expired' },
          now,
        );
        await finishIn(trx);
        await recordAudit(trx, {
          userId: consent.user_id,
          mode: consent.mode,
          actor: { kind: 'service', job: EXPIRE_CONSENT_JOB },
          action: 'consent.expire',
          objectId: consent.id,
          summary: { status: { from: 'active', to: 'expired' } },
          at: now,
        });
        return;
      }
      await finishIn(trx);
    });
  };
}

/** How many of the caller's recurring consents have each status. */
export async function consentCountsFor(ctx: Ctx): Promise<Record<string, number>> {
  return countConsentsByStatus(ctx.db, { userId: ctx.merchant.id, mode: ctx.mode });
}

/** The payer's email and what the consent is for, for mail about a payment made under it (a refund). */
export async function payerOfConsent(
  db: Deps['db'],
  consentId: string,
): Promise<{ email: string; title: string } | null> {
  const consent = await findConsentById(db, consentId);
  return consent ? { email: consent.email, title: consent.description } : null;
}
