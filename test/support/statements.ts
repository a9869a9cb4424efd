import { readFileSync } from 'node:fs';
import { addDays } from '../../src/shared/zone.ts';

// The test statement files (test/fixtures/statements), each in one bank's layout, filled in for a
// test: {P1} the first payment's particulars, {R1}/{R2} the references, {D0} the day the payments
// succeeded and {D-1} the day before, in the layout's own date form ({DC…}: yyyyMMdd, for ids and OFX).

export const STATEMENT_FIXTURES = {
  anz: 'anz.csv',
  asb: 'asb.csv',
  bnz: 'bnz.csv',
  westpac: 'westpac.csv',
  kiwibank: 'kiwibank.csv',
  ofx: 'sgml.ofx',
  'ofx-xml': 'xml.ofx',
} as const;
export type Fixture = keyof typeof STATEMENT_FIXTURES;

const dateForms: Record<Fixture, (y: string, m: string, d: string) => string> = {
  anz: (y, m, d) => `${d}/${m}/${y}`,
  asb: (y, m, d) => `${y}/${m}/${d}`,
  bnz: (y, m, d) => `${d}/${m}/${y.slice(2)}`,
  westpac: (y, m, d) => `${d}/${m}/${y}`,
  kiwibank: (y, m, d) => `${d}-${m}-${y}`,
  ofx: (y, m, d) => `${y}${m}${d}`,
  'ofx-xml': (y, m, d) => `${y}${m}${d}`,
};

export type StatementValues = { p1: string; r1: string; r2: string; today: string };

/** The fixture's text with its placeholders filled. */
export function statementFile(fixture: Fixture, values: StatementValues): string {
  const template = readFileSync(
    new URL(`../fixtures/statements/${STATEMENT_FIXTURES[fixture]}`, import.meta.url),
    'utf8',
  );
  const dates = (offset: number) => {
    const [y, m, d] = addDays(values.today, offset).split('-') as [string, string, string];
    return { form: dateForms[fixture](y, m, d), compact: `${y}${m}${d}` };
  };
  return template
    .replaceAll('{P1}', values.p1)
    .replaceAll('{R1}', values.r1)
    .replaceAll('{R2}', values.r2)
    .replace(/\{D(C?)([+-]?\d+)\}/g, (_, compact: string, offset: string) => {
      const date = dates(Number(offset));
      return compact ? date.compact : date.form;
    });
}
