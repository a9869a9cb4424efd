import { randomSecret } from '../../shared/crypto.ts';
import { recordAuditFor } from '../audit/audit.service.ts';
import { AppError, invalidParam, notFound } from '../../shared/errors.ts';
import { newId } from '../../shared/ids.ts';
import { iso, isoOrNull, type Clock } from '../../shared/time.ts';
import { formatAmount } from '../../shared/money.ts';
import { emitEvent } from '../events/events.service.ts';
import type { Mode } from '../../shared/mode.ts';
import { openStored } from '../../shared/secret-box.ts';
import type { Db } from '../../store/db.ts';
import { periodWindow } from '../consents/limits.ts';
import { enduringPeriodOf } from '../consents/consents.rules.ts';
import type { Ctx, Deps } from '../context.ts';
import type { EnduringConsentInput } from '../banks/bank-connector.ts';
import {
  sealConsentTokens,
  type ConsentTokenHolder,
  type SealedConsentToken,
  rowTokenHolder,
} from '../banks/consent-tokens.ts';
import { clockOf } from '../merchants/merchants.clock.ts';
import { bankAccountOf } from '../merchants/merchants.service.ts';
import { bankReturnUrl, connectorFor } from '../payments/payments.banks.ts';
import * as repo from './refunds.repo.ts';
import { REFUND_PARTICULARS, TEST_AUTHORITY_LIMITS, type AuthorityLimits, type RefundPeriod } from './refunds.rules.ts';
import type { RefundAuthorityRow } from './refunds.tables.ts';

// The merchant's refund authority (docs/refunds.md): an enduring consent at the merchant's bank
// over the account its payments go into, under which Tono pays refunds to payers. The merchant
// approves it once at its bank, with limits it sets; Tono keeps its token sealed.
//
// The standard's enduring consent names at least one creditor account. A refund authority names
// the merchant's own account there, and the bank lets payments under it go to the accounts payments
// came from: that is the bank's side of the arrangement (the sandbox bank offers it to account
// holders that have it), which the standard leaves to the bank and its customer.
//
// In test mode every merchant has one at the sandbox bank from the start: the row exists before
// the first refund, and the sandbox consent behind it is made and approved the first time a refund
// needs it (readyAuthority), from an account the sandbox bank keeps for the merchant.

type Owner = { userId: string; mode: Mode };

/** The test-mode merchant's sandbox account holder (its username at the sandbox bank). */
export function sandboxHolderOf(userId: string): string {
  return `tono-${userId}`.slice(0, 64);
}
/** What the merchant's sandbox account holds from the start: 1,000,000.00 NZD. */
const SANDBOX_MERCHANT_BALANCE = '1000000.00';

function authorityRow(
  owner: Owner,
  input: { bankId: string; bankAccountId: string | null; accountNumber: string; accountName: string },
  limits: AuthorityLimits,
  status: 'active' | 'awaiting_approval',
  now: number,
): RefundAuthorityRow {
  return {
    id: newId('refundAuthority'),
    user_id: owner.userId,
    mode: owner.mode,
    status,
    bank_id: input.bankId,
    bank_account_id: input.bankAccountId,
    account_number: input.accountNumber,
    account_name: input.accountName,
    period: limits.period,
    max_per_refund_cents: limits.max_per_refund_cents,
    max_per_period_cents: limits.max_per_period_cents,
    period_start: null,
    period_end: null,
    period_used_cents: 0,
    bank_consent_id: null,
    bank_access_token: null,
    bank_refresh_token: null,
    bank_token_expires_at: null,
    auth_state: randomSecret(24),
    revoked_by: null,
    created_at: now,
    updated_at: now,
    approved_at: status === 'active' ? now : null,
    ended_at: null,
  };
}

/**
 * A test-mode merchant that never had a refund authority gets its sandbox one (the row; the bank
 * side follows when first needed), made and approved at the time of the merchant's test clock. One
 * the merchant revoked stays revoked.
 */
export async function ensureTestAuthority(
  deps: Deps,
  owner: Owner,
  merchantName: string,
  db: Db = deps.db,
): Promise<void> {
  if (owner.mode !== 'test') return;
  if ((await repo.listAuthorities(db, owner, 1)).length > 0) return;
  const row = authorityRow(
    owner,
    { bankId: 'sandbox', bankAccountId: null, accountNumber: '', accountName: merchantName.slice(0, 70) || 'Merchant' },
    TEST_AUTHORITY_LIMITS,
    'active',
    (await clockOf(deps, { user_id: owner.userId, mode: owner.mode }, db)).now(),
  );
  await repo.insertAuthority(db, row);
}

/**
 * The merchant's account holder at the sandbox bank, opened if it is not there yet, with the
 * refund arrangement; answers its account number.
 */
async function openSandboxAccount(deps: Deps, username: string, name: string): Promise<string> {
  const holder = (await deps.banks.sandboxTestHook('/payers', {
    username,
    balance: SANDBOX_MERCHANT_BALANCE,
    name,
    if_absent: true,
    refund_arrangement: true,
  })) as { Data: { AccountNumber: string } };
  return holder.Data.AccountNumber;
}

/** The enduring consent an authority asks its bank for: its limits, over the merchant's own account. */
function consentRequestOf(authority: RefundAuthorityRow, accountNumber: string, now: number): EnduringConsentInput {
  return {
    trace: { refund_authority_id: authority.id },
    fromAt: now,
    toAt: null,
    maxPerPaymentCents: authority.max_per_refund_cents,
    period: enduringPeriodOf(authority.period as RefundPeriod),
    maxPerPeriodCents: authority.max_per_period_cents,
    maxCountPerPeriod: null,
    totalCount: null,
    totalAmountCents: null,
    creditor: { name: authority.account_name, accountNumber },
    remittance: { particulars: REFUND_PARTICULARS, code: '', reference: '' },
    idempotencyKey: authority.id,
    at: now,
  };
}

export type ReadyAuthority = { authority: RefundAuthorityRow; accessToken: string; token: ConsentTokenHolder };

/**
 * The authority with its consent at the bank, ready to pay under; for a test-mode one never used,
 * the sandbox consent is made and approved first, at the time of `clock` (the refund's; by default
 * the authority's own). Throws an error the refund job retries on.
 */
export async function readyAuthority(
  deps: Deps,
  authority: RefundAuthorityRow,
  clock?: Clock,
): Promise<ReadyAuthority> {
  if (authority.bank_consent_id && authority.bank_access_token)
    return {
      authority,
      accessToken: openStored(deps.secrets, authority.bank_access_token),
      token: tokenHolderOf(deps, authority.id, {
        access: authority.bank_access_token,
        refresh: authority.bank_refresh_token,
        expiresAt: authority.bank_token_expires_at === null ? null : Number(authority.bank_token_expires_at),
      }),
    };
  if (authority.mode !== 'test') throw new Error('the refund authority was never approved at the bank');
  return provisionAtSandbox(deps, authority, clock ?? (await clockOf(deps, authority)));
}

/** Where the authority keeps its consent token, for payments under it (submitUnderConsent). */
function tokenHolderOf(deps: Deps, authorityId: string, token: SealedConsentToken): ConsentTokenHolder {
  return rowTokenHolder(deps, 'refund_authorities', authorityId, token);
}

async function provisionAtSandbox(deps: Deps, authority: RefundAuthorityRow, clock: Clock): Promise<ReadyAuthority> {
  const username = sandboxHolderOf(authority.user_id);
  const accountNumber = await openSandboxAccount(deps, username, authority.account_name);
  const connector = connectorFor(deps, authority.bank_id, 'test');
  if (!connector) throw new Error('the sandbox bank is not connected');
  // The merchant's authority outlasts any one refund, and a test clock can be reset to real time:
  // its consent at the bank starts now in real time, which every clock has passed, never at the
  // clock's time, which a reset would leave in the future.
  const consent = await connector.createEnduringConsent(consentRequestOf(authority, accountNumber, deps.clock.now()));
  if (!consent.ok) throw new Error(`the sandbox bank refused the refund authority: ${consent.message}`);
  const approved = (await deps.banks.sandboxTestHook('/authorise', {
    consent_id: consent.consentId,
    redirect_uri: bankReturnUrl(deps),
    state: authority.auth_state ?? randomSecret(24),
    username,
  })) as { Data: { RedirectUri: string } };
  const code = new URL(approved.Data.RedirectUri).searchParams.get('code');
  if (!code) throw new Error('the sandbox bank did not approve the refund authority');
  const token = await connector.exchangeCode({ code, redirectUri: bankReturnUrl(deps) });
  if (!token.ok) throw new Error(`the sandbox bank did not give a token: ${token.message}`);
  const sealed = sealConsentTokens(deps.secrets, token);
  await repo.updateAuthority(deps.db, authority.id, {
    bank_consent_id: consent.consentId,
    ...repo.authorityTokenColumns(sealed),
    account_number: accountNumber,
    updated_at: clock.now(),
  });
  return {
    authority: {
      ...authority,
      bank_consent_id: consent.consentId,
      ...repo.authorityTokenColumns(sealed),
      account_number: accountNumber,
    },
    accessToken: token.accessToken,
    token: tokenHolderOf(deps, authority.id, sealed),
  };
}

export function findAuthorityById(db: Db, id: string) {
  return repo.findAuthorityById(db, id);
}

/** The bank revoked the authority (a refund under it was refused for that): it is over. */
export async function endAuthorityAtBank(trx: Db, authorityId: string, now: number): Promise<void> {
  const authority = await repo.lockAuthority(trx, authorityId);
  if (authority?.status !== 'active') return;
  await repo.updateAuthority(trx, authorityId, {
    status: 'revoked',
    revoked_by: 'bank',
    ended_at: now,
    updated_at: now,
  });
  await authorityStatusEvent(trx, authority, 'revoked', 'bank', now);
}

/** refund_authority.status_updated, in the transaction of the change. */
async function authorityStatusEvent(
  trx: Db,
  authority: RefundAuthorityRow,
  status: 'active' | 'declined' | 'revoked',
  revokedBy: string | null,
  now: number,
): Promise<void> {
  await emitEvent(
    trx,
    { userId: authority.user_id, mode: authority.mode },
    'refund_authority.status_updated',
    authority.id,
    { id: authority.id, user_id: authority.user_id, status, revoked_by: revokedBy, updated_at: iso(now) },
    now,
  );
}

// The dashboard's refund authority page.

export type AuthorityView = {
  active: (RefundAuthorityRow & { usedCents: number; periodEnd: number }) | null;
  past: RefundAuthorityRow[];
};

export async function authorityViewFor(ctx: Ctx): Promise<AuthorityView> {
  const owner = { userId: ctx.merchant.id, mode: ctx.mode };
  await ensureTestAuthority(ctx.deps, owner, ctx.merchant.name);
  const all = await repo.listAuthorities(ctx.db, owner);
  const current = all.find((row) => row.status === 'active');
  let active: AuthorityView['active'] = null;
  if (current) {
    const window = periodWindow(current.period as RefundPeriod, ctx.clock.now(), ctx.deps.config.serviceTimeZone);
    active = { ...current, usedCents: repo.authorityUsage(current, window), periodEnd: window.end };
  }
  return { active, past: all.filter((row) => row !== current) };
}

/**
 * "Turn on refunds": a consent at the merchant's bank over one of its accounts, with its limits;
 * answers where to send the merchant to approve it. Approval replaces the active authority.
 */
export async function startAuthority(
  ctx: Ctx,
  input: { bankId: string; bankAccountId: string; limits: AuthorityLimits },
): Promise<{ authoriseUrl: string; username: string | null }> {
  const owner = { userId: ctx.merchant.id, mode: ctx.mode };
  const { limits } = input;
  if (limits.max_per_refund_cents <= 0)
    throw invalidParam('max_per_refund', 'The most for one refund must be more than 0.00');
  if (limits.max_per_period_cents < limits.max_per_refund_cents)
    throw invalidParam('max_per_period', 'The most each period must be at least the most for one refund');
  const connector = connectorFor(ctx.deps, input.bankId, ctx.mode);
  if (!connector) throw invalidParam('bank_id', 'Choose one of the banks listed');
  const account = await bankAccountOf(ctx.db, ctx.merchant.id, input.bankAccountId);
  if (!account) throw notFound('bank_account', input.bankAccountId);
  const now = ctx.clock.now();
  const row = authorityRow(
    owner,
    {
      bankId: input.bankId,
      bankAccountId: account.id,
      accountNumber: account.account_number,
      accountName: (account.name ?? ctx.merchant.name).slice(0, 70),
    },
    limits,
    'awaiting_approval',
    now,
  );
  let username: string | null = null;
  let creditorAccount = account.account_number;
  if (ctx.mode === 'test') {
    // At the sandbox bank the merchant approves as its own account holder, which has the refund arrangement.
    username = sandboxHolderOf(ctx.merchant.id);
    creditorAccount = await openSandboxAccount(ctx.deps, username, row.account_name);
    row.account_number = creditorAccount;
  }
  const consent = await connector.createEnduringConsent(consentRequestOf(row, creditorAccount, now));
  if (!consent.ok)
    throw new AppError('service_unavailable', `The bank did not take the refund authority: ${consent.message}`, {});
  row.bank_consent_id = consent.consentId;
  await ctx.deps.store.transaction(async (trx) => {
    await repo.insertAuthority(trx, row);
    await recordAuditFor(trx, ctx, 'refund_authority.create', row.id, {
      bank: row.bank_id,
      period: row.period,
      max_per_refund_cents: row.max_per_refund_cents,
      max_per_period_cents: row.max_per_period_cents,
    });
  });
  return {
    authoriseUrl: connector.authoriseUrl({
      consentId: consent.consentId,
      redirectUri: bankReturnUrl(ctx.deps),
      state: row.auth_state!,
    }),
    username,
  };
}

/**
 * The merchant's browser back from its bank with an authority's state: approved, it becomes the
 * active authority (the one before it is revoked); declined, it is kept as declined. Answers where
 * to send the browser, or null when the state is not an authority's.
 */
export async function completeAuthorityReturn(
  deps: Deps,
  input: { state: string; code?: string | null; error?: string | null },
): Promise<string | null> {
  if (!input.state) return null;
  const authority = await repo.findAuthorityByState(deps.db, input.state);
  if (!authority) return null;
  const page = `/dashboard/${authority.mode}/refunds/authority`;
  if (authority.status !== 'awaiting_approval') return page;
  // Approved or declined at the time of the authority's clock, as it was made (the test clock in test mode).
  const now = (await clockOf(deps, authority)).now();
  const connector = connectorFor(deps, authority.bank_id, authority.mode);
  const token =
    input.code && !input.error && connector
      ? await connector.exchangeCode({ code: input.code, redirectUri: bankReturnUrl(deps) })
      : null;
  // A code the bank gave for another consent (mixed up, or replayed from elsewhere) approves nothing
  // here. That consent is not this authority's to revoke: it may be another flow's.
  if (!token?.ok || token.consentId !== authority.bank_consent_id) {
    await deps.store.transaction(async (trx) => {
      const declined = { status: 'declined', ended_at: now, updated_at: now, auth_state: null };
      if (await repo.updateAuthorityIfStatus(trx, authority.id, 'awaiting_approval', declined))
        await authorityStatusEvent(trx, authority, 'declined', null, now);
    });
    return `${page}?outcome=declined`;
  }
  const approved = await deps.store
    .transaction(async (trx) => {
      const before = await repo.lockActiveAuthority(trx, { userId: authority.user_id, mode: authority.mode });
      // The one before is revoked first, as only one may be active at a time.
      if (before) {
        await repo.updateAuthority(trx, before.id, {
          status: 'revoked',
          revoked_by: 'replaced',
          ended_at: now,
          updated_at: now,
        });
        await authorityStatusEvent(trx, before, 'revoked', 'replaced', now);
      }
      const activated = await repo.updateAuthorityIfStatus(trx, authority.id, 'awaiting_approval', {
        status: 'active',
        ...repo.authorityTokenColumns(sealConsentTokens(deps.secrets, token)),
        approved_at: now,
        updated_at: now,
        auth_state: null,
      });
      // A second return from the bank (a refresh) settled it first: the one before stays active.
      if (!activated) throw new ApprovalOvertaken();
      await authorityStatusEvent(trx, authority, 'active', null, now);
      return { before };
    })
    .catch((error: unknown) => {
      if (error instanceof ApprovalOvertaken) return null;
      throw error;
    });
  if (!approved) {
    const settled = await repo.findAuthorityById(deps.db, authority.id);
    // The bank approved the consent this return holds a token for, and the other return recorded it
    // declined: it is handed back, so the bank keeps no authority to pay that the dashboard does not show.
    if (settled?.status !== 'active') await revokeAtBank(deps, authority);
    return outcomePage(page, settled);
  }
  if (approved.before) await revokeAtBank(deps, approved.before);
  return `${page}?outcome=approved`;
}

/** Thrown inside the approval's transaction to roll it back when the authority no longer awaits approval. */
class ApprovalOvertaken extends Error {}

/** Where a return the other return settled sends the browser: that return's outcome, as the authority has it now. */
function outcomePage(page: string, authority: RefundAuthorityRow | undefined): string {
  if (authority?.status === 'active') return `${page}?outcome=approved`;
  if (authority?.status === 'declined') return `${page}?outcome=declined`;
  return page;
}

/** The merchant turns refunds off: the authority is revoked here at once, then at the bank. */
export async function revokeAuthority(ctx: Ctx, id: string): Promise<void> {
  const now = ctx.clock.now();
  const revoked = await ctx.deps.store.transaction(async (trx) => {
    const authority = await repo.lockAuthority(trx, id);
    if (!authority || authority.user_id !== ctx.merchant.id || authority.mode !== ctx.mode)
      throw notFound('refund_authority', id);
    if (authority.status !== 'active') return null;
    await repo.updateAuthority(trx, id, { status: 'revoked', revoked_by: 'merchant', ended_at: now, updated_at: now });
    await authorityStatusEvent(trx, authority, 'revoked', 'merchant', now);
    await recordAuditFor(trx, ctx, 'refund_authority.revoke', id, { status: { from: 'active', to: 'revoked' } });
    return authority;
  });
  if (revoked) await revokeAtBank(ctx.deps, revoked);
}

async function revokeAtBank(deps: Deps, authority: RefundAuthorityRow): Promise<void> {
  const connector = connectorFor(deps, authority.bank_id, authority.mode);
  if (!connector || !authority.bank_consent_id) return;
  const result = await connector.revokeConsent({
    consentId: authority.bank_consent_id,
    trace: { refund_authority_id: authority.id },
  });
  if (!result.ok)
    deps.log.warn(
      { refund_authority_id: authority.id, reason: result.reason },
      'the bank did not revoke the refund authority',
    );
}

/** The authority as the API shows it. */
export function presentAuthority(authority: NonNullable<AuthorityView['active']>) {
  return {
    id: authority.id,
    status: 'active' as const,
    bank: authority.bank_id,
    // A test-mode authority's sandbox account is opened by the first refund that needs it.
    account_number: authority.account_number || null,
    period: authority.period as RefundPeriod,
    max_per_refund: formatAmount(authority.max_per_refund_cents),
    max_per_period: formatAmount(authority.max_per_period_cents),
    used_this_period: formatAmount(authority.usedCents),
    period_ends_at: iso(authority.periodEnd),
    approved_at: isoOrNull(authority.approved_at),
    is_test_mode: authority.mode === 'test',
  };
}
