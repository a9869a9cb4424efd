import { randomInt } from 'node:crypto';

// Account numbers at the sandbox bank, in the standard's one form 2-4-7-2 (12-3456-7890123-00): the
// form its holders' numbers are kept in, and the form a payment's creditor account is looked up in.
// The service has a checker of its own (check digits and all), but the bank imports nothing of the service.

/** Hyphens, spaces or nothing between the parts; a suffix of 2 digits, or of 3 starting with 0 (0xx). */
const spelling = /^(\d{2})[- ]?(\d{4})[- ]?(\d{7})[- ]?0?(\d{2})$/;

/** The number in the one form, however it was spelled; text that is not an account number, unchanged. */
export function canonicalAccountNumber(input: string): string {
  const parts = spelling.exec(input.trim());
  return parts ? `${parts[1]}-${parts[2]}-${parts[3]}-${parts[4]}` : input;
}

/** A number at the bank's own branch, for a holder who did not ask for a number of their own. */
export function newAccountNumber(): string {
  return `02-0100-${String(randomInt(0, 10_000_000)).padStart(7, '0')}-00`;
}
