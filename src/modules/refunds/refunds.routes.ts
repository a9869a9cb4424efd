import { Type } from 'typebox';
import { recordAuditAfter } from '../audit/audit.service.ts';
import { apiKeyAuth, keyScope } from '../merchants/merchants.auth.ts';
import { errorResponses, IdempotencyHeaders, IdParams } from '../../http/schemas.ts';
import { AppError } from '../../shared/errors.ts';
import { requireTestMode } from '../test-helpers/clock.service.ts';
import { authorityViewFor, ensureTestAuthority, presentAuthority, readyAuthority } from './refunds.authority.ts';
import * as repo from './refunds.repo.ts';
import {
  CreateRefundBody,
  ListRefundsQuery,
  RefundAuthorityEnvelope,
  RefundEnvelope,
  RefundList,
} from './refunds.schemas.ts';
import { createRefund, listRefundsFor, retrieveRefund } from './refunds.service.ts';
import type { Ctx, Deps } from '../context.ts';
import type { App } from '../../http/app-type.ts';

export async function registerRefundRoutes(app: App, deps: Deps): Promise<void> {
  const auth = apiKeyAuth(deps);
  const tags = ['Refunds'];

  app.post(
    '/v1/refunds',
    {
      onRequest: auth,
      config: { keyScope: keyScope('refunds') },
      schema: {
        tags,
        summary: 'Refund a successful payment, in full or in part',
        description:
          'Counted against the payment at once (amount_refunded); paid to the account the payment came from under your refund authority, or requires_action when it cannot be (docs/refunds.md).',
        headers: IdempotencyHeaders,
        body: CreateRefundBody,
        response: { 201: RefundEnvelope, 200: RefundEnvelope, ...errorResponses },
      },
    },
    async (request, reply) => {
      const result = await createRefund(request.ctx, request.body, request.headers['idempotency-key']);
      if (result.replayed) reply.header('idempotent-replayed', 'true');
      return reply.status(result.status).send(result.body);
    },
  );

  app.get(
    '/v1/refunds/:id',
    {
      onRequest: auth,
      config: { keyScope: keyScope('refunds') },
      schema: {
        tags,
        summary: 'Get a refund',
        description: 'Its status, what the payer’s statement shows, and why it failed or requires action.',
        params: IdParams('Refund id (refund_…)'),
        response: { 200: RefundEnvelope, ...errorResponses },
      },
    },
    async (request) => retrieveRefund(request.ctx, request.params.id),
  );

  app.get(
    '/v1/refunds',
    {
      onRequest: auth,
      config: { keyScope: keyScope('refunds') },
      schema: {
        tags,
        summary: 'List refunds, newest first',
        description: 'Filter by payment_id and status; paginate with limit and starting_after.',
        querystring: ListRefundsQuery,
        response: { 200: RefundList, ...errorResponses },
      },
    },
    async (request) => listRefundsFor(request.ctx, request.query),
  );

  app.get(
    '/v1/refund-authority',
    {
      onRequest: auth,
      config: { keyScope: keyScope('refunds') },
      schema: {
        tags,
        summary:
          'Your refund authority in this mode: its limits and what is used this period, or null when refunds are off',
        description:
          'Turned on and off in the dashboard, which takes you to your bank to approve it (docs/refunds.md).',
        response: { 200: RefundAuthorityEnvelope, ...errorResponses },
      },
    },
    async (request) => {
      const { active } = await authorityViewFor(request.ctx);
      return { refund_authority: active ? presentAuthority(active) : null };
    },
  );

  registerRefundTestHelpers(app, deps);
}

/** Test keys only: the sandbox bank refusing the merchant's next refunds. */
function registerRefundTestHelpers(app: App, deps: Deps): void {
  const auth = apiKeyAuth(deps);
  app.post(
    '/v1/test-helpers/refunds/decline-next',
    {
      onRequest: auth,
      config: { keyScope: keyScope('refunds') },
      schema: {
        tags: ['Test helpers'],
        summary: 'The sandbox bank refuses the next `count` refunds under your refund authority',
        description:
          'Test keys only. The refused refunds fail with the reason given, and their amounts are refundable again.',
        body: Type.Object(
          {
            count: Type.Optional(Type.Integer({ minimum: 1, maximum: 1000, default: 1 })),
            reason: Type.Optional(
              Type.String({
                pattern: '^[a-z][a-z_]{0,39}$',
                description: 'e.g. insufficient_funds',
                'x-expected': 'snake_case, e.g. insufficient_funds',
              }),
            ),
          },
          { additionalProperties: false },
        ),
        response: {
          200: Type.Object({ refund_authority_id: Type.String(), count: Type.Integer(), reason: Type.String() }),
          ...errorResponses,
          503: errorResponses[400],
        },
      },
    },
    async (request) => {
      const body = request.body as { count?: number; reason?: string };
      const authority = await testAuthorityAtBank(request.ctx);
      const count = body.count ?? 1;
      const reason = body.reason ?? 'insufficient_funds';
      await deps.banks.sandboxTestHook(`/consents/${encodeURIComponent(authority.bank_consent_id!)}/decline-next`, {
        count,
        reason,
      });
      await recordAuditAfter(request.ctx, 'refund_authority.test_decline_next', authority.id, { count, reason });
      return { refund_authority_id: authority.id, count, reason };
    },
  );
}

/** The caller's test-mode refund authority, with its consent made at the sandbox bank. */
async function testAuthorityAtBank(ctx: Ctx) {
  requireTestMode(ctx);
  const owner = { userId: ctx.merchant.id, mode: ctx.mode };
  await ensureTestAuthority(ctx.deps, owner, ctx.merchant.name);
  const authority = await repo.findActiveAuthority(ctx.db, owner);
  if (!authority)
    throw new AppError(
      'conflict.invalid_state',
      'Refunds are turned off in test mode: turn them on in the dashboard first',
      {},
    );
  try {
    return (await readyAuthority(ctx.deps, authority, ctx.clock)).authority;
  } catch (error) {
    if (error instanceof AppError) throw error;
    throw new AppError('service_unavailable', (error as Error).message, {});
  }
}
