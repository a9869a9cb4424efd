import { apiKeyAuth, keyScope } from '../merchants/merchants.auth.ts';
import { errorResponses, IdParams } from '../../http/schemas.ts';
import { AppError } from '../../shared/errors.ts';
import { bankReturnUrl, banksFor } from '../payments/payments.banks.ts';
import { requireTestMode } from '../test-helpers/clock.service.ts';
import { authoriseAtBank } from '../test-helpers/pay.bank-driver.ts';
import { detailsFromBody } from '../test-helpers/pay.service.ts';
import type { PayBody } from '../test-helpers/pay.schemas.ts';
import { recurringCheckout } from './authorise.service.ts';
import { getConsent } from './consents.repo.ts';
import { ConsentEnvelope, DeclineNextBody } from './consents.schemas.ts';
import { consentObject, revokeConsentByPayer } from './consents.service.ts';
import { recordAuditAfter } from '../audit/audit.service.ts';
import type { Ctx, Deps } from '../context.ts';
import type { App } from '../../http/app-type.ts';
import type { RequestRow } from '../requests/requests.tables.ts';

// Test helpers for recurring consents (test keys only). They drive the same code and the same
// sandbox bank over HTTP that a payer at the hosted page, the payer dashboard and the bank drive.

/** POST /v1/test-helpers/requests/{id}/pay on a recurring request: the payer authorises at the sandbox bank. */
export async function payRecurring(ctx: Ctx, request: RequestRow, body: PayBody): Promise<Record<string, unknown>> {
  const deps = ctx.deps;
  const bank = banksFor(deps, 'test')[0];
  if (!bank) throw new AppError('service_unavailable', 'No bank is connected, so the sandbox bank cannot be used', {});
  const strategy = recurringCheckout(deps.config.serviceTimeZone);
  const started = await strategy.start(deps, request, {
    amountCents: null,
    bankId: bank.id,
    details: detailsFromBody(body),
    channel: 'api',
  });
  if (!started.ok) throw new AppError('service_unavailable', started.message, {});
  const back = await authoriseAtBank(started.redirectUrl, body.outcome ?? 'approve', bankReturnUrl(deps));
  await strategy.completeReturn(deps, {
    state: back.searchParams.get('state') ?? '',
    code: back.searchParams.get('code'),
    error: back.searchParams.get('error'),
  });
  const consent = await ctx.db
    .selectFrom('recurring_consents')
    .selectAll()
    .where('request_id', '=', request.id)
    .executeTakeFirst();
  return {
    recurring_consent: consent
      ? await consentObject(ctx.db, consent, ctx.clock.now(), deps.config.serviceTimeZone)
      : null,
  };
}

async function sandboxHook(deps: Deps, path: string, body: unknown): Promise<void> {
  await deps.banks.sandboxTestHook(path.replace(/^\/test/, ''), body);
}

async function testConsent(ctx: Ctx, id: string) {
  requireTestMode(ctx);
  return getConsent(ctx.db, { userId: ctx.merchant.id, mode: ctx.mode }, id);
}

const present = async (ctx: Ctx, id: string) => {
  const row = await getConsent(ctx.db, { userId: ctx.merchant.id, mode: ctx.mode }, id);
  return { recurring_consent: await consentObject(ctx.db, row, ctx.clock.now(), ctx.deps.config.serviceTimeZone) };
};

export async function registerConsentTestHelperRoutes(app: App, deps: Deps): Promise<void> {
  const auth = apiKeyAuth(deps);
  const tags = ['Test helpers'];
  const params = IdParams('Recurring consent id (recurring_…)');
  const response = { 200: ConsentEnvelope, ...errorResponses, 503: errorResponses[400] };

  app.post(
    '/v1/test-helpers/recurring-consents/:id/revoke-at-bank',
    {
      onRequest: auth,
      config: { keyScope: keyScope('consents') },
      schema: {
        tags,
        summary: 'The payer revokes the consent at their bank: no webhook; the next execution finds out',
        params,
        response,
      },
    },
    async (request) => {
      const consent = await testConsent(request.ctx, request.params.id);
      await sandboxHook(deps, `/test/consents/${encodeURIComponent(consent.bank_consent_id)}/revoke`, {});
      await recordAuditAfter(request.ctx, 'consent.test_revoke_at_bank', consent.id);
      return present(request.ctx, consent.id);
    },
  );

  app.post(
    '/v1/test-helpers/recurring-consents/:id/revoke-by-payer',
    {
      onRequest: auth,
      config: { keyScope: keyScope('consents') },
      schema: {
        tags,
        summary: 'The payer revokes the consent in the payer dashboard: recurring_payment.revoked',
        params,
        response,
      },
    },
    async (request) => {
      const consent = await testConsent(request.ctx, request.params.id);
      await revokeConsentByPayer(deps, consent.id, request.ctx);
      return present(request.ctx, consent.id);
    },
  );

  app.post(
    '/v1/test-helpers/recurring-consents/:id/decline-next',
    {
      onRequest: auth,
      config: { keyScope: keyScope('consents') },
      schema: {
        tags,
        summary: 'The bank refuses the next `count` executions under this consent',
        params,
        body: DeclineNextBody,
        response,
      },
    },
    async (request) => {
      const consent = await testConsent(request.ctx, request.params.id);
      const body = request.body ?? {};
      await sandboxHook(deps, `/test/consents/${encodeURIComponent(consent.bank_consent_id)}/decline-next`, {
        count: body.count ?? 1,
        ...(body.reason !== undefined && { reason: body.reason }),
      });
      await recordAuditAfter(request.ctx, 'consent.test_decline_next', consent.id, {
        count: body.count ?? 1,
        reason: body.reason ?? null,
      });
      return present(request.ctx, consent.id);
    },
  );
}
