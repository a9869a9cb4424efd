import multipart from '@fastify/multipart';
import type { FastifyError } from 'fastify';
import { errorHandler } from '../../../http/errors.ts';
import { stringify } from 'csv-stringify/sync';
import { spreadsheetSafe } from '../dashboard.present.ts';
import { AppError } from '../../../shared/errors.ts';
import { centsToDecimal } from '../../../shared/money.ts';
import {
  importStatement,
  linesForExport,
  listStatementsFor,
  matchLine,
  reconciliationOf,
  unmatchLine,
} from '../../reconciliation/reconciliation.service.ts';
import { STATEMENT_MAX_CHARS } from '../../reconciliation/reconciliation.schemas.ts';
import { cursorOf, dateFilterProblem, dayBound, localDay, text } from '../dashboard.format.ts';
import { formOf, problemOf, type Kit, type Scope, type Signed } from '../dashboard.kit.ts';

// Reconciliation (docs/reconciliation.md): upload a bank statement file, see what is matched, the
// money not seen and the credits that match nothing, match and unmatch by hand, export as CSV.
// Every change goes through the reconciliation module's service, as the API's do. The upload is
// multipart/form-data, parsed in this section's scope only, with its CSRF token as a field.

const hidden = { schema: { hide: true } };

/** The view's date filters as typed: read whole, so a longer value is no date and the page says so. */
const typedDates = (query: Record<string, unknown>) => ({ from: text(query.from, 40), to: text(query.to, 40) });

/** The date inputs as the form labels them, for the message about a date it cannot read. */
const DATE_LABELS = { from: 'From', to: 'To' };

function viewQuery(query: Record<string, unknown>, zone: string) {
  const days = Number.parseInt(text(query.days, 2), 10);
  // A value that is no day is left out: the view keeps its default for it (and its page says why).
  const dayOrUndefined = (date: string) => (dayBound(date, zone, false) === null ? undefined : date);
  const typed = typedDates(query);
  return {
    from: dayOrUndefined(typed.from),
    to: dayOrUndefined(typed.to),
    unseen_after_days: Number.isInteger(days) && days >= 0 && days <= 60 ? days : undefined,
  };
}

export function registerReconciliationPages(scope: Scope, kit: Kit): void {
  registerView(scope, kit);
  registerActions(scope, kit);
  const tooLarge = tooLargePage(kit);
  void scope.register(async (uploads) => {
    await uploads.register(multipart, {
      attachFieldsToBody: 'keyValues',
      limits: { fileSize: STATEMENT_MAX_CHARS, files: 1, fields: 4, parts: 5 },
    });
    // A file over the limit is refused while the body is read, before the page's handler runs.
    uploads.setErrorHandler((error: FastifyError, request, reply) => {
      if (
        error.code !== 'FST_REQ_FILE_TOO_LARGE' &&
        error.code !== 'FST_FILES_LIMIT' &&
        error.code !== 'FST_PARTS_LIMIT'
      )
        return errorHandler(error, request, reply);
      return tooLarge(request, reply);
    });
    registerUpload(uploads, kit);
  });
}

/**
 * The refusal of a file over the limit, in the signed-in layout as the section's other errors are.
 * The body is refused while it is read, before the upload's own guard runs, so this page goes
 * through the guard itself. It only shows a page, and it may: the form (and its CSRF token) was
 * never read, and nothing is done.
 */
function tooLargePage(kit: Kit) {
  return kit.guard(
    async (_request, reply, signed) =>
      kit.message(
        reply,
        413,
        'This file is too large',
        `A statement file can be at most ${STATEMENT_MAX_CHARS / 1_000_000} MB, one file at a time: export fewer days and import them in parts. Nothing was kept.`,
        signed,
        'reconciliation',
      ),
    { permission: 'reconciliation.manage' },
  );
}

function registerView(scope: Scope, kit: Kit): void {
  scope.get(
    '/dashboard/:mode/reconciliation',
    hidden,
    kit.guard(
      async (request, reply, signed) => {
        const query = viewQuery(request.query, kit.zone());
        const to = query.to ?? localDay(signed.ctx.clock.now(), kit.zone());
        if (query.from && query.from > to)
          return kit.message(
            reply,
            400,
            'Those dates cannot be shown',
            `“From” (${query.from}) is after “To” (${to}${query.to ? '' : ', today'}): choose a From on or before To.`,
            signed,
            'reconciliation',
          );
        let view: Awaited<ReturnType<typeof reconciliationOf>>;
        try {
          view = await reconciliationOf(signed.ctx, query);
        } catch (error) {
          const problem = problemOf(error);
          if (!problem) throw error;
          return kit.message(reply, 400, 'Those dates cannot be shown', problem.message, signed, 'reconciliation');
        }
        const lines = await linesForExport(signed.ctx, view.from, view.to);
        const statements = await listStatementsFor(signed.ctx, { limit: 10 });
        return kit.render(reply, 200, 'reconciliation', {
          title: 'Reconciliation',
          ...kit.layoutOf(signed, 'reconciliation'),
          view,
          matched: lines.filter((line) => line.match_id !== null),
          statements: statements.statements,
          query: { from: view.from, to: view.to, days: String(view.unseen_after_days) },
          dateProblem: dateFilterProblem(typedDates(request.query), kit.zone(), DATE_LABELS),
          flash: flashOf(request.query),
        });
      },
      { permission: 'read' },
    ),
  );

  scope.get(
    '/dashboard/:mode/reconciliation/export.csv',
    hidden,
    kit.guard(
      async (request, reply, signed) => {
        const view = await reconciliationOf(signed.ctx, viewQuery(request.query, kit.zone()));
        const csv = exportCsv(view, await linesForExport(signed.ctx, view.from, view.to));
        return reply
          .header('content-type', 'text/csv; charset=utf-8')
          .header(
            'content-disposition',
            `attachment; filename="tono-${signed.mode}-reconciliation-${view.from}-${view.to}.csv"`,
          )
          .header('cache-control', 'no-store')
          .send(csv);
      },
      { permission: 'read' },
    ),
  );
}

/** The lines of the range with their matches, then the money not seen, as one CSV. */
function exportCsv(
  view: Awaited<ReturnType<typeof reconciliationOf>>,
  lines: Awaited<ReturnType<typeof linesForExport>>,
): string {
  const header = [
    'date',
    'amount',
    'particulars',
    'code',
    'reference',
    'other_party',
    'description',
    'matched_to',
    'method',
    'matched_by',
    'matched_at',
    'line_id',
  ];
  const rows = lines.map((line) => [
    line.posted_on,
    centsToDecimal(Number(line.amount_cents)),
    // What a statement line says was typed by whoever paid or was paid: never a formula.
    spreadsheetSafe(line.particulars),
    spreadsheetSafe(line.code),
    spreadsheetSafe(line.reference),
    spreadsheetSafe(line.other_party),
    spreadsheetSafe(line.description),
    line.target_id ?? '',
    line.method ?? '',
    line.matched_by ?? '',
    line.matched_at === null ? '' : new Date(line.matched_at).toISOString(),
    line.id,
  ]);
  const notSeen = view.money_not_seen.map((payment) => [
    payment.completed_on,
    payment.settled_amount.value.replace(' NZD', ''),
    payment.particulars,
    spreadsheetSafe(payment.code),
    spreadsheetSafe(payment.reference ?? ''),
    '',
    'money not seen',
    payment.payment_id,
    '',
    '',
    '',
    '',
  ]);
  return stringify([header, ...rows, ...notSeen], { record_delimiter: 'windows' });
}

function flashOf(query: Record<string, unknown>): string | null {
  const done = text(query.done, 20);
  if (done === 'imported') {
    const added = text(query.added, 6);
    const matched = text(query.matched, 6);
    return `The statement is imported: ${added} new lines, ${matched} matched.`;
  }
  if (done === 'again') return 'This file was imported before: nothing changed.';
  if (done === 'matched') return 'The line is matched.';
  if (done === 'unmatched') return 'The line is unmatched: Tono will not match it again by itself.';
  return null;
}

function registerUpload(scope: Scope, kit: Kit): void {
  scope.post(
    '/dashboard/:mode/reconciliation/statements',
    hidden,
    kit.guard(
      async (request, reply, signed) => {
        const form = formOf(request);
        const file = form.file;
        if (!Buffer.isBuffer(file) || file.length === 0)
          return kit.message(
            reply,
            400,
            'No file',
            'Choose the statement file your bank exported, then upload it.',
            signed,
            'reconciliation',
          );
        try {
          const result = await importStatement(signed.ctx, {
            content: file.toString('utf8'),
            filename: text(form.filename, 200) || undefined,
          });
          const { statement, already_imported } = result.body;
          return reply.redirect(
            already_imported
              ? `${signed.base}/reconciliation?done=again`
              : `${signed.base}/reconciliation?done=imported&added=${statement.added_count}&matched=${statement.matched_count}`,
            303,
          );
        } catch (error) {
          const problem = problemOf(error);
          if (!problem) throw error;
          return kit.message(
            reply,
            400,
            'This file cannot be imported',
            `${problem.message}. Nothing from it was kept.`,
            signed,
            'reconciliation',
          );
        }
      },
      { permission: 'reconciliation.manage', post: true },
    ),
  );
}

function registerActions(scope: Scope, kit: Kit): void {
  const act = (
    verb: 'match' | 'unmatch',
    run: (signed: Signed, id: string, form: Record<string, unknown>) => Promise<unknown>,
  ) =>
    scope.post(
      `/dashboard/:mode/reconciliation/lines/:id/${verb}`,
      hidden,
      kit.guard(
        async (request, reply, signed) => {
          const id = cursorOf('statementLine', request.params.id) || request.params.id;
          try {
            await run(signed, id, formOf(request));
          } catch (error) {
            const problem = problemOf(error);
            if (!problem || !(error instanceof AppError)) throw error;
            return kit.message(
              reply,
              error.status,
              'That cannot be done now',
              `${problem.message}. Nothing was changed.`,
              signed,
              'reconciliation',
            );
          }
          return reply.redirect(`${signed.base}/reconciliation?done=${verb}ed`, 303);
        },
        { permission: 'reconciliation.manage', post: true },
      ),
    );
  act('match', (signed, id, form) => {
    const target = text(form.target, 64).trim();
    return matchLine(signed.ctx, id, target.startsWith('refund_') ? { refund_id: target } : { payment_id: target });
  });
  act('unmatch', (signed, id) => unmatchLine(signed.ctx, id));
}
