import { test } from 'node:test';
import assert from 'node:assert/strict';
import { parseStatementFile, StatementFileError } from './statement-files.ts';
import { STATEMENT_FIXTURES, statementFile, type Fixture } from '../../../test/support/statements.ts';

// Every layout Tono reads, from the test files written in each bank's layout: the same seven
// transactions (two payments in, a fee, a transfer, two identical cash deposits, a card purchase).

const values = { p1: 'V-ABC123', r1: 'INV-1001', r2: 'INV-1002', today: '2026-11-20' };
const ZONE = 'Pacific/Auckland';

for (const fixture of Object.keys(STATEMENT_FIXTURES) as Fixture[]) {
  test(`reads the ${fixture} layout: dates, exact cents, the fields of each line`, () => {
    const parsed = parseStatementFile(statementFile(fixture, values), ZONE);
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
  assert.equal(parseStatementFile(statementFile('asb', values), ZONE).account, '12-3456-0123456-00');
  assert.equal(parseStatementFile(statementFile('bnz', values), ZONE).account, '02-0100-0123456-00');
  assert.equal(parseStatementFile(statementFile('kiwibank', values), ZONE).account, '38-9000-0123456-00');
  assert.equal(parseStatementFile(statementFile('ofx', values), ZONE).account, '01-0123-0123456-00');
  assert.equal(parseStatementFile(statementFile('ofx-xml', values), ZONE).lines[0]!.otherParty, 'A PAYER & CO');
});

const refusal = (content: string) => {
  try {
    parseStatementFile(content, ZONE);
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
  assert.equal(parseStatementFile(`${statementFile('westpac', values)},,,,,,\n   \n`, ZONE).lines.length, 7);
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

const KIWIBANK_HEADER =
  'Account number,Date,Memo/Description,Source Code (payment type),TP ref,TP part,TP code,OP ref,OP part,OP code,OP name,OP Bank Account Number,Amount (credit),Amount (debit),Amount,Balance';
const kiwibankOn = (date: string) =>
  `${KIWIBANK_HEADER}\n38-9000-0123456-00,${date},DIRECT CREDIT A PAYER ;,DC,INV1,V-ABC123,TONO,,,,A Payer,06-0501-0654321-00,10.00,,10.00,1010.00\n`;

test('Kiwibank dates with a month name read September as Sep or Sept, in any case', () => {
  for (const [written, date] of [
    ['01 Sep 2027', '2027-09-01'],
    ['1 Sept 2027', '2027-09-01'],
    ['30 SEP 2027', '2027-09-30'],
    ['30 sept 2027', '2027-09-30'],
    ['31 Aug 2027', '2027-08-31'],
    ['1 may 2027', '2027-05-01'],
  ])
    assert.equal(parseStatementFile(kiwibankOn(written), ZONE).lines[0]!.postedOn, date, written);
  assert.match(refusal(kiwibankOn('31 Sep 2027')).message, /Line 2: the date "31 Sep 2027" is not a date/);
  assert.match(refusal(kiwibankOn('1 Septe 2027')).message, /Line 2: the date "1 Septe 2027" is not a date/);
});

/** The test OFX file (SGML or XML) with its first transaction's DTPOSTED replaced. */
const ofxPostedAt = (fixture: 'ofx' | 'ofx-xml', posted: string) =>
  statementFile(fixture, values).replace(/<DTPOSTED>[^<\r\n]*/, `<DTPOSTED>${posted}`);

test('an OFX DTPOSTED with a time is an instant, at its offset or GMT, on its date in the service time zone', () => {
  // New Zealand is at +12:00 on 31 August 2027: 12:00 GMT is midnight starting 1 September there.
  const cases: Array<[string, string]> = [
    ['20270901', '2027-09-01'],
    ['20270901[+12:NZST]', '2027-09-01'],
    ['20270831120000.000[0:GMT]', '2027-09-01'],
    ['20270831115959.999[0:GMT]', '2027-08-31'],
    ['20270831120000', '2027-09-01'],
    ['202708311200', '2027-09-01'],
    ['20270901000000.000[+12:NZST]', '2027-09-01'],
    ['20270901235959[+12:NZST]', '2027-09-01'],
    ['20270831070000[-5:EST]', '2027-09-01'],
    ['20270831065959[-5:EST]', '2027-08-31'],
    ['20270831173000.000[5.5:IST]', '2027-09-01'],
    ['20270831172959[+5.5:IST]', '2027-08-31'],
    ['20270831120000[-12]', '2027-09-01'],
    ['20270831070000.000 [-5:EST]', '2027-09-01'],
    // Forms banks write beyond OFX's own: any number of fractional digits (truncated), ±hhmm and
    // ±hh:mm offsets, a zone name alone meaning GMT, ±h.mm as hours and minutes, the ISO form.
    ['20270831120000.000000', '2027-09-01'],
    ['20270831115959.9999999', '2027-08-31'],
    ['20270831120000.0000[+12:NZST]', '2027-08-31'],
    ['20270831120000[+1200:NZST]', '2027-08-31'],
    ['20270831120000[+12:00]', '2027-08-31'],
    ['20270831120000[+12.00:NZST]', '2027-08-31'],
    ['20270831120000[-0500]', '2027-09-01'],
    ['20270831065959[-05:00:EST]', '2027-08-31'],
    ['20270831120000[GMT]', '2027-09-01'],
    ['20270831115959[UTC]', '2027-08-31'],
    ['20270831120000[Z]', '2027-09-01'],
    ['20270831120000 [0 : GMT]', '2027-09-01'],
    ['20270831120000Z', '2027-09-01'],
    ['20270831120000[-3.30:NST]', '2027-09-01'],
    ['20270831082959[-3.5:NST]', '2027-08-31'],
    ['20270831174500[+5.45:NPT]', '2027-09-01'],
    ['20270831174459[+5.75:NPT]', '2027-08-31'],
    ['2027-08-31T12:00:00', '2027-09-01'],
    ['2027-08-31T11:59:59.123456', '2027-08-31'],
    ['2027-08-31T12:00:00+12:00', '2027-08-31'],
    ['2027-08-31T07:00:00-0500', '2027-09-01'],
    ['2027-08-31T12:00:00Z', '2027-09-01'],
    ['2027-08-31T12:00', '2027-09-01'],
  ];
  for (const fixture of ['ofx', 'ofx-xml'] as const)
    for (const [posted, date] of cases)
      assert.equal(parseStatementFile(ofxPostedAt(fixture, posted), ZONE).lines[0]!.postedOn, date, posted);
  // The day is the service time zone's: in UTC, 12:00 GMT on 31 August is still 31 August.
  assert.equal(parseStatementFile(ofxPostedAt('ofx', '20270831120000[0:GMT]'), 'UTC').lines[0]!.postedOn, '2027-08-31');
});

test('an OFX DTPOSTED on a real date that cannot be read further is that date, as written', () => {
  for (const fixture of ['ofx', 'ofx-xml'] as const)
    for (const posted of [
      '20270831120000[+5.3:X]',
      '20270831120000[+05:20]',
      '20270831120000[EST]',
      '20270831120000 GMT',
      '2027083112',
      '20270831 noon',
      '2027-08-31T12',
    ])
      assert.equal(parseStatementFile(ofxPostedAt(fixture, posted), ZONE).lines[0]!.postedOn, '2027-08-31', posted);
});

test('an OFX DTPOSTED that is no real date, time or offset is refused with what it says', () => {
  for (const posted of [
    '20270231',
    '2027-02-31T12:00:00',
    '20270831240000[0:GMT]',
    '20270831126000',
    '20270831120060',
    '2027-08-31T12:60:00',
    '20270831120000[+15:XST]',
    '20270831120000[-1430]',
    '20270831120000[+14.5]',
    '20270831120000[+05:60]',
    '2027-08-31T12:00:00+15:00',
    'yesterday',
  ]) {
    const refused = refusal(ofxPostedAt('ofx', posted));
    assert.equal(refused.line, 1, posted);
    assert.equal(refused.message, `Transaction 1: DTPOSTED "${posted}" is not a date`);
  }
});
