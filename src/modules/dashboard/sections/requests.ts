import { CreateRequestBody, RequestStatus } from '../../requests/requests.schemas.ts';
import { createRequest, deleteRequest, retrieveRequest, searchRequestsFor } from '../../requests/requests.service.ts';
import { listRequestPayments, requestIdsWithParticulars } from '../../payments/payments.service.ts';
import { listEventsFor } from '../../events/events.service.ts';
import { listBankAccountsOf } from '../../merchants/merchants.service.ts';
import { dayBound, text, oneOf, cursorOf } from '../dashboard.format.ts';
import { apiBodyProblem, REQUEST_FLAGS, requestBodyFromForm } from '../dashboard.forms.ts';
import { formOf, problemOf, type Kit, type Scope, type Signed } from '../dashboard.kit.ts';
import { AppError } from '../../../shared/errors.ts';

// Requests: a list with filters, search and paging; a detail page with its payments, link, QR
// code and events; a create form with every option the API takes; delete after confirming.

const hidden = { schema: { hide: true } };
const PAGE = 25;

/** The form field an API error's `field` points at, so the message can link to it. */
const inputOfField: Record<string, string> = {
  'recurring_options.period': 'recurring_period',
  'recurring_options.max_per_period': 'recurring_max_per_period',
  'recurring_options.max_per_payment': 'recurring_max_per_payment',
  'recurring_options.total_count': 'recurring_total_count',
  'recurring_options.total_amount': 'recurring_total_amount',
  'recurring_options.end_date': 'recurring_end_date',
  recurring_options: 'recurring_max_per_period',
  'subscription_options.amount': 'subscription_amount',
  'subscription_options.period': 'subscription_period',
  'subscription_options.start_date': 'subscription_start_date',
  'subscription_options.end_date': 'subscription_end_date',
  'subscription_options.total_count': 'subscription_total_count',
  subscription_options: 'subscription_amount',
  'cust_info.email': 'payer_email',
  'cust_info.first_name': 'payer_first_name',
  'cust_info.last_name': 'payer_last_name',
  'cust_info.phone': 'payer_phone',
  cust_info: 'payer_email',
  minimum_payment_amount: 'minimum_amount',
  maximum_payment_amount: 'maximum_amount',
  allow_dynamic_amount: 'pricing-payer',
};

export type ListFilters = { status: string; type: string; q: string; from: string; to: string; after: string };

export function registerRequestPages(scope: Scope, kit: Kit): void {
  registerRequestList(scope, kit);
  registerRequestForm(scope, kit);
  registerRequestDetail(scope, kit);
}

/** The requests, filtered and searched. */
function registerRequestList(scope: Scope, kit: Kit): void {
  const filtersOf = (query: Record<string, unknown>): ListFilters => ({
    status: oneOf(query.status, RequestStatus),
    type: oneOf(query.type, ['single', 'multi']),
    q: text(query.q, 200),
    from: text(query.from, 10),
    to: text(query.to, 10),
    after: cursorOf('request', query.after),
  });

  scope.get(
    '/dashboard/:mode/requests',
    hidden,
    kit.guard(async (request, reply, signed) => {
      const filters = filtersOf(request.query as Record<string, unknown>);
      const alsoIds = filters.q ? await requestIdsWithParticulars(signed.ctx, filters.q) : undefined;
      const page = await searchRequestsFor(signed.ctx, {
        status: filters.status || undefined,
        type: filters.type || undefined,
        search: filters.q || undefined,
        alsoIds,
        createdFrom: dayBound(filters.from, kit.zone(), false),
        createdBefore: dayBound(filters.to, kit.zone(), true),
        starting_after: filters.after || undefined,
        limit: PAGE,
      });
      const next = page.has_more ? page.requests[page.requests.length - 1].id : null;
      const flash =
        (request.query as { done?: string }).done === 'deleted'
          ? 'The request is deleted: its link no longer takes payments.'
          : null;
      return kit.render(reply, 200, 'requests', {
        title: 'Requests',
        ...kit.layoutOf(signed, 'requests'),
        filters,
        requests: page.requests,
        next,
        statuses: RequestStatus,
        flash,
      });
    }),
  );
}

/** A new request from the form, of any kind. */
function registerRequestForm(scope: Scope, kit: Kit): void {
  const formPage = async (
    signed: Signed,
    values: Record<string, unknown>,
    error: { message: string; input: string } | null,
  ) => ({
    title: 'New request',
    ...kit.layoutOf(signed, 'requests'),
    values,
    error,
    flags: REQUEST_FLAGS,
    bankAccounts: await listBankAccountsOf(kit.deps.db, signed.session.merchant.id),
  });

  scope.get(
    '/dashboard/:mode/requests/new',
    hidden,
    kit.guard(async (_request, reply, signed) =>
      kit.render(
        reply,
        200,
        'request-new',
        await formPage(signed, { kind: 'one-off', pricing: 'fixed', type: 'single' }, null),
      ),
    ),
  );

  scope.post(
    '/dashboard/:mode/requests/new',
    hidden,
    kit.guard(
      async (request, reply, signed) => {
        const form = formOf(request);
        const body = requestBodyFromForm(form);
        const again = async (error: AppError) => {
          const field = typeof error.params.field === 'string' ? error.params.field : '';
          const input = inputOfField[field] ?? field.replace(/\..*/, '');
          return kit.render(reply, 400, 'request-new', await formPage(signed, form, { message: error.message, input }));
        };
        const invalid = apiBodyProblem(CreateRequestBody, body);
        if (invalid) return again(invalid);
        try {
          const created = await createRequest(signed.ctx, body as CreateRequestBody);
          return reply.redirect(`${signed.base}/requests/${created.body.request.id}?done=created`, 303);
        } catch (error) {
          if (problemOf(error)) return again(error as AppError);
          throw error;
        }
      },
      { post: true },
    ),
  );
}

/** One request with its payments and events, and deleting it. */
function registerRequestDetail(scope: Scope, kit: Kit): void {
  scope.get(
    '/dashboard/:mode/requests/:id',
    hidden,
    kit.guard(async (request, reply, signed) => {
      const { request: item } = await retrieveRequest(signed.ctx, request.params.id);
      const [payments, events] = await Promise.all([
        listRequestPayments(signed.ctx, item.id, { limit: 50 }),
        listEventsFor(signed.ctx, { object_id: item.id, limit: 50 }),
      ]);
      const done = (request.query as { done?: string }).done;
      const flash = done === 'created' ? 'The request is created. Send the link, or show the QR code.' : null;
      return kit.render(reply, 200, 'request', {
        title: `Request ${item.id}`,
        ...kit.layoutOf(signed, 'requests'),
        item,
        payments: payments.payments,
        events: events.events,
        flash,
      });
    }),
  );

  scope.get(
    '/dashboard/:mode/requests/:id/delete',
    hidden,
    kit.guard(async (request, reply, signed) => {
      const { request: item } = await retrieveRequest(signed.ctx, request.params.id);
      return kit.render(reply, 200, 'confirm', {
        title: 'Delete this request',
        ...kit.layoutOf(signed, 'requests'),
        heading: `Delete request “${item.message}”?`,
        consequence:
          'Its link stops taking payments at once, and request.status_updated is sent. Payments already made are kept. This cannot be undone.',
        action: `${signed.base}/requests/${item.id}/delete`,
        confirm: 'Yes, delete it',
        back: `${signed.base}/requests/${item.id}`,
      });
    }),
  );

  scope.post(
    '/dashboard/:mode/requests/:id/delete',
    hidden,
    kit.guard(
      async (request, reply, signed) => {
        try {
          await deleteRequest(signed.ctx, request.params.id);
        } catch (error) {
          if (error instanceof AppError && error.code === 'conflict.invalid_state') {
            return kit.message(
              reply,
              409,
              'This request cannot be deleted',
              `${error.message}. Nothing was changed.`,
              signed,
              'requests',
            );
          }
          throw error;
        }
        return reply.redirect(`${signed.base}/requests?done=deleted`, 303);
      },
      { post: true },
    ),
  );
}
