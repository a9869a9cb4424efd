import { test } from 'node:test';
import assert from 'node:assert/strict';
import { parseStatementFile, StatementFileError } from './statement-files.ts';
import { STATEMENT_FIXTURES, statementFile, type Fixture } from '../../../test/support/statements.ts';

// Every layout Tono reads, from the test files written in each bank's layout: the same seven
// transactions (two payments in, a fee, a transfer, two identical cash deposits, a card purchase).

const values = { p1: 'V-ABC123', r1: 'INV-1001', r2: 'INV-1002', today: '2026-11-20' };

for (const fixture of Object.keys(STATEMENT_FIXTURES) as Fixture[]) {
  test(`reads the ${fixture} layout: dates, exact cents, the fields of each line`, () => {
    const parsed = parseStatementFile(statementFile(fixture, values));
    assert.equal(parsed.layout, fixture === 'ofx-xml' ? 'ofx' : fixture);
    assert.deepEqual(
      parsed.lines.map((line) => [line.postedOn, line.amountCents]),
      [
        ['2026-11-20', 1],
        ['2026-11-20', 1],
        ['2026-11-19', -250],
        ['2026-11-19', 100_000],
        ['2026-11-19', 2000],
        ['2026-11-19', 2000],
        ['2026-11-20', -4590],
      ],
    );
    const first = parsed.lines[0]!;
    const text = [first.particulars, first.code, first.reference, first.otherParty, first.description].join(' ');
    assert.match(text, /V-ABC123/);
    assert.match(text, /INV-1001/);
    assert.ok(parsed.lines.every((line) => line.fileLine > 0));
  });
}

test('ASB’s account comes from the lines above the header; BNZ’s and Kiwibank’s from their columns; OFX from BANKACCTFROM', () => {
  assert.equal(parseStatementFile(statementFile('asb', values)).account, '12-3456-0123456-00');
  assert.equal(parseStatementFile(statementFile('bnz', values)).account, '02-0100-0123456-00');
  assert.equal(parseStatementFile(statementFile('kiwibank', values)).account, '38-9000-0123456-00');
  assert.equal(parseStatementFile(statementFile('ofx', values)).account, '01-0123-0123456-00');
  assert.equal(parseStatementFile(statementFile('ofx-xml', values)).lines[0]!.otherParty, 'A PAYER & CO');
});

const refusal = (content: string) => {
  try {
    parseStatementFile(content);
  } catch (error) {
    assert.ok(error instanceof StatementFileError);
    return { reason: error.reason, line: error.line, message: error.message };
  }
  assert.fail('the file was read');
};

test('a bad line is refused with its line number and what is wrong', () => {
  const anz = statementFile('anz', values).split('\n');
  anz[3] = anz[3]!.replace('-2.50', '-2.5O');
  assert.deepEqual(refusal(anz.join('\n')).line, 4);
  assert.match(refusal(anz.join('\n')).message, /Line 4: the amount "-2\.5O" is not an amount/);

  const westpac = statementFile('westpac', values).split('\n');
  westpac[2] = westpac[2]!.replace('20/11/2026', '31/11/2026');
  assert.match(refusal(westpac.join('\n')).message, /Line 3: the date "31\/11\/2026" is not a date/);

  const bnz = statementFile('bnz', values).split('\n');
  bnz[5] = `${bnz[5]},extra`;
  assert.match(refusal(bnz.join('\n')).message, /Line 6 has 15 columns where the BNZ header has 14/);

  // ASB: the header is on line 7 and a blank line follows, so the first transaction is line 9
  const asb = statementFile('asb', values).split('\n');
  asb[9] = asb[9]!.replace('0.01', '0.001');
  assert.equal(refusal(asb.join('\n')).line, 10);

  assert.equal(refusal('Type,Details\n"broken,1\n').reason, 'malformed');
  // a trailing line of commas or spaces is no transaction, and no error
  assert.equal(parseStatementFile(`${statementFile('westpac', values)},,,,,,\n   \n`).lines.length, 7);
});

test('an unknown header lists the layouts accepted; an empty file or one with no transactions is refused', () => {
  const unknown = refusal('When,How much,Who\n01/11/2026,5.00,Someone\n');
  assert.equal(unknown.reason, 'unknown_layout');
  for (const bank of ['ANZ', 'ASB', 'BNZ', 'Westpac', 'Kiwibank', 'OFX'])
    assert.match(unknown.message, new RegExp(bank));
  assert.equal(refusal('').reason, 'empty');
  assert.equal(refusal('Date,Amount,Other Party,Description,Reference,Particulars,Analysis Code\n').reason, 'empty');
  assert.equal(refusal('OFXHEADER:100\nDATA:OFXSGML\n\n<OFX>\n</OFX>\n').reason, 'empty');
});
