// NZ bank account numbers (BB-bbbb-AAAAAAA-SS; a three-digit suffix 0xx is read as its two digits) checked with the published check-digit algorithm:
// the bank/branch must be an issued range, and a weighted sum over the 18-digit form (bank 2,
// branch 4, account base padded to 8, suffix padded to 4) must divide by the algorithm's modulus.

type Algorithm = { weights: number[]; modulus: number; foldDigits: boolean };

const algorithms: Record<string, Algorithm> = {
  A: { weights: [0, 0, 6, 3, 7, 9, 0, 0, 10, 5, 8, 4, 2, 1, 0, 0, 0, 0], modulus: 11, foldDigits: false },
  B: { weights: [0, 0, 0, 0, 0, 0, 0, 0, 10, 5, 8, 4, 2, 1, 0, 0, 0, 0], modulus: 11, foldDigits: false },
  D: { weights: [0, 0, 0, 0, 0, 0, 0, 7, 6, 5, 4, 3, 2, 1, 0, 0, 0, 0], modulus: 11, foldDigits: false },
  E: { weights: [0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 5, 4, 3, 2, 0, 0, 0, 1], modulus: 11, foldDigits: true },
  F: { weights: [0, 0, 0, 0, 0, 0, 0, 1, 7, 3, 1, 7, 3, 1, 0, 0, 0, 0], modulus: 10, foldDigits: false },
  G: { weights: [0, 0, 0, 0, 0, 0, 0, 1, 3, 7, 1, 3, 7, 1, 0, 3, 7, 1], modulus: 10, foldDigits: true },
};

// Issued branch ranges per bank code.
const branchRanges: Record<number, Array<[number, number]>> = {
  1: [
    [1, 999],
    [1100, 1199],
    [1800, 1899],
  ],
  2: [
    [1, 999],
    [1200, 1299],
  ],
  3: [
    [1, 999],
    [1300, 1399],
    [1500, 1599],
    [1700, 1799],
    [1900, 1999],
    [7350, 7399],
  ],
  4: [[2020, 2024]],
  5: [[8800, 8805]],
  6: [
    [1, 999],
    [1400, 1499],
  ],
  8: [[6500, 6599]],
  9: [[0, 0]],
  10: [[5165, 5169]],
  11: [
    [5000, 6499],
    [6600, 8999],
  ],
  12: [
    [3000, 3299],
    [3400, 3499],
    [3600, 3699],
  ],
  13: [[4900, 4999]],
  14: [[4700, 4799]],
  15: [[3900, 3999]],
  16: [[4400, 4499]],
  17: [[3300, 3399]],
  18: [[3500, 3599]],
  19: [[4600, 4649]],
  20: [[4100, 4199]],
  21: [[4800, 4899]],
  22: [[4000, 4049]],
  23: [[3700, 3799]],
  24: [[4300, 4349]],
  25: [[2500, 2599]],
  26: [[2600, 2699]],
  27: [[3800, 3849]],
  28: [[2100, 2149]],
  29: [[2150, 2299]],
  30: [[2900, 2949]],
  31: [[2800, 2849]],
  33: [[6700, 6799]],
  35: [[2400, 2499]],
  38: [[9000, 9499]],
};

function algorithmFor(bank: number, accountBase: number): Algorithm | null {
  switch (bank) {
    case 8:
      return algorithms.D;
    case 9:
      return algorithms.E;
    case 25:
    case 33:
      return algorithms.F;
    case 26:
    case 28:
    case 29:
      return algorithms.G;
    case 31:
      return null; // bank 31 numbers carry no check digit
    default:
      return accountBase < 990000 ? algorithms.A : algorithms.B;
  }
}

function foldDigits(value: number): number {
  let result = value;
  while (result >= 10)
    result = String(result)
      .split('')
      .reduce((sum, digit) => sum + Number(digit), 0);
  return result;
}

export type BankAccountNumber = { bank: string; branch: string; account: string; suffix: string };

/** Hyphens, spaces or nothing between the parts; a suffix of 2 digits, or of 3 starting with 0 (0xx). */
const shape = /^(\d{2})[- ]?(\d{4})[- ]?(\d{7})[- ]?0?(\d{2})$/;

export function parseBankAccountNumber(input: string): BankAccountNumber | null {
  const match = shape.exec(input.trim());
  if (!match) return null;
  const [, bank, branch, account, suffix] = match;
  return { bank, branch, account, suffix };
}

export function isValidBankAccountNumber(input: string): boolean {
  const parts = parseBankAccountNumber(input);
  if (!parts) return false;
  const bank = Number(parts.bank);
  const branch = Number(parts.branch);
  const ranges = branchRanges[bank];
  if (!ranges?.some(([low, high]) => branch >= low && branch <= high)) return false;
  const algorithm = algorithmFor(bank, Number(parts.account));
  if (!algorithm) return true;
  const digits = (parts.bank + parts.branch + parts.account.padStart(8, '0') + parts.suffix.padStart(4, '0'))
    .split('')
    .map(Number);
  const sum = digits.reduce((total, digit, index) => {
    const product = digit * algorithm.weights[index];
    return total + (algorithm.foldDigits ? foldDigits(product) : product);
  }, 0);
  return sum % algorithm.modulus === 0;
}

/**
 * The one form an account number is stored, sent and shown in: BB-bbbb-AAAAAAA-SS, the Payments NZ
 * standard's 2-4-7-2 (its Identification, "12-0123-0012345-00"), and what payers see on a bank
 * card or statement (docs/banks.md, "Account numbers").
 */
export function formatBankAccountNumber(parts: BankAccountNumber): string {
  return `${parts.bank}-${parts.branch}-${parts.account}-${parts.suffix}`;
}

/** Any accepted spelling in the one form; the input unchanged when it is not an account number. */
export function canonicalBankAccountNumber(input: string): string {
  const parts = parseBankAccountNumber(input);
  return parts ? formatBankAccountNumber(parts) : input;
}

export const BANK_ACCOUNT_FORM =
  'a valid NZ bank account number BB-bbbb-AAAAAAA-SS, such as 12-3456-7890138-00 (bank, branch, account and suffix, passing the check digit)';
