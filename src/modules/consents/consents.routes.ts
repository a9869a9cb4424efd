import { apiKeyAuth, keyScope } from '../merchants/merchants.auth.ts';
import { errorResponses, IdParams } from '../../http/schemas.ts';
import { PaymentEnvelope } from '../payments/payments.schemas.ts';
import { ConsentEnvelope, ConsentList, ExecutePaymentBody, ListConsentsQuery } from './consents.schemas.ts';
import { listConsentsFor, retrieveConsent, revokeConsentByMerchant } from './consents.service.ts';
import { executePayment } from './execute.service.ts';
import { registerConsentTestHelperRoutes } from './consents.test-helpers.ts';
import type { Deps } from '../context.ts';
import type { App } from '../../http/app-type.ts';

export async function registerConsentRoutes(app: App, deps: Deps): Promise<void> {
  const auth = apiKeyAuth(deps);
  const params = IdParams('Recurring consent id (recurring_…)');

  app.post(
    '/v1/payments',
    {
      onRequest: auth,
      config: { keyScope: keyScope('payments') },
      schema: {
        tags: ['Payments'],
        summary: 'Execute a payment under a recurring consent',
        description:
          'Synchronous. Every limit of the consent is checked first (422 payment_rejected.<limit>, no payment created); then the bank executes. ' +
          'A bank refusal is a 201 with status failed and failure_reason. The same idempotency_key with the same parameters returns the first payment with 200; ' +
          'with other parameters, 409.',
        body: ExecutePaymentBody,
        response: { 201: PaymentEnvelope, 200: PaymentEnvelope, ...errorResponses },
      },
    },
    async (request, reply) => {
      const result = await executePayment(request.ctx, request.body);
      if (result.status === 200) reply.header('idempotent-replayed', 'true');
      return reply.status(result.status).send({ payment: result.payment });
    },
  );

  const tags = ['Recurring consents'];
  const getOne = {
    onRequest: auth,
    config: { keyScope: keyScope('consents') },
    schema: {
      tags,
      summary: 'Get a recurring consent: status, limits and usage (never the token)',
      params,
      response: { 200: ConsentEnvelope, ...errorResponses },
    },
  };
  app.get('/v1/recurring-consents/:id', getOne, async (request) => retrieveConsent(request.ctx, request.params.id));
  app.get('/recurring-consents/:id', { ...getOne, schema: { ...getOne.schema, hide: true } }, async (request) =>
    retrieveConsent(request.ctx, request.params.id),
  );

  app.get(
    '/v1/recurring-consents',
    {
      onRequest: auth,
      config: { keyScope: keyScope('consents') },
      schema: {
        tags,
        summary: 'List recurring consents, newest first',
        querystring: ListConsentsQuery,
        response: { 200: ConsentList, ...errorResponses },
      },
    },
    async (request) => listConsentsFor(request.ctx, request.query),
  );

  app.put(
    '/v1/recurring-consents/:id/revoke',
    {
      onRequest: auth,
      config: { keyScope: keyScope('consents') },
      schema: {
        tags,
        summary: 'Revoke a recurring consent, here and at the bank; no further payments can be executed',
        params,
        response: { 200: ConsentEnvelope, ...errorResponses },
      },
    },
    async (request) => revokeConsentByMerchant(request.ctx, request.params.id),
  );

  await registerConsentTestHelperRoutes(app, deps);
}
