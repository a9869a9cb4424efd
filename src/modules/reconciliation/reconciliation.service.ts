import { idempotent, type Reply } from '../../http/idempotency.ts';
import { sha256Hex } from '../../shared/crypto.ts';
import { AppError, invalidParam, invalidState, notFound } from '../../shared/errors.ts';
import { newId } from '../../shared/ids.ts';
import { formatAmount } from '../../shared/money.ts';
import { pageOf } from '../../shared/pagination.ts';
import { iso } from '../../shared/time.ts';
import { addDays, atLocalTime, daysBetween, localDateAt } from '../../shared/zone.ts';
import type { Db } from '../../store/db.ts';
import { recordAuditFor } from '../audit/audit.service.ts';
import type { Actor, Ctx } from '../context.ts';
import { emitEvent } from '../events/events.service.ts';
import { findPaymentById, successfulPaymentsBetween, type PaymentRow } from '../payments/payments.service.ts';
import { findOwnRefund, refundsSentBetween } from '../refunds/refunds.service.ts';
import type { RefundRow } from '../refunds/refunds.tables.ts';
import { presentLine, presentStatement } from './reconciliation.present.ts';
import * as repo from './reconciliation.repo.ts';
import {
  DEFAULT_UNSEEN_AFTER_DAYS,
  lineKeyOf,
  manualMatchRefusal,
  MATCH_WINDOW_DAYS,
  occurrencesOf,
  proposeMatches,
  type Candidate,
  type MatchMethod,
} from './reconciliation.rules.ts';
import type {
  ImportStatementBody,
  ListStatementLinesQuery,
  ListStatementsQuery,
  MatchLineBody,
  ReconciliationQuery,
} from './reconciliation.schemas.ts';
import type { StatementLineRow, StatementMatchRow, StatementRow } from './reconciliation.tables.ts';
import { parseStatementFile, StatementFileError, ACCEPTED_LAYOUTS, type ParsedStatement } from './statement-files.ts';

// Statement import and reconciliation (docs/reconciliation.md). An import reads and checks the
// whole file before anything is written, then in one transaction stores the statement, the lines
// not stored yet, and the matches the rules find among the lines of its dates, each payment match
// with its payment.reconciled. A match or unmatch by hand is one transaction with its audit record.

/** The most payments or lines one view or one matching run reads. */
const VIEW_MAX_ROWS = 20_000;
/** The longest range the reconciliation view covers, in days. */
const VIEW_MAX_DAYS = 366;

const ownerOf = (ctx: Pick<Ctx, 'merchant' | 'mode'>) => ({ userId: ctx.merchant.id, mode: ctx.mode });

/** Who did it, as a statement or a match records it. */
export function actorLabel(actor: Actor): string {
  switch (actor.kind) {
    case 'member':
      return actor.email;
    case 'api_key':
      return `API key ${actor.id}`;
    case 'payer':
      return actor.email;
    case 'operator':
      return `operator ${actor.name}`;
    case 'service':
      return 'tono';
  }
}

/** The file read and checked, or the API's error: the line and what is wrong there, nothing kept. */
function readFile(content: string, zone: string): ParsedStatement {
  try {
    return parseStatementFile(content, zone);
  } catch (error) {
    if (!(error instanceof StatementFileError)) throw error;
    if (error.reason === 'unknown_layout')
      throw new AppError('bad_request.unknown_statement_layout', error.message, {
        field: 'content',
        accepted: [...ACCEPTED_LAYOUTS],
      });
    throw new AppError('bad_request.invalid_statement', error.message, { field: 'content', line: error.line });
  }
}

type ImportReply = { statement: ReturnType<typeof presentStatement>; already_imported: boolean };

export async function importStatement(
  ctx: Ctx,
  body: ImportStatementBody,
  idempotencyKey?: string,
): Promise<Reply<ImportReply>> {
  const parsed = readFile(body.content, ctx.deps.config.serviceTimeZone);
  const sha = sha256Hex(body.content);
  return idempotent(ctx, idempotencyKey, 'POST /v1/statements', body, 201, async (trx) => {
    const owner = ownerOf(ctx);
    const known = await repo.findStatementByFile(trx, owner, sha);
    if (known) return { statement: presentStatement(known), already_imported: true };
    const now = ctx.clock.now();
    const dates = parsed.lines.map((line) => line.postedOn).sort();
    const row: StatementRow = {
      id: newId('statement'),
      user_id: owner.userId,
      mode: owner.mode,
      layout: parsed.layout,
      filename: body.filename?.trim() || null,
      account: parsed.account,
      file_sha256: sha,
      first_date: dates[0]!,
      last_date: dates[dates.length - 1]!,
      line_count: parsed.lines.length,
      added_count: 0,
      matched_count: 0,
      imported_by: actorLabel(ctx.actor),
      created_at: now,
    };
    if (!(await repo.insertStatementIfNew(trx, row))) {
      const raced = await repo.findStatementByFile(trx, owner, sha);
      if (raced) return { statement: presentStatement(raced), already_imported: true };
    }
    const keys = parsed.lines.map((line) => lineKeyOf(line));
    const occurrences = occurrencesOf(keys);
    const lineRows: StatementLineRow[] = parsed.lines.map((line, index) => ({
      id: newId('statementLine'),
      user_id: owner.userId,
      mode: owner.mode,
      statement_id: row.id,
      line_key: keys[index]!,
      occurrence: occurrences[index]!,
      account: line.account,
      posted_on: line.postedOn,
      amount_cents: line.amountCents,
      particulars: line.particulars,
      code: line.code,
      reference: line.reference,
      other_party: line.otherParty,
      description: line.description,
      bank_transaction_id: line.bankTransactionId,
      file_line: line.fileLine,
      auto_match: 1,
      created_at: now,
    }));
    const added = await repo.insertNewLines(trx, lineRows);
    const matched = added.length > 0 ? await matchAutomatically(trx, ctx, row.first_date, row.last_date) : 0;
    row.added_count = added.length;
    row.matched_count = matched;
    await repo.updateStatementCounts(trx, row.id, { added_count: added.length, matched_count: matched });
    await recordAuditFor(trx, ctx, 'statement.import', row.id, {
      layout: row.layout,
      filename: row.filename,
      line_count: row.line_count,
      added_count: added.length,
      matched_count: matched,
    });
    return { statement: presentStatement(row), already_imported: false };
  });
}

/** The local day's bounds in ms, widened by the matching window: where candidates can be. */
function candidateWindow(ctx: Ctx, from: string, to: string) {
  const zone = ctx.deps.config.serviceTimeZone;
  return {
    from: atLocalTime(addDays(from, -MATCH_WINDOW_DAYS - 1), zone, 0),
    to: atLocalTime(addDays(to, MATCH_WINDOW_DAYS + 2), zone, 0),
  };
}

/**
 * Matches the open lines dated in [from, to] (with the window either side) to the payments and
 * refunds no line shows yet, by the rules; how many it matched.
 */
async function matchAutomatically(trx: Db, ctx: Ctx, from: string, to: string): Promise<number> {
  const owner = ownerOf(ctx);
  const lines = await repo.openLinesBetween(
    trx,
    owner,
    addDays(from, -MATCH_WINDOW_DAYS),
    addDays(to, MATCH_WINDOW_DAYS),
  );
  if (lines.length === 0) return 0;
  const window = candidateWindow(ctx, lines[0]!.posted_on, lines[lines.length - 1]!.posted_on);
  const [payments, refunds] = await Promise.all([
    successfulPaymentsBetween(trx, owner, window, VIEW_MAX_ROWS),
    refundsSentBetween(trx, owner, window, VIEW_MAX_ROWS),
  ]);
  const taken = new Set(
    (await matchesOfTargetsChunked(trx, [...payments.map((p) => p.id), ...refunds.map((r) => r.id)])).map(
      (match) => match.target_id,
    ),
  );
  const zone = ctx.deps.config.serviceTimeZone;
  const candidates: Candidate[] = [
    ...payments.filter((p) => !taken.has(p.id)).map((p) => paymentCandidate(p, zone)),
    ...refunds.filter((r) => !taken.has(r.id)).map((r) => refundCandidate(r, zone)),
  ];
  const proposals = proposeMatches(
    lines.map((line) => ({
      id: line.id,
      postedOn: line.posted_on,
      amountCents: Number(line.amount_cents),
      particulars: line.particulars,
      code: line.code,
      reference: line.reference,
      otherParty: line.other_party,
      description: line.description,
    })),
    candidates,
  );
  const linesById = new Map(lines.map((line) => [line.id, line]));
  const paymentsById = new Map(payments.map((payment) => [payment.id, payment]));
  let count = 0;
  for (const proposal of proposals) {
    const made = await recordMatch(trx, ctx, linesById.get(proposal.lineId)!, {
      kind: proposal.kind,
      targetId: proposal.candidateId,
      method: proposal.method,
      by: 'tono',
      payment: paymentsById.get(proposal.candidateId),
    });
    if (made) count += 1;
  }
  return count;
}

function paymentCandidate(payment: PaymentRow, zone: string): Candidate {
  return {
    id: payment.id,
    kind: 'payment',
    movedOn: localDateAt(Number(payment.completed_at ?? payment.updated_at), zone),
    settledCents: payment.settled_cents,
    tonoParticulars: payment.particulars,
    reference: payment.reference ?? '',
  };
}

function refundCandidate(refund: RefundRow, zone: string): Candidate {
  return {
    id: refund.id,
    kind: 'refund',
    movedOn: localDateAt(Number(refund.sent_at ?? refund.updated_at), zone),
    settledCents: refund.settled_cents,
    tonoParticulars: refund.code,
    reference: refund.reference,
  };
}

async function matchesOfTargetsChunked(db: Db, ids: readonly string[]): Promise<StatementMatchRow[]> {
  const out: StatementMatchRow[] = [];
  for (let at = 0; at < ids.length; at += 500) out.push(...(await repo.matchesOfTargets(db, ids.slice(at, at + 500))));
  return out;
}

/** Writes a match (unless either side is matched already) and, for a payment, its payment.reconciled. */
async function recordMatch(
  trx: Db,
  ctx: Ctx,
  line: StatementLineRow,
  match: { kind: Candidate['kind']; targetId: string; method: MatchMethod; by: string; payment?: PaymentRow },
): Promise<StatementMatchRow | null> {
  const now = ctx.clock.now();
  const row: StatementMatchRow = {
    id: newId('statementMatch'),
    user_id: line.user_id,
    mode: line.mode,
    line_id: line.id,
    kind: match.kind,
    target_id: match.targetId,
    method: match.method,
    matched_by: match.by,
    created_at: now,
  };
  if (!(await repo.insertMatchIfFree(trx, row))) return null;
  if (match.kind === 'payment' && match.payment) {
    await emitEvent(
      trx,
      { userId: line.user_id, mode: line.mode },
      'payment.reconciled',
      match.targetId,
      {
        id: match.payment.id,
        request_id: match.payment.request_id,
        user_id: match.payment.user_id,
        statement_line_id: line.id,
        posted_on: line.posted_on,
        amount: formatAmount(Number(line.amount_cents)),
        method: match.method,
        reconciled_at: iso(now),
      },
      now,
    );
  }
  return row;
}

export async function listStatementsFor(ctx: Ctx, query: ListStatementsQuery) {
  const limit = query.limit ?? 100;
  const { items, hasMore } = pageOf(await repo.listStatements(ctx.db, ownerOf(ctx), { ...query, limit }), limit);
  return { statements: items.map(presentStatement), has_more: hasMore };
}

export async function getStatement(ctx: Ctx, id: string): Promise<StatementRow> {
  const row = await repo.findStatement(ctx.db, ownerOf(ctx), id);
  if (!row) throw notFound('statement', id);
  return row;
}

async function presentLines(db: Db, rows: StatementLineRow[]) {
  const matches = new Map(
    (
      await repo.matchesOfLines(
        db,
        rows.map((row) => row.id),
      )
    ).map((m) => [m.line_id, m]),
  );
  return rows.map((row) => presentLine(row, matches.get(row.id)));
}

export async function listLinesFor(ctx: Ctx, query: ListStatementLinesQuery) {
  const limit = query.limit ?? 100;
  const rows = await repo.listLines(ctx.db, ownerOf(ctx), { ...query, limit });
  const { items, hasMore } = pageOf(rows, limit);
  return { statement_lines: await presentLines(ctx.db, items), has_more: hasMore };
}

export async function retrieveLine(ctx: Ctx, id: string) {
  const line = await repo.findLine(ctx.db, ownerOf(ctx), id);
  if (!line) throw notFound('statement_line', id);
  return { statement_line: (await presentLines(ctx.db, [line]))[0]! };
}

/** The payment or refund the merchant names, theirs and able to be matched, or the API's error. */
async function targetOf(trx: Db, ctx: Ctx, body: MatchLineBody) {
  const owner = ownerOf(ctx);
  if (body.payment_id && body.refund_id) throw invalidParam('payment_id', 'Give payment_id or refund_id, not both');
  if (body.payment_id) {
    const payment = await findPaymentById(trx, body.payment_id);
    if (!payment || payment.user_id !== owner.userId || payment.mode !== owner.mode)
      throw notFound('payment', body.payment_id);
    if (payment.status !== 'successful') throw invalidState('payment', payment.status, 'match');
    return { kind: 'payment' as const, id: payment.id, payment };
  }
  if (body.refund_id) {
    const refund = await findOwnRefund(trx, owner, body.refund_id);
    if (!refund) throw notFound('refund', body.refund_id);
    if (refund.status === 'failed') throw invalidState('refund', refund.status, 'match');
    return { kind: 'refund' as const, id: refund.id, payment: undefined };
  }
  throw new AppError('bad_request.missing_param.payment_id', 'Give payment_id (money in) or refund_id (money out)', {
    field: 'payment_id',
  });
}

const alreadyMatched = (what: string, id: string) =>
  new AppError('conflict.already_matched', `${what} is matched already: unmatch it first`, { id });

/** The merchant matches a line to a payment or refund by hand (recorded with who and when). */
export async function matchLine(ctx: Ctx, lineId: string, body: MatchLineBody, idempotencyKey?: string) {
  return idempotent(ctx, idempotencyKey, `POST /v1/statement-lines/${lineId}/match`, body, 200, async (trx) => {
    const line = await repo.findLine(trx, ownerOf(ctx), lineId);
    if (!line) throw notFound('statement_line', lineId);
    const target = await targetOf(trx, ctx, body);
    const refusal = manualMatchRefusal({ amountCents: Number(line.amount_cents) }, target.kind);
    if (refusal) throw invalidParam(target.kind === 'payment' ? 'payment_id' : 'refund_id', refusal);
    if (await repo.matchOfLine(trx, line.id)) throw alreadyMatched(`Statement line ${line.id}`, line.id);
    if (await repo.matchOfTarget(trx, target.id)) throw alreadyMatched(`The ${target.kind} ${target.id}`, target.id);
    const made = await recordMatch(trx, ctx, line, {
      kind: target.kind,
      targetId: target.id,
      method: 'manual',
      by: actorLabel(ctx.actor),
      payment: target.payment,
    });
    if (!made) throw alreadyMatched(`Statement line ${line.id}`, line.id);
    await repo.setAutoMatch(trx, line.id, true);
    await recordAuditFor(trx, ctx, 'statement_line.match', line.id, {
      [`${target.kind}_id`]: target.id,
      method: 'manual',
    });
    return { statement_line: presentLine({ ...line, auto_match: 1 }, made) };
  });
}

/** The merchant unmatches a line: automatic matching leaves it alone from then on. */
export async function unmatchLine(ctx: Ctx, lineId: string, idempotencyKey?: string) {
  return idempotent(ctx, idempotencyKey, `POST /v1/statement-lines/${lineId}/unmatch`, {}, 200, async (trx) => {
    const line = await repo.findLine(trx, ownerOf(ctx), lineId);
    if (!line) throw notFound('statement_line', lineId);
    const match = await repo.matchOfLine(trx, line.id);
    if (!match || !(await repo.deleteMatch(trx, match.id)))
      throw new AppError('conflict.invalid_state', `Statement line ${line.id} is not matched`, { status: 'unmatched' });
    await repo.setAutoMatch(trx, line.id, false);
    await recordAuditFor(trx, ctx, 'statement_line.unmatch', line.id, {
      [`${match.kind}_id`]: match.target_id,
      method: match.method,
      matched_by: match.matched_by,
    });
    return { statement_line: presentLine({ ...line, auto_match: 0 }, undefined) };
  });
}

/** The reconciliation of a range of days: matched, money not seen, unmatched credits, totals per day. */
export async function reconciliationOf(ctx: Ctx, query: ReconciliationQuery) {
  const zone = ctx.deps.config.serviceTimeZone;
  const now = ctx.clock.now();
  const today = localDateAt(now, zone);
  const to = query.to ?? today;
  const from = query.from ?? addDays(to, -30);
  if (from > to) throw invalidParam('from', 'from must be on or before to');
  // Both from and to are days of the view: 1 January to 1 January is one day.
  if (daysBetween(from, to) + 1 > VIEW_MAX_DAYS)
    throw invalidParam('from', `The range can be at most ${VIEW_MAX_DAYS} days`);
  const unseenAfter = query.unseen_after_days ?? DEFAULT_UNSEEN_AFTER_DAYS;
  const owner = ownerOf(ctx);
  const lines = await repo.linesWithMatchesBetween(ctx.db, owner, from, to, VIEW_MAX_ROWS);
  const payments = await successfulPaymentsBetween(
    ctx.db,
    owner,
    { from: atLocalTime(from, zone, 0), to: atLocalTime(addDays(to, 1), zone, 0) },
    VIEW_MAX_ROWS,
  );
  const seen = new Set(
    (
      await matchesOfTargetsChunked(
        ctx.db,
        payments.map((p) => p.id),
      )
    ).map((m) => m.target_id),
  );
  const days = new Map<
    string,
    { credits: number; matched: number; unmatched: number; tono: number; notSeen: number }
  >();
  const day = (date: string) => {
    let totals = days.get(date);
    if (!totals) days.set(date, (totals = { credits: 0, matched: 0, unmatched: 0, tono: 0, notSeen: 0 }));
    return totals;
  };
  const unmatchedCredits: ReturnType<typeof presentLine>[] = [];
  let matchedCount = 0;
  for (const line of lines) {
    const cents = Number(line.amount_cents);
    if (line.match_id) matchedCount += 1;
    if (cents <= 0) continue;
    const totals = day(line.posted_on);
    totals.credits += cents;
    if (line.match_id) totals.matched += cents;
    else {
      totals.unmatched += cents;
      unmatchedCredits.push(presentLine(line, undefined));
    }
  }
  const notSeen = [];
  for (const payment of payments) {
    const completedOn = localDateAt(Number(payment.completed_at), zone);
    const totals = day(completedOn);
    totals.tono += payment.settled_cents;
    const age = daysBetween(completedOn, today);
    if (seen.has(payment.id) || age < unseenAfter) continue;
    totals.notSeen += payment.settled_cents;
    notSeen.push({
      payment_id: payment.id,
      request_id: payment.request_id,
      completed_on: completedOn,
      settled_amount: formatAmount(payment.settled_cents),
      particulars: payment.particulars,
      code: payment.code,
      reference: payment.reference,
      days: age,
    });
  }
  return {
    from,
    to,
    unseen_after_days: unseenAfter,
    matched_count: matchedCount,
    money_not_seen: notSeen,
    unmatched_credits: unmatchedCredits,
    days: [...days.entries()]
      .sort(([a], [b]) => a.localeCompare(b))
      .map(([date, totals]) => ({
        date,
        statement_credits: formatAmount(totals.credits),
        matched_credits: formatAmount(totals.matched),
        unmatched_credits: formatAmount(totals.unmatched),
        tono_successful: formatAmount(totals.tono),
        tono_not_seen: formatAmount(totals.notSeen),
      })),
    truncated: lines.length >= VIEW_MAX_ROWS || payments.length >= VIEW_MAX_ROWS,
  };
}

/** Every line of the range with its match, for the dashboard's CSV export. */
export async function linesForExport(ctx: Ctx, from: string, to: string) {
  const rows = await repo.linesWithMatchesBetween(ctx.db, ownerOf(ctx), from, to, VIEW_MAX_ROWS);
  return rows;
}

export type { StatementRow };
