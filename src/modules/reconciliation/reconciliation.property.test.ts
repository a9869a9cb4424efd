import { test } from 'node:test';
import assert from 'node:assert/strict';
import fc from 'fast-check';
import { addDays, daysBetween } from '../../shared/zone.ts';
import {
  lineKeyOf,
  MATCH_WINDOW_DAYS,
  occurrencesOf,
  proposeMatches,
  tonoCodesIn,
  type Candidate,
  type LineToMatch,
} from './reconciliation.rules.ts';

// The matching rules on random statements and payments: few amounts, dates and codes, so that
// lines compete for the same payments and payments for the same lines.

const day = fc.integer({ min: 0, max: 10 }).map((offset) => addDays('2026-11-01', offset));
const cents = fc.constantFrom(1, 250, 1000);
const code = fc.constantFrom('V-AAAAAA', 'V-BBBBBB', 'V-CCCCCC', 'V-DDDDDD');
const reference = fc.constantFrom('', 'INV-1', 'INV-2');

const line = (id: number) =>
  fc
    .record({
      postedOn: day,
      amountCents: fc.tuple(cents, fc.boolean()).map(([value, out]) => (out ? -value : value)),
      particulars: fc.oneof(code, fc.constant('')),
      code: fc.constantFrom('', 'TONO'),
      reference,
      otherParty: fc.constant('A Payer'),
      description: fc.oneof(
        code.map((c) => `D/C ${c}`),
        fc.constant(''),
      ),
    })
    .map((fields): LineToMatch => ({ id: `line_${id}`, ...fields }));

const candidate = (id: number) =>
  fc
    .record({
      kind: fc.constantFrom('payment' as const, 'refund' as const),
      movedOn: day,
      settledCents: cents,
      tonoParticulars: code,
      reference,
    })
    .map((fields): Candidate => ({ id: `cand_${id}`, ...fields }));

const world = fc
  .tuple(fc.integer({ min: 0, max: 12 }), fc.integer({ min: 0, max: 12 }))
  .chain(([lines, candidates]) =>
    fc.tuple(
      fc.tuple(...Array.from({ length: lines }, (_, i) => line(i))),
      fc.tuple(...Array.from({ length: candidates }, (_, i) => candidate(i))),
    ),
  );

test('matching never pairs one line with two payments, nor one payment with two lines', () => {
  fc.assert(
    fc.property(world, ([lines, candidates]) => {
      const matches = proposeMatches(lines, candidates);
      assert.equal(new Set(matches.map((m) => m.lineId)).size, matches.length);
      assert.equal(new Set(matches.map((m) => m.candidateId)).size, matches.length);
    }),
    { numRuns: 500 },
  );
});

test('every match is of what moved, in the right direction, and by a rule that holds', () => {
  fc.assert(
    fc.property(world, ([lines, candidates]) => {
      for (const match of proposeMatches(lines, candidates)) {
        const l = lines.find((x) => x.id === match.lineId)!;
        const c = candidates.find((x) => x.id === match.candidateId)!;
        assert.equal(l.amountCents, c.kind === 'payment' ? c.settledCents : -c.settledCents);
        assert.equal(match.kind, c.kind);
        if (match.method === 'particulars') assert.ok(tonoCodesIn(l).has(c.tonoParticulars));
        else assert.ok(Math.abs(daysBetween(c.movedOn, l.postedOn)) <= MATCH_WINDOW_DAYS);
      }
    }),
    { numRuns: 500 },
  );
});

test('the order lines and payments come in changes nothing', () => {
  fc.assert(
    fc.property(world, ([lines, candidates]) => {
      const key = (ms: ReturnType<typeof proposeMatches>) =>
        ms.map((m) => `${m.lineId}:${m.candidateId}:${m.method}`).sort();
      assert.deepEqual(
        key(proposeMatches(lines, candidates)),
        key(proposeMatches([...lines].reverse(), [...candidates].reverse())),
      );
    }),
    { numRuns: 300 },
  );
});

test('a line that could be two payments is left for the merchant', () => {
  const l: LineToMatch = {
    id: 'l',
    postedOn: '2026-11-02',
    amountCents: 1,
    particulars: '',
    code: '',
    reference: '',
    otherParty: '',
    description: '',
  };
  const c = (id: string): Candidate => ({
    id,
    kind: 'payment',
    movedOn: '2026-11-02',
    settledCents: 1,
    tonoParticulars: `V-${id.repeat(6)}`,
    reference: '',
  });
  assert.deepEqual(proposeMatches([l], [c('A'), c('B')]), []);
  assert.deepEqual(proposeMatches([l], [c('A')]), [
    { lineId: 'l', candidateId: 'A', kind: 'payment', method: 'amount_date' },
  ]);
});

test('identical lines of one file get occurrences 1, 2, …; a line’s key is the same in every file', () => {
  fc.assert(
    fc.property(fc.array(fc.constantFrom('a', 'b', 'c'), { maxLength: 20 }), (keys) => {
      const occurrences = occurrencesOf(keys);
      const pairs = keys.map((key, i) => `${key}#${occurrences[i]}`);
      assert.equal(new Set(pairs).size, keys.length);
      for (const [i, key] of keys.entries())
        assert.equal(occurrences[i], keys.slice(0, i + 1).filter((k) => k === key).length);
    }),
  );
  const identity = {
    account: '',
    postedOn: '2026-11-02',
    amountCents: 2000,
    particulars: '',
    code: '',
    reference: '',
    otherParty: 'CASH DEPOSIT',
    description: '',
    bankTransactionId: '',
  };
  assert.equal(lineKeyOf(identity), lineKeyOf({ ...identity }));
  assert.notEqual(lineKeyOf(identity), lineKeyOf({ ...identity, amountCents: 2001 }));
});
