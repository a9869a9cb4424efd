import { apiKeyAuth, keyScope } from '../merchants/merchants.auth.ts';
import { errorResponses, IdParams } from '../../http/schemas.ts';
import { ListPaymentsQuery, ListRequestPaymentsQuery, PaymentEnvelope, PaymentList } from './payments.schemas.ts';
import { listPaymentsFor, listRequestPayments, retrievePayment } from './payments.service.ts';
import type { Deps } from '../context.ts';
import type { App } from '../../http/app-type.ts';

export async function registerPaymentRoutes(app: App, deps: Deps): Promise<void> {
  const auth = apiKeyAuth(deps);
  const tags = ['Payments'];
  const getOne = {
    onRequest: auth,
    config: { keyScope: keyScope('payments') },
    schema: {
      tags,
      summary: 'Get a payment',
      params: IdParams('Payment id (payment_…)'),
      response: { 200: PaymentEnvelope, ...errorResponses },
    },
  };
  app.get('/v1/payments/:id', getOne, async (request) => retrievePayment(request.ctx, request.params.id));
  app.get('/payments/:id', { ...getOne, schema: { ...getOne.schema, hide: true } }, async (request) =>
    retrievePayment(request.ctx, request.params.id),
  );

  app.get(
    '/v1/payments',
    {
      onRequest: auth,
      config: { keyScope: keyScope('payments') },
      schema: {
        tags,
        summary: 'List payments, newest first',
        querystring: ListPaymentsQuery,
        response: { 200: PaymentList, ...errorResponses },
      },
    },
    async (request) => listPaymentsFor(request.ctx, request.query),
  );

  const requestPayments = {
    onRequest: auth,
    config: { keyScope: keyScope('payments') },
    schema: {
      tags,
      summary: "List a request's payments, newest first",
      params: IdParams('Request id (request_…)'),
      querystring: ListRequestPaymentsQuery,
      response: { 200: PaymentList, ...errorResponses },
    },
  };
  app.get('/v1/requests/:id/payments', requestPayments, async (request) =>
    listRequestPayments(request.ctx, request.params.id, request.query),
  );
  app.get(
    '/requests/:id/payments',
    { ...requestPayments, schema: { ...requestPayments.schema, hide: true } },
    async (request) => listRequestPayments(request.ctx, request.params.id, request.query),
  );
}
