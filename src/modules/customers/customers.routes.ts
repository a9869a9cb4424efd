import { Type } from 'typebox';
import { apiKeyAuth, keyScope } from '../merchants/merchants.auth.ts';
import { errorResponses, IdParams } from '../../http/schemas.ts';
import { CustomerEnvelope, CustomerObject, ListCustomersQuery } from './customers.schemas.ts';
import { listCustomersFor, retrieveCustomer } from './customers.service.ts';
import type { Deps } from '../context.ts';
import type { App } from '../../http/app-type.ts';

export async function registerCustomerRoutes(app: App, deps: Deps): Promise<void> {
  const auth = apiKeyAuth(deps);
  const tags = ['Customers'];
  const getOne = {
    onRequest: auth,
    config: { keyScope: keyScope('customers') },
    schema: {
      tags,
      summary: 'Get a customer',
      params: IdParams('Customer id (customer_…)'),
      response: { 200: CustomerEnvelope, ...errorResponses },
    },
  };
  app.get('/v1/customers/:id', getOne, async (request) => retrieveCustomer(request.ctx, request.params.id));
  app.get('/customers/:id', { ...getOne, schema: { ...getOne.schema, hide: true } }, async (request) =>
    retrieveCustomer(request.ctx, request.params.id),
  );
  app.get(
    '/v1/customers',
    {
      onRequest: auth,
      config: { keyScope: keyScope('customers') },
      schema: {
        tags,
        summary: 'List customers, newest first',
        querystring: ListCustomersQuery,
        response: {
          200: Type.Object({ customers: Type.Array(CustomerObject), has_more: Type.Boolean() }),
          ...errorResponses,
        },
      },
    },
    async (request) => listCustomersFor(request.ctx, request.query),
  );
}
