import { displayAmount } from '../../shared/money.ts';

// Receipts, tax invoices and credit notes as plain functions (docs/receipts.md): the GST number's
// check digit, GST in integer cents, which details a document of a value must show, and the
// document itself, built once when it is issued and shown the same in the email and the PDF.

// ---------------------------------------------------------------------------------------------
// The GST number: the supplier's IRD number, checked with Inland Revenue's modulus 11 check digit.

const PRIMARY_WEIGHTS = [3, 2, 7, 6, 5, 4, 3, 2] as const;
const SECONDARY_WEIGHTS = [7, 4, 3, 2, 5, 2, 7, 6] as const;
/** Inland Revenue issues numbers from 10-000-000 to 150-000-000. */
const LOWEST = 10_000_000;
const HIGHEST = 150_000_000;

/** The digits of a GST number as typed ("49-091-850", "49 091 850", "049091850"), or null when it has other characters. */
export function gstDigitsOf(input: string): string | null {
  const compact = input.trim().replace(/[\s-]/g, '');
  if (!/^[0-9]{8,9}$/.test(compact)) return null;
  // An 8-digit number is sometimes written with a leading zero.
  return compact.length === 9 && compact.startsWith('0') ? compact.slice(1) : compact;
}

function checkDigit(base: string, weights: readonly number[]): number {
  let sum = 0;
  for (let i = 0; i < 8; i++) sum += Number(base[i]) * weights[i]!;
  const remainder = sum % 11;
  return remainder === 0 ? 0 : 11 - remainder;
}

/** Whether 8 or 9 digits are a valid IRD (GST) number: in range, and the last digit is its check digit. */
export function isValidIrdNumber(digits: string): boolean {
  if (!/^[0-9]{8,9}$/.test(digits)) return false;
  const value = Number(digits);
  if (value < LOWEST || value > HIGHEST) return false;
  // The base is the number without its check digit, padded to 8 digits.
  const base = digits.slice(0, -1).padStart(8, '0');
  const given = Number(digits.at(-1));
  let check = checkDigit(base, PRIMARY_WEIGHTS);
  if (check === 10) check = checkDigit(base, SECONDARY_WEIGHTS);
  return check !== 10 && check === given;
}

/** A GST number as Inland Revenue writes it: 49-091-850, 136-410-132. */
export function formatGstNumber(digits: string): string {
  const head = digits.length === 9 ? digits.slice(0, 3) : digits.slice(0, 2);
  const rest = digits.slice(head.length);
  return `${head}-${rest.slice(0, 3)}-${rest.slice(3)}`;
}

// ---------------------------------------------------------------------------------------------
// GST at 15 %, exact in integer cents, rounded half up.

/** The GST in a GST-inclusive total: total × 3/23, to the nearest cent (half a cent up). */
export function gstInInclusive(totalCents: number): number {
  return Math.floor((6 * totalCents + 23) / 46);
}

/** The GST on a GST-exclusive price: price × 15 %, to the nearest cent (half a cent up). */
export function gstOnExclusive(exclusiveCents: number): number {
  return Math.floor((30 * exclusiveCents + 100) / 200);
}

/** A total the payer paid, split into the price before GST and the GST in it. */
export function splitInclusive(totalCents: number): { exclusiveCents: number; gstCents: number } {
  const gstCents = gstInInclusive(totalCents);
  return { exclusiveCents: totalCents - gstCents, gstCents };
}

/**
 * A credit note of `cents`, split into the price before GST and the GST it credits, when the
 * payment's earlier credit notes credited `creditedBeforeCents`: the GST is what the GST in all
 * that is credited grows by with this one. Rounding each credit note's own GST would drift from
 * the receipt's (two refunds of $0.50 would credit $0.07 each against a receipt's $0.13); this
 * way a payment's credit notes never credit more GST than its receipt shows, and exactly that
 * once it is refunded in full.
 */
export function splitCredit(creditedBeforeCents: number, cents: number): { exclusiveCents: number; gstCents: number } {
  const gstCents = gstInInclusive(creditedBeforeCents + cents) - gstInInclusive(creditedBeforeCents);
  return { exclusiveCents: cents - gstCents, gstCents };
}

// ---------------------------------------------------------------------------------------------
// What a document must show for the value of the supply (section 19K of the Goods and Services Tax
// Act 1985, "taxable supply information"; docs/receipts.md).

export const BANDS = ['up_to_200', 'up_to_1000', 'over_1000'] as const;
export type Band = (typeof BANDS)[number];

/** $200 and $1,000, in cents: a supply of exactly $200 is in the lowest band, of exactly $1,000 in the middle one. */
export const BAND_LIMITS = { up_to_200: 20_000, up_to_1000: 100_000 } as const;

export function bandOf(totalCents: number): Band {
  if (totalCents <= BAND_LIMITS.up_to_200) return 'up_to_200';
  if (totalCents <= BAND_LIMITS.up_to_1000) return 'up_to_1000';
  return 'over_1000';
}

export type RequiredField = 'supplier' | 'date' | 'description' | 'total' | 'gst_number' | 'gst' | 'buyer';

/** What taxable supply information of a value must show, at least. */
export function requiredFields(band: Band): RequiredField[] {
  const always: RequiredField[] = ['supplier', 'date', 'description', 'total'];
  if (band === 'up_to_200') return always;
  if (band === 'up_to_1000') return [...always, 'gst_number', 'gst'];
  return [...always, 'gst_number', 'gst', 'buyer'];
}

/** Whether the hosted page must ask for the buyer's name and address: over $1,000, from a merchant issuing tax invoices. */
export function needsBuyerDetails(totalCents: number, issuesTaxInvoices: boolean): boolean {
  return issuesTaxInvoices && bandOf(totalCents) === 'over_1000';
}

// ---------------------------------------------------------------------------------------------
// The document.

export type DocumentKind = 'receipt' | 'credit_note';

export function documentNumber(kind: DocumentKind, number: number): string {
  return `${kind === 'receipt' ? 'R' : 'CN'}-${String(number).padStart(6, '0')}`;
}

export type TaxSettings = {
  legalName: string;
  /** Digits only; null when not registered for GST. */
  gstNumber: string | null;
  pricesIncludeGst: boolean;
  issueTaxInvoices: boolean;
  emailReceipts: boolean;
};

/** Whether a merchant's documents are tax invoices: it says so and has a GST number. */
export const issuesTaxInvoices = (settings: TaxSettings | null): boolean =>
  settings?.issueTaxInvoices === true && settings.gstNumber !== null;

export type Buyer = { name: string; address: string[] };

export type DocumentInput = {
  kind: DocumentKind;
  number: number;
  /** The date as the document prints it (the issue date, in New Zealand). */
  date: string;
  /** The merchant's name in Tono, for a merchant without tax settings. */
  merchantName: string;
  settings: TaxSettings | null;
  description: string;
  totalCents: number;
  buyer: Buyer | null;
  /** What the payer's bank statement shows. */
  statement: string;
  paymentId: string;
  /** A credit note's receipt: its number and date. */
  original: { number: string; date: string } | null;
  /** A credit note's: what the payment's earlier credit notes credited, in cents (0, or left out, for its first). */
  creditedBeforeCents?: number;
  reason: string | null;
  test: boolean;
};

export type DocumentLine = { label: string; value: string };

/** What a document shows, frozen when it is issued: the email and the PDF both print exactly these. */
export type ReceiptDocument = {
  kind: DocumentKind;
  /** "Tax invoice", "Receipt" or "Credit note". */
  title: string;
  number: string;
  date: string;
  band: Band;
  supplier: string;
  gstNumber: string | null;
  /** The figures, in order, as label and value. */
  lines: DocumentLine[];
  /** Sentences under the figures. */
  notes: string[];
  totalCents: number;
  gstCents: number | null;
  /** Fields the band requires that this document lacks (then it is not titled a tax invoice). */
  missing: RequiredField[];
  test: boolean;
};

/** Builds a document from what was known when it was issued. */
export function buildDocument(input: DocumentInput): ReceiptDocument {
  const { settings } = input;
  const taxable = issuesTaxInvoices(settings);
  const band = bandOf(input.totalCents);
  const supplier = settings?.legalName ?? input.merchantName;
  const gstNumber = taxable ? formatGstNumber(settings!.gstNumber!) : null;
  const buyer = band === 'over_1000' && input.buyer ? input.buyer : null;
  const credit = input.kind === 'credit_note';
  const split = credit
    ? splitCredit(input.creditedBeforeCents ?? 0, input.totalCents)
    : splitInclusive(input.totalCents);

  const shown = new Set<RequiredField>(['supplier', 'date', 'description', 'total']);
  if (taxable) shown.add('gst_number').add('gst');
  if (buyer) shown.add('buyer');
  const missing = requiredFields(band).filter((field) => !shown.has(field));

  const lines: DocumentLine[] = [
    {
      label: credit ? 'Credit note number' : taxable && missing.length === 0 ? 'Invoice number' : 'Receipt number',
      value: documentNumber(input.kind, input.number),
    },
    { label: 'Date', value: input.date },
    { label: 'Supplier', value: supplier },
  ];
  if (gstNumber) lines.push({ label: 'GST number', value: gstNumber });
  if (buyer) {
    lines.push({ label: 'Buyer', value: buyer.name });
    if (buyer.address.length > 0) lines.push({ label: 'Buyer’s address', value: buyer.address.join(', ') });
  }
  if (input.original) lines.push({ label: 'Credits', value: `${input.original.number} of ${input.original.date}` });
  lines.push({ label: 'Description', value: input.description });
  if (input.reason) lines.push({ label: 'Reason', value: input.reason });

  const money = (cents: number) => (credit ? `-${displayAmount(cents)}` : displayAmount(cents));
  if (!taxable) {
    lines.push({ label: credit ? 'Total credited' : 'Total paid', value: money(input.totalCents) });
  } else if (settings!.pricesIncludeGst) {
    lines.push({
      label: credit ? 'Total credited (GST inclusive)' : 'Total (GST inclusive)',
      value: money(input.totalCents),
    });
    lines.push({ label: 'Includes GST of', value: money(split.gstCents) });
  } else {
    lines.push({ label: 'Price excluding GST', value: money(split.exclusiveCents) });
    lines.push({ label: 'GST at 15%', value: money(split.gstCents) });
    lines.push({
      label: credit ? 'Total credited including GST' : 'Total including GST',
      value: money(input.totalCents),
    });
  }
  lines.push({ label: credit ? 'Paid back to' : 'Paid by', value: 'Bank transfer' });
  lines.push({ label: 'Bank statement', value: input.statement });
  lines.push({ label: 'Payment', value: input.paymentId });

  const notes: string[] = [];
  if (taxable && missing.length > 0)
    notes.push(`A tax invoice for more than $1,000 shows the buyer’s name and address: ask ${supplier} for one.`);
  if (input.test) notes.push('Test mode: no money moved.');

  return {
    kind: input.kind,
    title: credit ? 'Credit note' : taxable && missing.length === 0 ? 'Tax invoice' : 'Receipt',
    number: documentNumber(input.kind, input.number),
    date: input.date,
    band,
    supplier,
    gstNumber,
    lines,
    notes,
    totalCents: input.totalCents,
    gstCents: taxable ? split.gstCents : null,
    missing,
    test: input.test,
  };
}

/** The document as plain text, line by line: what the PDF prints and the email's text part carries. */
export function documentText(doc: ReceiptDocument): string[] {
  return [doc.title, ...doc.lines.map((line) => `${line.label}: ${line.value}`), ...doc.notes];
}
