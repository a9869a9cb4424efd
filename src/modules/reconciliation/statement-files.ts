import { parse as parseCsv, CsvError } from 'csv-parse/sync';
import { Ofx } from 'ofx-data-extractor';
import { parseDecimalCents } from '../../shared/money.ts';
import { localDateAtOffset, parseCalendarDate } from '../../shared/zone.ts';
import type { LineIdentity } from './reconciliation.rules.ts';

// Reading a bank statement file: the CSV exports of the main NZ banks' internet banking, each
// recognised from its header row, and OFX (1.x SGML and 2.x XML). csv-parse reads the CSV and
// ofx-data-extractor the OFX; this file only maps each layout's columns to one line shape and
// checks every line, so a file is refused whole, with the line and what is wrong, before anything
// is kept (docs/reconciliation.md).

export const LAYOUTS = ['anz', 'asb', 'bnz', 'westpac', 'kiwibank', 'ofx'] as const;
export type Layout = (typeof LAYOUTS)[number];

/** One transaction as the statement shows it. Amounts are cents, positive for money in. */
export type ParsedLine = LineIdentity & {
  /** The line of the file it is on (1-based); for OFX, the transaction's position in the file. */
  fileLine: number;
};

export type ParsedStatement = { layout: Layout; account: string | null; lines: ParsedLine[] };

/** Why a file is refused: the line (null for the file as a whole) and what is wrong there. */
export class StatementFileError extends Error {
  readonly line: number | null;
  readonly reason: 'unknown_layout' | 'malformed' | 'empty';
  constructor(reason: StatementFileError['reason'], line: number | null, message: string) {
    super(message);
    this.reason = reason;
    this.line = line;
  }
}

type Row = Record<string, string>;

type CsvLayout = {
  layout: Exclude<Layout, 'ofx'>;
  label: string;
  /** The header row, as the bank writes it (compared without case or surrounding spaces). */
  columns: readonly string[];
  dateColumn: string;
  dateFormats: readonly string[];
  /** The line's fields from its row; `amount` is the text of its amount. */
  read: (row: Row) => Omit<ParsedLine, 'fileLine' | 'postedOn' | 'amountCents' | 'account'> & {
    amount: string;
    account: string;
  };
};

const DAY_FIRST = ['dd/MM/yyyy', 'd/M/yyyy', 'dd/MM/yy', 'd/M/yy'];

const CSV_LAYOUTS: readonly CsvLayout[] = [
  {
    layout: 'anz',
    label: 'ANZ (Type, Details, Particulars, Code, Reference, Amount, Date, ForeignCurrencyAmount, ConversionCharge)',
    columns: [
      'Type',
      'Details',
      'Particulars',
      'Code',
      'Reference',
      'Amount',
      'Date',
      'ForeignCurrencyAmount',
      'ConversionCharge',
    ],
    dateColumn: 'date',
    dateFormats: DAY_FIRST,
    read: (row) => ({
      amount: row.amount!,
      particulars: row.particulars!,
      code: row.code!,
      reference: row.reference!,
      otherParty: row.details!,
      description: row.type!,
      bankTransactionId: '',
      account: '',
    }),
  },
  {
    layout: 'asb',
    label: 'ASB (lines about the account, then Date, Unique Id, Tran Type, Cheque Number, Payee, Memo, Amount)',
    columns: ['Date', 'Unique Id', 'Tran Type', 'Cheque Number', 'Payee', 'Memo', 'Amount'],
    dateColumn: 'date',
    dateFormats: ['yyyy/MM/dd', 'yyyy/M/d', ...DAY_FIRST],
    read: (row) => ({
      amount: row.amount!,
      particulars: '',
      code: '',
      reference: '',
      otherParty: row.payee!,
      description: [row['tran type'], row.memo].filter(Boolean).join(' '),
      bankTransactionId: row['unique id']!,
      account: '',
    }),
  },
  {
    layout: 'bnz',
    label:
      'BNZ (Date, Amount, Payee, Particulars, Code, Reference, Tran Type, This Party Account, Other Party Account, Serial, Transaction Code, Batch Number, Originating Bank/Branch, Processed Date)',
    columns: [
      'Date',
      'Amount',
      'Payee',
      'Particulars',
      'Code',
      'Reference',
      'Tran Type',
      'This Party Account',
      'Other Party Account',
      'Serial',
      'Transaction Code',
      'Batch Number',
      'Originating Bank/Branch',
      'Processed Date',
    ],
    dateColumn: 'date',
    dateFormats: DAY_FIRST,
    read: (row) => ({
      amount: row.amount!,
      particulars: row.particulars!,
      code: row.code!,
      reference: row.reference!,
      otherParty: row.payee!,
      description: row['tran type']!,
      bankTransactionId: '',
      account: row['this party account']!,
    }),
  },
  {
    layout: 'westpac',
    label: 'Westpac (Date, Amount, Other Party, Description, Reference, Particulars, Analysis Code)',
    columns: ['Date', 'Amount', 'Other Party', 'Description', 'Reference', 'Particulars', 'Analysis Code'],
    dateColumn: 'date',
    dateFormats: DAY_FIRST,
    read: (row) => ({
      amount: row.amount!,
      particulars: row.particulars!,
      code: row['analysis code']!,
      reference: row.reference!,
      otherParty: row['other party']!,
      description: row.description!,
      bankTransactionId: '',
      account: '',
    }),
  },
  {
    layout: 'kiwibank',
    label:
      'Kiwibank (Account number, Date, Memo/Description, Source Code (payment type), TP ref, TP part, TP code, OP ref, OP part, OP code, OP name, OP Bank Account Number, Amount (credit), Amount (debit), Amount, Balance)',
    columns: [
      'Account number',
      'Date',
      'Memo/Description',
      'Source Code (payment type)',
      'TP ref',
      'TP part',
      'TP code',
      'OP ref',
      'OP part',
      'OP code',
      'OP name',
      'OP Bank Account Number',
      'Amount (credit)',
      'Amount (debit)',
      'Amount',
      'Balance',
    ],
    dateColumn: 'date',
    dateFormats: ['dd-MM-yyyy', 'd-M-yyyy', 'd MMM yyyy', ...DAY_FIRST],
    read: (row) => ({
      amount: row.amount!,
      // What the payer wrote for this account (this party's particulars, code and reference).
      particulars: row['tp part']!,
      code: row['tp code']!,
      reference: row['tp ref']!,
      otherParty: row['op name']!,
      description: [row['memo/description'], row['op part'], row['op code'], row['op ref']]
        .map((part) => part?.replace(/\s*;\s*$/, ''))
        .filter(Boolean)
        .join(' '),
      bankTransactionId: '',
      account: row['account number']!,
    }),
  },
];

/** The layouts a file may have, as an error lists them. */
export const ACCEPTED_LAYOUTS: readonly string[] = [
  ...CSV_LAYOUTS.map((layout) => layout.label),
  'OFX (1.x SGML or 2.x XML, as exported for accounting software)',
];

/** How many records before the header row a CSV file may have (ASB's lines about the account). */
const MAX_PREAMBLE = 12;

const clean = (value: string | undefined) => (value ?? '').replace(/\s+/g, ' ').trim();
const headerKey = (value: string) => clean(value).toLowerCase();

/**
 * Reads a statement file: its layout, the account it is of (when it says), and every line, checked.
 * `zone` is the service time zone, whose dates an OFX line stamped with a time is put on.
 */
export function parseStatementFile(content: string, zone: string): ParsedStatement {
  const text = content.replace(/^\uFEFF/, '');
  if (text.trim() === '') throw new StatementFileError('empty', null, 'The file is empty');
  if (/^\s*(OFXHEADER|<\?xml|<\?OFX|<OFX>)/i.test(text)) return parseOfx(text, zone);
  return parseBankCsv(text);
}

function parseBankCsv(text: string): ParsedStatement {
  let records: { record: string[]; info: { lines: number } }[];
  try {
    records = parseCsv(text, {
      bom: true,
      relax_column_count: true,
      skip_empty_lines: true,
      relax_quotes: false,
      info: true,
    }) as unknown as { record: string[]; info: { lines: number } }[];
  } catch (error) {
    if (error instanceof CsvError) {
      const line = typeof (error as CsvError & { lines?: number }).lines === 'number' ? (error as any).lines : null;
      throw new StatementFileError('malformed', line, `The file is not valid CSV: ${error.message}`);
    }
    throw error;
  }
  let headerAt = -1;
  let layout: CsvLayout | undefined;
  for (let index = 0; index < Math.min(records.length, MAX_PREAMBLE + 1) && !layout; index += 1) {
    const keys = records[index]!.record.map(headerKey);
    while (keys.length > 0 && keys[keys.length - 1] === '') keys.pop();
    layout = CSV_LAYOUTS.find(
      (candidate) =>
        candidate.columns.length === keys.length &&
        candidate.columns.every((column, at) => column.toLowerCase() === keys[at]),
    );
    if (layout) headerAt = index;
  }
  if (!layout)
    throw new StatementFileError(
      'unknown_layout',
      null,
      `The file's header row is not one of the layouts Tono reads: ${ACCEPTED_LAYOUTS.join('; ')}`,
    );
  const preambleAccount =
    layout.layout === 'asb' ? asbAccountOf(records.slice(0, headerAt).map((r) => r.record)) : null;
  const keys = layout.columns.map((column) => column.toLowerCase());
  const lines: ParsedLine[] = [];
  for (const { record, info } of records.slice(headerAt + 1)) {
    const fileLine = info.lines;
    // A line of spaces or bare commas (some exports end with one) is no transaction.
    if (record.every((cell) => cell.trim() === '')) continue;
    const cells = [...record];
    // A trailing empty cell or two (a comma at the end of the line) is not a column.
    while (cells.length > keys.length && cells[cells.length - 1]!.trim() === '') cells.pop();
    if (cells.length !== keys.length)
      throw new StatementFileError(
        'malformed',
        fileLine,
        `Line ${fileLine} has ${cells.length} columns where the ${layout.layout.toUpperCase()} header has ${keys.length}`,
      );
    const row: Row = Object.fromEntries(keys.map((key, at) => [key, clean(cells[at])]));
    const fields = layout.read(row);
    const postedOn = parseCalendarDate(row[layout.dateColumn]!, layout.dateFormats);
    if (!postedOn)
      throw new StatementFileError(
        'malformed',
        fileLine,
        `Line ${fileLine}: the date "${row[layout.dateColumn]}" is not a date in the form ${layout.dateFormats[0]}`,
      );
    const amountCents = parseDecimalCents(fields.amount);
    if (amountCents === null)
      throw new StatementFileError(
        'malformed',
        fileLine,
        `Line ${fileLine}: the amount "${fields.amount}" is not an amount (digits, at most two decimals, a minus sign for money out)`,
      );
    const { amount: _amount, ...rest } = fields;
    lines.push({ ...rest, fileLine, postedOn, amountCents, account: rest.account || preambleAccount || '' });
  }
  if (lines.length === 0) throw new StatementFileError('empty', null, 'The file has a header row but no transactions');
  const accounts = new Set(lines.map((line) => line.account).filter(Boolean));
  return { layout: layout.layout, account: preambleAccount ?? (accounts.size === 1 ? [...accounts][0]! : null), lines };
}

/** ASB writes the account above the header: "Bank 12; Branch 3405; Account 0123456-50 (Streamline)". */
function asbAccountOf(preamble: string[][]): string | null {
  for (const record of preamble) {
    const match = /Bank (\d{2}); Branch (\d{4}); Account (\d{7})-(\d{2,3})/.exec(record.join(','));
    if (match) return `${match[1]}-${match[2]}-${match[3]}-${match[4]}`;
  }
  return null;
}

function parseOfx(file: string, zone: string): ParsedStatement {
  const { text, posted } = setAsidePostedDates(file);
  let transactions: Record<string, string>[];
  let account: string | null = null;
  try {
    const ofx = new Ofx(text);
    transactions = ofx.getBankTransferList() as unknown as Record<string, string>[];
    const json = ofx.toJson() as any;
    const from = json?.OFX?.BANKMSGSRSV1?.STMTTRNRS?.STMTRS?.BANKACCTFROM;
    if (from?.ACCTID) account = [from.BANKID, from.BRANCHID, from.ACCTID].filter(Boolean).join('-');
  } catch (error) {
    throw new StatementFileError('malformed', null, `The OFX file cannot be read: ${(error as Error).message}`);
  }
  if (!Array.isArray(transactions) || transactions.length === 0)
    throw new StatementFileError('empty', null, 'The OFX file has no bank transactions (STMTTRN)');
  const lines = transactions.map((transaction, index): ParsedLine => {
    const position = index + 1;
    const dtposted = postedValueOf(transaction.DTPOSTED, posted);
    const postedOn = postedDateOf(dtposted, zone);
    if (!postedOn)
      throw new StatementFileError(
        'malformed',
        position,
        `Transaction ${position}: DTPOSTED "${dtposted}" is not a date`,
      );
    const amountCents = parseDecimalCents(String(transaction.TRNAMT ?? ''));
    if (amountCents === null)
      throw new StatementFileError(
        'malformed',
        position,
        `Transaction ${position}: TRNAMT "${transaction.TRNAMT ?? ''}" is not an amount`,
      );
    return {
      fileLine: position,
      postedOn,
      amountCents,
      particulars: '',
      code: '',
      reference: clean(transaction.REFNUM),
      otherParty: decodeXml(clean(transaction.NAME)),
      description: decodeXml(clean(transaction.MEMO)),
      bankTransactionId: clean(transaction.FITID),
      account: account ?? '',
    };
  });
  return { layout: 'ofx', account, lines };
}

const POSTED_MARK = 'tono-dtposted-';

/**
 * Every DTPOSTED of the file set aside, each replaced by its index in `posted`, which the extractor
 * passes through as it is. The extractor would write a DTPOSTED as its date alone, dropping the
 * time and offset that put 20270831120000[0:GMT] on 1 September in New Zealand.
 */
function setAsidePostedDates(file: string): { text: string; posted: string[] } {
  const posted: string[] = [];
  const text = file.replace(/(<DTPOSTED>)([^<\r\n]*)/g, (_, tag: string, value: string) => {
    posted.push(value.trim());
    return `${tag}${POSTED_MARK}${posted.length - 1}`;
  });
  return { text, posted };
}

/** A transaction's DTPOSTED as the file wrote it. */
function postedValueOf(marked: string | undefined, posted: readonly string[]): string {
  const text = String(marked ?? '');
  return text.startsWith(POSTED_MARK) ? (posted[Number(text.slice(POSTED_MARK.length))] ?? '') : text;
}

/**
 * OFX's date-time: YYYYMMDD, then optionally HHMM with optional seconds and milliseconds, then
 * optionally the offset from GMT in hours, with the zone's name: [+12:NZST], [-5:EST], [5.5:IST].
 */
const OFX_DATE_TIME =
  /^(\d{4})(\d{2})(\d{2})(?:(\d{2})(\d{2})(?:(\d{2})(?:\.(\d{1,3}))?)?)?\s*(?:\[([+-]?\d{1,2}(?:\.\d{1,2})?)(?::[^\]]*)?\])?$/;
/** No offset in use is further from GMT than this, and every one is a whole quarter hour. */
const MAX_OFFSET_MINUTES = 14 * 60;
const isOffsetInUse = (minutes: number) => minutes % 15 === 0 && Math.abs(minutes) <= MAX_OFFSET_MINUTES;

/**
 * The day a DTPOSTED puts its line on. A date alone is that date. A date with a time is an
 * instant, at its offset or, with none, at GMT as OFX has it; its day is the date there in the
 * service time zone, the day a payment completed at that instant is counted on.
 */
function postedDateOf(value: string, zone: string): string | null {
  const date = parseCalendarDate(value, ['yyyyMMdd', 'yyyy-MM-dd']);
  if (date) return date;
  const parts = OFX_DATE_TIME.exec(value);
  if (!parts) return null;
  const [, year, month, day, hour, minute, second = '0', fraction = '', offsetHours = '0'] = parts;
  if (hour === undefined) return parseCalendarDate(`${year}${month}${day}`, ['yyyyMMdd']);
  const offsetMinutes = Number(offsetHours) * 60;
  if (!isOffsetInUse(offsetMinutes)) return null;
  return localDateAtOffset(
    {
      year: Number(year),
      month: Number(month),
      day: Number(day),
      hour: Number(hour),
      minute: Number(minute),
      second: Number(second),
      millisecond: Number(fraction.padEnd(3, '0')),
    },
    offsetMinutes,
    zone,
  );
}

// OFX 2.x is XML, and the extractor leaves its five predefined entities as written.
const XML_ENTITIES: Record<string, string> = { amp: '&', lt: '<', gt: '>', quot: '"', apos: "'" };
const decodeXml = (value: string) =>
  value.replace(/&(amp|lt|gt|quot|apos);/g, (_, name: string) => XML_ENTITIES[name]!);
