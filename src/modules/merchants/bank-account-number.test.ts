import { test } from 'node:test';
import assert from 'node:assert/strict';
import fc from 'fast-check';
import {
  canonicalBankAccountNumber,
  formatBankAccountNumber,
  isValidBankAccountNumber,
  parseBankAccountNumber,
} from './bank-account-number.ts';

// The published algorithm (IRD, "Validating bank account numbers"), as a model written from the
// table: 18 digits (bank 2, branch 4, account base 8, suffix 4), a weight per digit, a modulus.
const model: Record<string, { weights: string; modulus: number; fold?: true }> = {
  A: { weights: '0 0 6 3 7 9 0 0 10 5 8 4 2 1 0 0 0 0', modulus: 11 },
  B: { weights: '0 0 0 0 0 0 0 0 10 5 8 4 2 1 0 0 0 0', modulus: 11 },
  D: { weights: '0 0 0 0 0 0 0 7 6 5 4 3 2 1 0 0 0 0', modulus: 11 },
  E: { weights: '0 0 0 0 0 0 0 0 0 0 5 4 3 2 0 0 0 1', modulus: 11, fold: true },
  F: { weights: '0 0 0 0 0 0 0 1 7 3 1 7 3 1 0 0 0 0', modulus: 10 },
  G: { weights: '0 0 0 0 0 0 0 1 3 7 1 3 7 1 0 3 7 1', modulus: 10, fold: true },
};
function modelAlgorithm(bank: number, account: number): string | null {
  if (bank === 8) return 'D';
  if (bank === 9) return 'E';
  if (bank === 25 || bank === 33) return 'F';
  if ([26, 28, 29].includes(bank)) return 'G';
  if (bank === 31) return null;
  return account < 990000 ? 'A' : 'B';
}
function modelCheck(bank: string, branch: string, account: string, suffix: string): boolean {
  const name = modelAlgorithm(Number(bank), Number(account));
  if (name === null) return true;
  const { weights, modulus, fold } = model[name];
  const digits = `${bank}${branch}${account.padStart(8, '0')}${suffix.padStart(4, '0')}`;
  let sum = 0;
  weights
    .split(' ')
    .map(Number)
    .forEach((weight, i) => {
      let product = weight * Number(digits[i]);
      while (fold && product >= 10) product = Math.floor(product / 10) + (product % 10);
      sum += product;
    });
  return sum % modulus === 0;
}

// A branch in an issued range for each bank code the model covers.
const branchOf: Record<string, [number, number]> = {
  '01': [1, 999],
  '02': [1200, 1299],
  '03': [1500, 1599],
  '06': [1400, 1499],
  '08': [6500, 6599],
  '09': [0, 0],
  '11': [5000, 6499],
  '12': [3000, 3299],
  '15': [3900, 3999],
  '25': [2500, 2599],
  '26': [2600, 2699],
  '28': [2100, 2149],
  '29': [2150, 2299],
  '31': [2800, 2849],
  '33': [6700, 6799],
  '38': [9000, 9499],
};
// n digits, drawn as a number and padded (fast-check's stringMatching took minutes over the two
// properties below).
const digits = (n: number) => fc.integer({ min: 0, max: 10 ** n - 1 }).map((value) => String(value).padStart(n, '0'));
const candidate = fc.constantFrom(...Object.keys(branchOf)).chain((bank) =>
  fc.record({
    bank: fc.constant(bank),
    branch: fc.integer({ min: branchOf[bank][0], max: branchOf[bank][1] }).map((n) => String(n).padStart(4, '0')),
    account: fc.oneof(
      digits(7),
      fc.tuple(fc.constantFrom('8', '9'), digits(4)).map(([third, rest]) => `09${third}${rest}`),
    ),
    suffix: fc.oneof(
      digits(2),
      digits(2).map((two) => `0${two}`),
    ),
  }),
);
const text = (c: { bank: string; branch: string; account: string; suffix: string }) =>
  `${c.bank}-${c.branch}-${c.account}-${c.suffix}`;

test('published examples are valid', () => {
  for (const valid of ['01-0902-0068389-00', '08-6523-1954512-001', '26-2600-0320871-032', '12-3456-7890138-00']) {
    assert.equal(isValidBankAccountNumber(valid), true, valid);
  }
  assert.equal(isValidBankAccountNumber('01-0902-0068389-01'), true, 'algorithm A does not weigh the suffix');
  assert.deepEqual(parseBankAccountNumber('08 6523 1954512 001'), {
    bank: '08',
    branch: '6523',
    account: '1954512',
    suffix: '01',
  });
  assert.equal(formatBankAccountNumber(parseBankAccountNumber('010902006838900')!), '01-0902-0068389-00');
  // One form whatever was typed: the standard's 2-4-7-2; a three-digit suffix is 0 and the two digits.
  for (const typed of ['01-0902-0068389-000', '01 0902 0068389 00', '0109020068389000', '010902006838900'])
    assert.equal(canonicalBankAccountNumber(typed), '01-0902-0068389-00', typed);
  assert.equal(canonicalBankAccountNumber('26-2600-0320871-032'), '26-2600-0320871-32');
  assert.equal(parseBankAccountNumber('26-2600-0320871-132'), null, 'a suffix over 99 is not a NZ account suffix');
  for (const invalid of [
    '01-0902-0068388-00',
    '08-6523-1954513-001',
    '26-2600-0320872-032',
    '01-1000-0068389-00',
    '99-0902-0068389-00',
    '07-0902-0068389-00',
    '01-902-0068389-00',
    '01-0902-68389-00',
    '01-0902-0068389-0001',
    '01-0902-0068389-100',
    'abc',
    '',
  ]) {
    assert.equal(isValidBankAccountNumber(invalid), false, invalid);
  }
});

test('agrees with the published algorithm on any number in an issued branch range', () => {
  fc.assert(
    fc.property(candidate, (c) => {
      assert.equal(isValidBankAccountNumber(text(c)), modelCheck(c.bank, c.branch, c.account, c.suffix), text(c));
      // and whatever the suffix's width, the one form is 2-4-7-2 and checks the same
      const canonical = canonicalBankAccountNumber(text(c));
      assert.match(canonical, /^\d{2}-\d{4}-\d{7}-\d{2}$/);
      assert.equal(isValidBankAccountNumber(canonical), isValidBankAccountNumber(text(c)));
    }),
    { numRuns: 5000 },
  );
});

test('changing one check-relevant digit of a valid number almost always invalidates it', () => {
  const valid = candidate.filter((c) => modelCheck(c.bank, c.branch, c.account, c.suffix));
  let changed = 0;
  let stillValid = 0;
  fc.assert(
    fc.property(valid, fc.nat(), fc.integer({ min: 1, max: 9 }), (c, at, delta) => {
      const name = modelAlgorithm(Number(c.bank), Number(c.account));
      if (name === null) return; // bank 31 carries no check digit
      const weighted = model[name].weights.split(' ').map(Number);
      const canonical = `${c.bank}${c.branch}${c.account.padStart(8, '0')}${c.suffix.padStart(4, '0')}`;
      // positions with a weight that exist in the written number (not the zero padding)
      const positions = [...canonical]
        .map((_, i) => i)
        .filter((i) => weighted[i] > 0 && i !== 6 && i !== 14 && (c.suffix.length === 3 || i !== 15));
      const i = positions[at % positions.length];
      const mutated = canonical.slice(0, i) + String((Number(canonical[i]) + delta) % 10) + canonical.slice(i + 1);
      const number = `${mutated.slice(0, 2)}-${mutated.slice(2, 6)}-${mutated.slice(7, 14)}-${c.suffix.length === 3 ? mutated.slice(15) : mutated.slice(16)}`;
      changed += 1;
      if (isValidBankAccountNumber(number)) {
        stillValid += 1;
        // modulus 11 with weights coprime to 11, and modulus 10 with weights 1, 3, 7 without folding, always catch a single change
        // (unless the change moved the account base across 990000, switching between algorithms A and B)
        const switched = Number(mutated.slice(6, 14)) >= 990000 !== Number(canonical.slice(6, 14)) >= 990000;
        assert.ok(model[name].fold || switched, `${text(c)} -> ${number} still valid under ${name}`);
      }
    }),
    { numRuns: 3000 },
  );
  assert.ok(stillValid / changed < 0.1, `${stillValid} of ${changed} single-digit changes stayed valid`);
});
