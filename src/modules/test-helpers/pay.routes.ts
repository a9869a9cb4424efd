import { Type } from 'typebox';
import { apiKeyAuth, keyScope } from '../merchants/merchants.auth.ts';
import { errorResponses, IdParams } from '../../http/schemas.ts';
import { PaymentObject } from '../payments/payments.schemas.ts';
import { PayBody } from './pay.schemas.ts';
import { payRequestAsPayer } from './pay.service.ts';
import type { PayHelper } from '../manifest.ts';
import type { Deps } from '../context.ts';
import type { App } from '../../http/app-type.ts';

export async function registerPayTestHelperRoutes(
  app: App,
  deps: Deps,
  helpers: ReadonlyMap<string, PayHelper>,
): Promise<void> {
  app.post(
    '/v1/test-helpers/requests/:id/pay',
    {
      onRequest: apiKeyAuth(deps),
      config: { keyScope: keyScope('requests') },
      schema: {
        tags: ['Test helpers'],
        summary: 'Pay a test-mode request as a payer would, through the sandbox bank (test keys only)',
        description:
          'One-off requests return { payment } in its final state; recurring and subscription requests return their own object.',
        params: IdParams('Request id (request_…)'),
        body: PayBody,
        response: {
          200: Type.Object({ payment: Type.Optional(PaymentObject) }, { additionalProperties: true }),
          ...errorResponses,
          503: errorResponses[400],
        },
      },
    },
    async (request) => payRequestAsPayer(request.ctx, helpers, request.params.id, request.body),
  );
}
