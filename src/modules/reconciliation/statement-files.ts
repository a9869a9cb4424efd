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
 * The date a DTPOSTED starts with: OFX's YYYYMMDD, or the ISO YYYY-MM-DD some banks write.
 */
const LEADING_DATE = /^(\d{4})(-?)(\d{2})\2(\d{2})/;
/**
 * The time after the date: HHMM, seconds optional, then any number of fractional digits (only
 * milliseconds count), with ISO's `T` and colons or OFX's bare digits; then the offset, as `rest`.
 */
const TIME_OF_DAY = /^(?:T|\s+)?(\d{2}):?(\d{2})(?::?(\d{2})(?:[.,](\d+))?)?\s*(?<rest>.*)$/i;
/**
 * The offset after the time. In OFX's brackets: hours, whole (±h, ±hh) or decimal (±h.d), or hours
 * and minutes (±hhmm, ±hh:mm, or ±h.mm as some banks write -3.30), with or without `:NAME`
 * ([+12:NZST], [-0500], [5.5:IST], [+12:00:NZST]); or a name alone for GMT ([GMT], [UTC], [Z]).
 * In ISO's form: Z, ±hh, ±hhmm or ±hh:mm. Nothing at all is GMT.
 */
const OFFSET =
  /^(?:\[\s*(?:(?<sign>[+-]?)(?<hours>\d{1,2})(?:\.(?<fraction>\d+)|:?(?<minutes>\d{2}))?\s*(?::[^\]]*)?|:?\s*(?:GMT|UTC|Z))\s*\]|(?<isoSign>[+-])(?<isoHours>\d{2})(?::?(?<isoMinutes>\d{2}))?|Z)?$/i;
/** No offset in use is further from GMT than this. */
const MAX_OFFSET_MINUTES = 14 * 60;
/** An offset read as minutes from GMT; 'impossible' beyond ±14 h; null when it cannot be told. */
type Offset = number | 'impossible' | null;

/**
 * The minutes from GMT an offset (the text after the time) says. One that cannot be read, or is
 * no whole quarter hour (as every offset in use is), is null: the line keeps the date as written.
 * A fraction after a dot is decimal hours (5.5, 5.75) unless that is no quarter hour and it reads as
 * minutes that are (-3.30 is 3 h 30 min, 5.45 is 5 h 45 min).
 */
function offsetMinutesOf(text: string): Offset {
  const parts = OFFSET.exec(text.trim())?.groups;
  if (!parts) return null;
  const sign = (parts.sign ?? parts.isoSign) === '-' ? -1 : 1;
  const hours = Number(parts.hours ?? parts.isoHours ?? 0);
  const minutes = parts.minutes ?? parts.isoMinutes;
  const fraction = parts.fraction;
  // At least this far from GMT however the fraction is read: any fraction at all takes 14 beyond.
  const leastMinutes =
    hours * 60 + (minutes !== undefined ? Number(minutes) : Math.ceil(Number(`0.${fraction ?? 0}`) * 60));
  if (leastMinutes > MAX_OFFSET_MINUTES) return 'impossible';
  let sinceHour: number | null = 0;
  if (minutes !== undefined) {
    if (Number(minutes) > 59) return 'impossible';
    sinceHour = Number(minutes);
  } else if (fraction !== undefined) {
    const quarters = Number(`0.${fraction}`) * 4;
    if (Number.isInteger(quarters)) sinceHour = quarters * 15;
    else sinceHour = fraction.length === 2 && Number(fraction) < 60 ? Number(fraction) : null;
  }
  if (sinceHour === null || sinceHour % 15 !== 0) return null;
  return sign * (hours * 60 + sinceHour);
}

/**
 * The day a DTPOSTED puts its line on. A date alone is that date. A date with a time is an
 * instant, at its offset or, with none, at GMT as OFX has it; its day is the date there in the
 * service time zone, the day a payment completed at that instant is counted on. A real date whose
 * time or offset cannot be read is that date, as the file wrote it; null for what is no date, time
 * or offset at all: a day not on the calendar, hour 24 or more, minutes or seconds past 59, an
 * offset beyond ±14 h.
 */
function postedDateOf(value: string, zone: string): string | null {
  const text = value.trim();
  const lead = LEADING_DATE.exec(text);
  if (!lead) return null;
  const [written, year, , month, day] = lead;
  const date = parseCalendarDate(`${year}${month}${day}`, ['yyyyMMdd']);
  if (!date) return null;
  const time = TIME_OF_DAY.exec(text.slice(written.length));
  if (!time) return date;
  const [, hour, minute, second = '0', fraction = ''] = time;
  const offsetMinutes = offsetMinutesOf(time.groups!.rest!);
  if (offsetMinutes === 'impossible') return null;
  const instantDate = localDateAtOffset(
    {
      year: Number(year),
      month: Number(month),
      day: Number(day),
      hour: Number(hour),
      minute: Number(minute),
      second: Number(second),
      millisecond: Number(fraction.slice(0, 3).padEnd(3, '0')),
    },
    offsetMinutes ?? 0,
    zone,
  );
  if (!instantDate) return null;
  return offsetMinutes === null ? date : instantDate;
}

// OFX 2.x is XML, and the extractor leaves its five predefined entities as written.
const XML_ENTITIES: Record<string, string> = { amp: '&', lt: '<', gt: '>', quot: '"', apos: "'" };
const decodeXml = (value: string) =>
  value.replace(/&(amp|lt|gt|quot|apos);/g, (_, name: string) => XML_ENTITIES[name]!);
