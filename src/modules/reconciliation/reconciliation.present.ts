import { formatAmount } from '../../shared/money.ts';
import { iso } from '../../shared/time.ts';
import type { MatchMethod } from './reconciliation.rules.ts';
import type { Layout } from './statement-files.ts';
import type { StatementLineRow, StatementMatchRow, StatementRow } from './reconciliation.tables.ts';

/** The statement object of the API: one imported file and what it added. */
export function presentStatement(row: StatementRow) {
  return {
    id: row.id,
    layout: row.layout as Layout,
    filename: row.filename,
    account: row.account,
    first_date: row.first_date,
    last_date: row.last_date,
    line_count: row.line_count,
    added_count: row.added_count,
    matched_count: row.matched_count,
    imported_by: row.imported_by,
    is_test_mode: row.mode === 'test',
    created_at: iso(row.created_at),
  };
}
export type StatementObject = ReturnType<typeof presentStatement>;

/** A match as the API shows it on its line. */
export function presentMatch(match: StatementMatchRow) {
  return {
    payment_id: match.kind === 'payment' ? match.target_id : null,
    refund_id: match.kind === 'refund' ? match.target_id : null,
    method: match.method as MatchMethod,
    matched_by: match.matched_by,
    matched_at: iso(match.created_at),
  };
}

/** The statement line object of the API, with its match (null when none). */
export function presentLine(row: StatementLineRow, match: StatementMatchRow | undefined) {
  return {
    id: row.id,
    statement_id: row.statement_id,
    account: row.account || null,
    posted_on: row.posted_on,
    // Money in or out is the direction; the amount is positive, as every amount of the API is.
    amount: formatAmount(Math.abs(Number(row.amount_cents))),
    direction: Number(row.amount_cents) >= 0 ? ('credit' as const) : ('debit' as const),
    particulars: row.particulars,
    code: row.code,
    reference: row.reference,
    other_party: row.other_party,
    description: row.description,
    bank_transaction_id: row.bank_transaction_id || null,
    auto_match: row.auto_match === 1,
    match: match ? presentMatch(match) : null,
  };
}
export type StatementLineObject = ReturnType<typeof presentLine>;
