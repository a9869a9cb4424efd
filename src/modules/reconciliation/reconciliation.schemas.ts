import { Type, type Static } from 'typebox';
import { AmountObject, Nullable, Timestamp } from '../../http/schemas.ts';
import { idPattern } from '../../shared/ids.ts';
import { listQueryFields } from '../../shared/pagination.ts';
import { LAYOUTS } from './statement-files.ts';
import { MATCH_METHODS } from './reconciliation.rules.ts';

/** The most a statement file may hold, in characters (about a year of a busy account). */
export const STATEMENT_MAX_CHARS = 2_000_000;
/** The largest request body POST /v1/statements takes: the file, JSON-escaped, and its name. */
export const STATEMENT_BODY_LIMIT = 4_200_000;

const DateOnly = (description: string) =>
  Type.String({ format: 'date', description, 'x-expected': 'a date, YYYY-MM-DD' });

export const ImportStatementBody = Type.Object(
  {
    content: Type.String({
      minLength: 1,
      maxLength: STATEMENT_MAX_CHARS,
      description:
        'The statement file as exported by your internet banking, as text: an ANZ, ASB, BNZ, Westpac or Kiwibank CSV, or OFX (docs/reconciliation.md)',
    }),
    filename: Type.Optional(Type.String({ maxLength: 200, description: 'The file’s name, for your records' })),
  },
  { additionalProperties: false },
);
export type ImportStatementBody = Static<typeof ImportStatementBody>;

export const StatementObject = Type.Object(
  {
    id: Type.String({ examples: ['stmt_01JD2Q8Z7M3V4K5N6P7R8S9T0V'] }),
    layout: Type.Enum(LAYOUTS, { description: 'The bank layout the file was read as' }),
    filename: Nullable(Type.String()),
    account: Nullable(Type.String({ description: 'The account the file is of, when it says' })),
    first_date: Type.String({ format: 'date' }),
    last_date: Type.String({ format: 'date' }),
    line_count: Type.Integer({ description: 'Transactions in the file' }),
    added_count: Type.Integer({
      description: 'Transactions the file added: the others were known from an earlier file',
    }),
    matched_count: Type.Integer({ description: 'Lines matched automatically when it was imported' }),
    imported_by: Type.String(),
    is_test_mode: Type.Boolean(),
    created_at: Timestamp,
  },
  { title: 'Statement' },
);

export const ImportStatementReply = Type.Object({
  statement: StatementObject,
  already_imported: Type.Boolean({
    description: 'True when this very file was imported before: nothing changed, and this is that statement',
  }),
});
export const StatementEnvelope = Type.Object({ statement: StatementObject });
export const StatementList = Type.Object({ statements: Type.Array(StatementObject), has_more: Type.Boolean() });
export const ListStatementsQuery = Type.Object(listQueryFields('stmt'), { additionalProperties: false });
export type ListStatementsQuery = Static<typeof ListStatementsQuery>;

export const MatchObject = Type.Object({
  payment_id: Nullable(Type.String()),
  refund_id: Nullable(Type.String()),
  method: Type.Enum(MATCH_METHODS),
  matched_by: Type.String({ description: '`tono` for an automatic match, else who matched it by hand' }),
  matched_at: Timestamp,
});

export const StatementLineObject = Type.Object(
  {
    id: Type.String({ examples: ['stline_01JD2Q8Z7M3V4K5N6P7R8S9T0V'] }),
    statement_id: Type.String({ description: 'The statement that first brought this line' }),
    account: Nullable(Type.String()),
    posted_on: Type.String({ format: 'date' }),
    amount: AmountObject,
    direction: Type.Enum(['credit', 'debit'], {
      description: 'Money in (credit) or out (debit); the amount is always positive',
    }),
    particulars: Type.String(),
    code: Type.String(),
    reference: Type.String(),
    other_party: Type.String(),
    description: Type.String(),
    bank_transaction_id: Nullable(Type.String()),
    auto_match: Type.Boolean({ description: 'False once unmatched by hand: automatic matching leaves it alone' }),
    match: Nullable(MatchObject),
  },
  { title: 'StatementLine' },
);
export const StatementLineEnvelope = Type.Object({ statement_line: StatementLineObject });
export const StatementLineList = Type.Object({
  statement_lines: Type.Array(StatementLineObject),
  has_more: Type.Boolean(),
});
export const ListStatementLinesQuery = Type.Object(
  {
    ...listQueryFields('stline'),
    statement_id: Type.Optional(
      Type.String({ pattern: idPattern('statement'), description: 'Only the lines it brought' }),
    ),
    direction: Type.Optional(Type.Enum(['credit', 'debit'])),
    matched: Type.Optional(Type.Boolean()),
    from: Type.Optional(DateOnly('Lines dated on or after')),
    to: Type.Optional(DateOnly('Lines dated on or before')),
  },
  { additionalProperties: false },
);
export type ListStatementLinesQuery = Static<typeof ListStatementLinesQuery>;

export const MatchLineBody = Type.Object(
  {
    payment_id: Type.Optional(
      Type.String({ pattern: idPattern('payment'), description: 'A successful payment (for money in)' }),
    ),
    refund_id: Type.Optional(Type.String({ pattern: idPattern('refund'), description: 'A refund (for money out)' })),
  },
  { additionalProperties: false },
);
export type MatchLineBody = Static<typeof MatchLineBody>;

export const ReconciliationQuery = Type.Object(
  {
    from: Type.Optional(DateOnly('The first day (default: 30 days before to)')),
    to: Type.Optional(DateOnly('The last day (default: today)')),
    unseen_after_days: Type.Optional(
      Type.Integer({
        minimum: 0,
        maximum: 60,
        description: 'A successful payment no statement shows this many days after it is money not seen (default 3)',
      }),
    ),
  },
  { additionalProperties: false },
);
export type ReconciliationQuery = Static<typeof ReconciliationQuery>;

const PaymentNotSeen = Type.Object({
  payment_id: Type.String(),
  request_id: Type.String(),
  completed_on: Type.String({ format: 'date' }),
  settled_amount: AmountObject,
  particulars: Type.String(),
  code: Type.String(),
  reference: Nullable(Type.String()),
  days: Type.Integer({ description: 'Days since it succeeded' }),
});

const DayTotals = Type.Object({
  date: Type.String({ format: 'date' }),
  statement_credits: AmountObject,
  matched_credits: AmountObject,
  unmatched_credits: AmountObject,
  tono_successful: AmountObject,
  tono_not_seen: AmountObject,
});

export const ReconciliationReply = Type.Object(
  {
    from: Type.String({ format: 'date' }),
    to: Type.String({ format: 'date' }),
    unseen_after_days: Type.Integer(),
    matched_count: Type.Integer(),
    money_not_seen: Type.Array(PaymentNotSeen, { description: 'Successful payments no statement line shows yet' }),
    unmatched_credits: Type.Array(StatementLineObject, { description: 'Money in that matches no payment' }),
    days: Type.Array(DayTotals),
    truncated: Type.Boolean({ description: 'True when the range holds more than the view shows: narrow it' }),
  },
  { title: 'Reconciliation' },
);
