import { sha256Hex } from '../../shared/crypto.ts';
import { daysBetween } from '../../shared/zone.ts';

// The rules of reconciliation (docs/reconciliation.md) as plain functions: a statement line's
// identity, and which line pays which payment (or carries which refund). No I/O.

export const MATCH_METHODS = ['particulars', 'reference', 'amount_date', 'manual'] as const;
export type MatchMethod = (typeof MATCH_METHODS)[number];

/** A line and a payment or refund whose dates are this many days apart or fewer may be matched on amount and date. */
export const MATCH_WINDOW_DAYS = 3;
/** A successful payment no line shows after this many days is money not seen (the merchant may choose another). */
export const DEFAULT_UNSEEN_AFTER_DAYS = 3;

/** What makes two statement lines the same transaction: everything the bank shows of it. */
export type LineIdentity = {
  account: string;
  postedOn: string;
  amountCents: number;
  particulars: string;
  code: string;
  reference: string;
  otherParty: string;
  description: string;
  bankTransactionId: string;
};

/** The line's key: a hash of its identity, the same in every file that shows it. */
export function lineKeyOf(line: LineIdentity): string {
  return sha256Hex(
    JSON.stringify([
      line.account,
      line.postedOn,
      line.amountCents,
      line.particulars,
      line.code,
      line.reference,
      line.otherParty,
      line.description,
      line.bankTransactionId,
    ]),
  );
}

/**
 * Each line's occurrence among the identical lines of one file (1, 2, …, in file order): two
 * identical transactions on one day are two lines, and a later file showing the same two adds none.
 */
export function occurrencesOf(keys: readonly string[]): number[] {
  const seen = new Map<string, number>();
  return keys.map((key) => {
    const next = (seen.get(key) ?? 0) + 1;
    seen.set(key, next);
    return next;
  });
}

/** A statement line that may be matched: money in pays a payment, money out carries a refund. */
export type LineToMatch = {
  id: string;
  postedOn: string;
  amountCents: number;
  particulars: string;
  code: string;
  reference: string;
  otherParty: string;
  description: string;
};

/** A payment (kind payment, money in) or a refund (kind refund, money out) not matched yet. */
export type Candidate = {
  id: string;
  kind: 'payment' | 'refund';
  /** The local date the money moved (the payment completed, the refund was sent). */
  movedOn: string;
  /** What moved at the bank, always positive. */
  settledCents: number;
  /** The payment's V-… particulars; for a refund, the refunded payment's (its statement's code). */
  tonoParticulars: string;
  /** The merchant's reference, or '' when there is none. */
  reference: string;
};

export type ProposedMatch = { lineId: string; candidateId: string; kind: Candidate['kind']; method: MatchMethod };

const TONO_PARTICULARS = /V-[A-Z0-9]{6}/gi;

/** The V-… codes anywhere in what the line shows. */
export function tonoCodesIn(line: LineToMatch): Set<string> {
  const text = [line.particulars, line.code, line.reference, line.otherParty, line.description].join(' ');
  return new Set([...text.matchAll(TONO_PARTICULARS)].map((found) => found[0].toUpperCase()));
}

const norm = (value: string) => value.replace(/\s+/g, ' ').trim().toUpperCase();

function sameDirection(line: LineToMatch, candidate: Candidate): boolean {
  return candidate.kind === 'payment'
    ? line.amountCents === candidate.settledCents
    : line.amountCents === -candidate.settledCents;
}

const withinWindow = (line: LineToMatch, candidate: Candidate) =>
  Math.abs(daysBetween(candidate.movedOn, line.postedOn)) <= MATCH_WINDOW_DAYS;

/**
 * Which lines pay which payments (and carry which refunds), in three passes, each on what the
 * earlier passes left: the V-… particulars Tono put on the payment (anywhere in the line), then the
 * merchant's reference within the window, then the amount within the window. The amount must be
 * what moved in every pass. A pair is made only when it is the one choice on both sides: a line
 * with two candidates, or a candidate two lines could be, is left for the merchant. So no line is
 * ever paired twice, and no payment or refund either.
 */
export function proposeMatches(lines: readonly LineToMatch[], candidates: readonly Candidate[]): ProposedMatch[] {
  const matches: ProposedMatch[] = [];
  const usedLines = new Set<string>();
  const usedCandidates = new Set<string>();
  const passes: { method: MatchMethod; fits: (line: LineToMatch, candidate: Candidate) => boolean }[] = [
    {
      method: 'particulars',
      fits: (line, candidate) => tonoCodesIn(line).has(candidate.tonoParticulars.toUpperCase()),
    },
    {
      method: 'reference',
      fits: (line, candidate) =>
        candidate.reference.trim() !== '' &&
        withinWindow(line, candidate) &&
        [line.reference, line.particulars, line.code, line.otherParty, line.description].some((field) =>
          ` ${norm(field)} `.includes(` ${norm(candidate.reference)} `),
        ),
    },
    { method: 'amount_date', fits: withinWindow },
  ];
  for (const pass of passes) {
    const openLines = lines.filter((line) => !usedLines.has(line.id));
    const openCandidates = candidates.filter((candidate) => !usedCandidates.has(candidate.id));
    const fitsOf = new Map<string, Candidate[]>();
    const linesOf = new Map<string, number>();
    for (const line of openLines) {
      const fits = openCandidates.filter((candidate) => sameDirection(line, candidate) && pass.fits(line, candidate));
      fitsOf.set(line.id, fits);
      for (const candidate of fits) linesOf.set(candidate.id, (linesOf.get(candidate.id) ?? 0) + 1);
    }
    for (const line of openLines) {
      const fits = fitsOf.get(line.id)!;
      if (fits.length !== 1) continue;
      const candidate = fits[0]!;
      if (linesOf.get(candidate.id) !== 1) continue;
      matches.push({ lineId: line.id, candidateId: candidate.id, kind: candidate.kind, method: pass.method });
      usedLines.add(line.id);
      usedCandidates.add(candidate.id);
    }
  }
  return matches;
}

/** Whether a merchant may pair this line with this payment or refund by hand: the same direction of money. */
export function manualMatchRefusal(line: { amountCents: number }, kind: Candidate['kind']): string | null {
  if (kind === 'payment' && line.amountCents <= 0) return 'Only money in (a credit) can be matched to a payment';
  if (kind === 'refund' && line.amountCents >= 0) return 'Only money out (a debit) can be matched to a refund';
  return null;
}
