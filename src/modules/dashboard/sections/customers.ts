import { retrieveCustomer, searchCustomersFor } from '../../customers/customers.service.ts';
import { searchPaymentsFor } from '../../payments/payments.service.ts';
import { listSubscriptionsFor } from '../../subscriptions/subscriptions.service.ts';
import { listConsentsFor } from '../../consents/consents.service.ts';
import { text, cursorOf } from '../dashboard.format.ts';
import type { Kit, Scope } from '../dashboard.kit.ts';
import { auditTrailOf } from './audit.ts';

// Customers: a list with search; a detail page with their payments, subscriptions and consents.

const hidden = { schema: { hide: true } };

export function registerCustomerPages(scope: Scope, kit: Kit): void {
  scope.get(
    '/dashboard/:mode/customers',
    hidden,
    kit.guard(
      async (request, reply, signed) => {
        const filters = {
          q: text(request.query.q, 200),
          after: cursorOf('customer', request.query.after),
        };
        const page = await searchCustomersFor(signed.ctx, {
          search: filters.q || undefined,
          starting_after: filters.after || undefined,
          limit: 25,
        });
        const next = page.has_more ? page.customers[page.customers.length - 1].id : null;
        return kit.render(reply, 200, 'customers', {
          title: 'Customers',
          ...kit.layoutOf(signed, 'customers'),
          customers: page.customers,
          filters,
          next,
        });
      },
      { permission: 'read' },
    ),
  );

  scope.get(
    '/dashboard/:mode/customers/:id',
    hidden,
    kit.guard(
      async (request, reply, signed) => {
        const { customer } = await retrieveCustomer(signed.ctx, request.params.id);
        const [payments, subscriptions, consents] = await Promise.all([
          searchPaymentsFor(signed.ctx, { payerEmail: customer.email, limit: 50 }),
          listSubscriptionsFor(signed.ctx, { email: customer.email, limit: 50 }),
          listConsentsFor(signed.ctx, { email: customer.email, limit: 50 }),
        ]);
        return kit.render(reply, 200, 'customer', {
          title: `Customer ${customer.email}`,
          ...kit.layoutOf(signed, 'customers'),
          customer,
          audit: await auditTrailOf(signed, customer.id),
          payments: payments.payments,
          subscriptions: subscriptions.subscriptions,
          consents: consents.recurring_consents,
        });
      },
      { permission: 'read' },
    ),
  );
}
