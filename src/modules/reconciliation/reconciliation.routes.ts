import { errorResponses, IdempotencyHeaders, IdParams } from '../../http/schemas.ts';
import { apiKeyAuth, keyScope } from '../merchants/merchants.auth.ts';
import type { Deps } from '../context.ts';
import type { App } from '../../http/app-type.ts';
import { presentStatement } from './reconciliation.present.ts';
import {
  ImportStatementBody,
  ImportStatementReply,
  ListStatementLinesQuery,
  ListStatementsQuery,
  MatchLineBody,
  ReconciliationQuery,
  ReconciliationReply,
  STATEMENT_BODY_LIMIT,
  StatementEnvelope,
  StatementLineEnvelope,
  StatementLineList,
  StatementList,
} from './reconciliation.schemas.ts';
import {
  getStatement,
  importStatement,
  listLinesFor,
  listStatementsFor,
  matchLine,
  reconciliationOf,
  retrieveLine,
  unmatchLine,
} from './reconciliation.service.ts';

const tags = ['Reconciliation'];
const config = { keyScope: keyScope('reconciliation') };

export async function registerReconciliationRoutes(app: App, deps: Deps): Promise<void> {
  registerStatementRoutes(app, deps);
  registerLineRoutes(app, deps);
}

/** Importing statements and reading them back. */
function registerStatementRoutes(app: App, deps: Deps): void {
  const auth = apiKeyAuth(deps);

  app.post(
    '/v1/statements',
    {
      onRequest: auth,
      config,
      bodyLimit: STATEMENT_BODY_LIMIT,
      schema: {
        tags,
        summary: 'Import a bank statement file and match its lines to your payments',
        description:
          'The file as your internet banking exported it (ANZ, ASB, BNZ, Westpac or Kiwibank CSV, or OFX), as text in `content`. A file refused for its layout or a bad line keeps nothing. The same file again changes nothing (`already_imported`); an overlapping file adds only the lines not known yet (docs/reconciliation.md).',
        headers: IdempotencyHeaders,
        body: ImportStatementBody,
        response: { 201: ImportStatementReply, 200: ImportStatementReply, ...errorResponses },
      },
    },
    async (request, reply) => {
      const result = await importStatement(request.ctx, request.body, request.headers['idempotency-key']);
      if (result.replayed) reply.header('idempotent-replayed', 'true');
      return reply.status(result.body.already_imported ? 200 : result.status).send(result.body);
    },
  );

  app.get(
    '/v1/statements',
    {
      onRequest: auth,
      config,
      schema: {
        tags,
        summary: 'List imported statements, newest first',
        description: 'Paginate with limit and starting_after.',
        querystring: ListStatementsQuery,
        response: { 200: StatementList, ...errorResponses },
      },
    },
    async (request) => listStatementsFor(request.ctx, request.query),
  );

  app.get(
    '/v1/statements/:id',
    {
      onRequest: auth,
      config,
      schema: {
        tags,
        summary: 'Get an imported statement',
        description:
          'Its layout, dates, and how many lines it added and matched; its lines are at /v1/statement-lines?statement_id=…',
        params: IdParams('Statement id (stmt_…)'),
        response: { 200: StatementEnvelope, ...errorResponses },
      },
    },
    async (request) => ({ statement: presentStatement(await getStatement(request.ctx, request.params.id)) }),
  );
}

/** The lines, matching and unmatching them, and the reconciliation of a range of days. */
function registerLineRoutes(app: App, deps: Deps): void {
  const auth = apiKeyAuth(deps);
  app.get(
    '/v1/statement-lines',
    {
      onRequest: auth,
      config,
      schema: {
        tags,
        summary: 'List statement lines with their matches, newest first',
        description:
          'Filter by statement, direction (credit: money in), matched or not, and dates; paginate with limit and starting_after.',
        querystring: ListStatementLinesQuery,
        response: { 200: StatementLineList, ...errorResponses },
      },
    },
    async (request) => listLinesFor(request.ctx, request.query),
  );

  app.get(
    '/v1/statement-lines/:id',
    {
      onRequest: auth,
      config,
      schema: {
        tags,
        summary: 'Get a statement line and its match',
        description: 'What the bank showed, and the payment or refund it is matched to, how, by whom and when.',
        params: IdParams('Statement line id (stline_…)'),
        response: { 200: StatementLineEnvelope, ...errorResponses },
      },
    },
    async (request) => retrieveLine(request.ctx, request.params.id),
  );

  app.post(
    '/v1/statement-lines/:id/match',
    {
      onRequest: auth,
      config,
      schema: {
        tags,
        summary: 'Match a statement line to a payment (money in) or a refund (money out) by hand',
        description: 'Recorded with who and when; a payment matched sends payment.reconciled.',
        params: IdParams('Statement line id (stline_…)'),
        headers: IdempotencyHeaders,
        body: MatchLineBody,
        response: { 200: StatementLineEnvelope, ...errorResponses },
      },
    },
    async (request, reply) => {
      const result = await matchLine(request.ctx, request.params.id, request.body, request.headers['idempotency-key']);
      if (result.replayed) reply.header('idempotent-replayed', 'true');
      return reply.status(result.status).send(result.body);
    },
  );

  app.post(
    '/v1/statement-lines/:id/unmatch',
    {
      onRequest: auth,
      config,
      schema: {
        tags,
        summary: 'Undo a statement line’s match',
        description: 'Automatic matching leaves the line alone from then on; it can still be matched by hand.',
        params: IdParams('Statement line id (stline_…)'),
        headers: IdempotencyHeaders,
        response: { 200: StatementLineEnvelope, ...errorResponses },
      },
    },
    async (request, reply) => {
      const result = await unmatchLine(request.ctx, request.params.id, request.headers['idempotency-key']);
      if (result.replayed) reply.header('idempotent-replayed', 'true');
      return reply.status(result.status).send(result.body);
    },
  );

  app.get(
    '/v1/reconciliation',
    {
      onRequest: auth,
      config,
      schema: {
        tags,
        summary: 'The reconciliation of a range of days',
        description:
          'How many lines are matched, the successful payments no statement shows after unseen_after_days (money not seen), the money in that matches nothing, and the totals per day.',
        querystring: ReconciliationQuery,
        response: { 200: ReconciliationReply, ...errorResponses },
      },
    },
    async (request) => reconciliationOf(request.ctx, request.query),
  );
}
