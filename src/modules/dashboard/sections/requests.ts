import { CreateRequestBody, RequestStatus } from '../../requests/requests.schemas.ts';
import { createRequest, deleteRequest, retrieveRequest, searchRequestsFor } from '../../requests/requests.service.ts';
import { listRequestPayments, requestIdsWithParticulars } from '../../payments/payments.service.ts';
import { listEventsFor } from '../../events/events.service.ts';
import { listBankAccountsOf } from '../../merchants/merchants.service.ts';
import { dateFilterProblem, dayBound, text, oneOf, cursorOf } from '../dashboard.format.ts';
import {
  apiBodyProblem,
  formKeyOf,
  isSentBeforeWithOtherValues,
  newConfirmationKey,
  SENT_BEFORE,
} from '../dashboard.forms.ts';
import {
  formProblemOf,
  REQUEST_FLAGS,
  REQUEST_INPUTS,
  REQUEST_KINDS,
  type RequestKind,
  requestBodyFromForm,
  requestKindOf,
  strayInputOf,
} from '../request-form.ts';
import { formOf, problemOf, type Kit, type Scope, type Signed } from '../dashboard.kit.ts';
import { AppError } from '../../../shared/errors.ts';
import { auditTrailOf } from './audit.ts';

// Requests: a list with filters, search and paging; a detail page with its payments, link, QR
// code and events; a create form with every option the API takes; delete after confirming.

const hidden = { schema: { hide: true } };
const PAGE = 25;

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
    // Read whole, not cut to a date's length: a longer value is no date, and the page says so.
    from: text(query.from, 40),
    to: text(query.to, 40),
    after: cursorOf('request', query.after),
  });

  scope.get(
    '/dashboard/:mode/requests',
    hidden,
    kit.guard(
      async (request, reply, signed) => {
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
          dateProblem: dateFilterProblem(filters, kit.zone(), { from: 'Created from', to: 'Created to' }),
          requests: page.requests,
          next,
          statuses: RequestStatus,
          flash,
        });
      },
      { permission: 'read' },
    ),
  );
}

/** A new request: first what the payer agrees to, then that kind's fields only. */
function registerRequestForm(scope: Scope, kit: Kit): void {
  const formPage = async (
    signed: Signed,
    kind: RequestKind | null,
    values: Record<string, unknown>,
    error: { message: string; input: string } | null,
    formKey: string = newConfirmationKey(),
  ) => ({
    title: kind ? `New request: ${REQUEST_KINDS[kind].label.replace(/:.*/, '').toLowerCase()}` : 'New request',
    ...kit.layoutOf(signed, 'requests'),
    kind,
    // The form's one-time key: a second post of this form answers with the request the first made.
    formKey,
    kinds: Object.entries(REQUEST_KINDS).map(([value, { label }]) => ({ value, label })),
    inputs: REQUEST_INPUTS,
    values,
    error,
    flags: REQUEST_FLAGS,
    bankAccounts: await listBankAccountsOf(kit.deps.db, signed.session.merchant.id),
  });

  scope.get(
    '/dashboard/:mode/requests/new',
    hidden,
    kit.guard(
      async (request, reply, signed) => {
        const query = request.query as Record<string, unknown>;
        const kind = requestKindOf(query.kind);
        const chooseAgain =
          query.kind !== undefined && !kind
            ? { message: 'Choose what the payer agrees to.', input: 'kind-fixed' }
            : null;
        return kit.render(
          reply,
          chooseAgain ? 400 : 200,
          'request-new',
          await formPage(signed, kind, { type: 'single' }, chooseAgain),
        );
      },
      { permission: 'requests.manage' },
    ),
  );

  scope.post(
    '/dashboard/:mode/requests/new',
    hidden,
    kit.guard(
      async (request, reply, signed) => {
        const form = formOf(request);
        const kind = requestKindOf(form.kind);
        if (!kind) {
          const problem = { message: 'Choose what the payer agrees to: nothing was created.', input: 'kind-fixed' };
          return kit.render(reply, 400, 'request-new', await formPage(signed, null, {}, problem));
        }
        const key = formKeyOf(form);
        const again = async (problem: { message: string; input: string }, formKey = key ?? undefined) =>
          kit.render(reply, 400, 'request-new', await formPage(signed, kind, form, problem, formKey));
        const stray = strayInputOf(form, kind);
        if (stray) return again(stray);
        const body = requestBodyFromForm(form, kind);
        const invalid = apiBodyProblem(CreateRequestBody, body);
        if (invalid) return again(formProblemOf(problemOf(invalid)!));
        try {
          // A repeat of this form's key (a double click) answers with the request the first post made.
          const created = await createRequest(signed.ctx, body as CreateRequestBody, key ?? undefined);
          return reply.redirect(`${signed.base}/requests/${created.body.request.id}?done=created`, 303);
        } catch (error) {
          if (isSentBeforeWithOtherValues(error))
            return again({ message: SENT_BEFORE, input: 'message' }, newConfirmationKey());
          const problem = problemOf(error);
          if (problem) return again(formProblemOf(problem));
          throw error;
        }
      },
      { permission: 'requests.manage', post: true },
    ),
  );
}

/** One request with its payments and events, and deleting it. */
function registerRequestDetail(scope: Scope, kit: Kit): void {
  scope.get(
    '/dashboard/:mode/requests/:id',
    hidden,
    kit.guard(
      async (request, reply, signed) => {
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
          audit: await auditTrailOf(signed, item.id),
          payments: payments.payments,
          events: events.events,
          flash,
        });
      },
      { permission: 'read' },
    ),
  );

  scope.get(
    '/dashboard/:mode/requests/:id/delete',
    hidden,
    kit.guard(
      async (request, reply, signed) => {
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
      },
      { permission: 'requests.manage' },
    ),
  );

  scope.post(
    '/dashboard/:mode/requests/:id/delete',
    hidden,
    kit.guard(
      async (request, reply, signed) => {
        try {
          await deleteRequest(signed.ctx, request.params.id);
        } catch (error) {
          if (error instanceof AppError && error.code.startsWith('conflict.')) {
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
      { permission: 'requests.manage', post: true },
    ),
  );
}
