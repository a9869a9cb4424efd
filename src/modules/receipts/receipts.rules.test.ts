import { test } from 'node:test';
import assert from 'node:assert/strict';
import fc from 'fast-check';
import { displayAmount } from '../../shared/money.ts';
import {
  bandOf,
  buildDocument,
  documentNumber,
  formatGstNumber,
  gstDigitsOf,
  gstInInclusive,
  gstOnExclusive,
  isValidIrdNumber,
  needsBuyerDetails,
  requiredFields,
  splitCredit,
  splitInclusive,
  type DocumentInput,
} from './receipts.rules.ts';

// The pure rules of receipts (docs/receipts.md): the GST number's check digit, GST in cents, the
// bands of taxable supply information, and what a document shows.

test('known IRD numbers: Inland Revenue’s examples, valid and invalid', () => {
  for (const valid of ['49091850', '35901981', '49098576', '136410132'])
    assert.equal(isValidIrdNumber(valid), true, valid);
  // A wrong check digit; below the range; at its ends; not 8 or 9 digits.
  for (const invalid of ['136410133', '9125568', '10000000', '150000001', '49091851', '1234567890', '4909185x'])
    assert.equal(isValidIrdNumber(invalid), false, invalid);
  // 49-098-576 is one whose primary check digit is 10, so it takes the secondary weights.
  assert.equal(gstDigitsOf(' 49-091-850 '), '49091850');
  assert.equal(gstDigitsOf('049 091 850'), '49091850');
  assert.equal(gstDigitsOf('49.091.850'), null);
  assert.equal(formatGstNumber('49091850'), '49-091-850');
  assert.equal(formatGstNumber('136410132'), '136-410-132');
});

/** The check digit the algorithm gives a base, or null when no digit is valid for it. */
function validCheckDigits(base: string): number[] {
  return [0, 1, 2, 3, 4, 5, 6, 7, 8, 9].filter((d) => isValidIrdNumber(`${base}${d}`));
}

test('every base in range has at most one valid check digit, so a wrong last digit is always caught', () => {
  fc.assert(
    fc.property(fc.integer({ min: 1_000_000, max: 14_999_999 }), (baseValue) => {
      const digits = validCheckDigits(String(baseValue));
      assert.ok(digits.length <= 1, `${baseValue}: ${digits.join(',')}`);
    }),
  );
});

test('nothing outside 10-000-000 to 150-000-000 is valid', () => {
  fc.assert(
    fc.property(
      fc.oneof(fc.integer({ min: 0, max: 9_999_999 }), fc.integer({ min: 150_000_001, max: 999_999_999 })),
      (value) => assert.equal(isValidIrdNumber(String(value).padStart(8, '0')), false),
    ),
  );
});

test('GST in an inclusive total is total × 3/23 to the nearest cent, and the parts add up', () => {
  assert.equal(gstInInclusive(11_500), 1_500);
  assert.equal(gstInInclusive(23_000), 3_000);
  assert.equal(gstInInclusive(100), 13); // 13.04…
  assert.equal(gstInInclusive(1), 0);
  assert.equal(gstInInclusive(4), 1); // 0.52… rounds up
  fc.assert(
    fc.property(fc.integer({ min: 0, max: 100_000_000_000 }), (total) => {
      const gst = gstInInclusive(total);
      // |gst − total × 3/23| ≤ 1/2, in integers: |23 gst − 3 total| ≤ 11.5.
      assert.ok(Math.abs(23 * gst - 3 * total) * 2 <= 23, `${total} → ${gst}`);
      const { exclusiveCents, gstCents } = splitInclusive(total);
      assert.equal(exclusiveCents + gstCents, total);
      assert.ok(gstCents >= 0 && exclusiveCents >= 0);
    }),
  );
});

test('GST on an exclusive price is 15 % to the nearest cent; adding it and taking it out again agree within a cent', () => {
  assert.equal(gstOnExclusive(10_000), 1_500);
  assert.equal(gstOnExclusive(3), 0); // 0.45
  assert.equal(gstOnExclusive(10), 2); // 1.5 rounds up
  fc.assert(
    fc.property(fc.integer({ min: 0, max: 100_000_000_000 }), (exclusive) => {
      const gst = gstOnExclusive(exclusive);
      assert.ok(Math.abs(100 * gst - 15 * exclusive) * 2 <= 100);
      assert.ok(Math.abs(gstInInclusive(exclusive + gst) - gst) <= 1);
    }),
  );
});

test('bands: $200 and $1,000 belong to the lower band; each band asks for what the one below does and more', () => {
  assert.equal(bandOf(20_000), 'up_to_200');
  assert.equal(bandOf(20_001), 'up_to_1000');
  assert.equal(bandOf(100_000), 'up_to_1000');
  assert.equal(bandOf(100_001), 'over_1000');
  assert.deepEqual(requiredFields('up_to_200'), ['supplier', 'date', 'description', 'total']);
  assert.deepEqual(requiredFields('up_to_1000'), ['supplier', 'date', 'description', 'total', 'gst_number', 'gst']);
  assert.ok(requiredFields('over_1000').includes('buyer'));
  fc.assert(
    fc.property(fc.integer({ min: 0, max: 1_000_000_000 }), fc.integer({ min: 0, max: 1_000_000_000 }), (a, b) => {
      const [low, high] = a <= b ? [a, b] : [b, a];
      const lower = new Set(requiredFields(bandOf(low)));
      for (const field of lower) assert.ok(requiredFields(bandOf(high)).includes(field));
      assert.equal(needsBuyerDetails(high, true), high > 100_000);
      assert.equal(needsBuyerDetails(high, false), false);
    }),
  );
});

const settings = {
  legalName: 'Kōwhai Trading Limited',
  gstNumber: '49091850',
  pricesIncludeGst: true,
  issueTaxInvoices: true,
  emailReceipts: true,
};
const base: DocumentInput = {
  kind: 'receipt',
  number: 7,
  date: '3 March 2027',
  merchantName: 'Kowhai',
  settings,
  description: 'Veg box',
  totalCents: 11_500,
  buyer: null,
  statement: 'Kowhai INV7 V-ABC',
  paymentId: 'payment_1',
  original: null,
  reason: null,
  test: false,
};

test('a document shows what its band requires, or is not called a tax invoice', () => {
  fc.assert(
    fc.property(
      fc.integer({ min: 1, max: 500_000 }),
      fc.boolean(),
      fc.boolean(),
      fc.boolean(),
      fc.boolean(),
      (total, registered, issues, inclusive, buyer) => {
        const doc = buildDocument({
          ...base,
          totalCents: total,
          settings: {
            ...settings,
            gstNumber: registered ? settings.gstNumber : null,
            issueTaxInvoices: issues,
            pricesIncludeGst: inclusive,
          },
          buyer: buyer ? { name: 'Aroha Ngata', address: ['1 Queen Street', 'Auckland 1010'] } : null,
        });
        const text = doc.lines.map((line) => `${line.label}: ${line.value}`).join('\n');
        assert.equal(doc.title === 'Tax invoice', registered && issues && (total <= 100_000 || buyer));
        if (doc.title === 'Tax invoice') assert.deepEqual(doc.missing, []);
        assert.ok(text.includes('Supplier: Kōwhai Trading Limited'));
        assert.ok(text.includes('Description: Veg box'));
        if (registered && issues) {
          assert.ok(text.includes('GST number: 49-091-850'));
          assert.equal(doc.gstCents, gstInInclusive(total));
        } else assert.equal(doc.gstCents, null);
        // The buyer is printed only where the band asks for it.
        assert.equal(text.includes('Aroha Ngata'), buyer && total > 100_000);
      },
    ),
  );
});

test('a credit note names the receipt it credits and shows negative figures', () => {
  const doc = buildDocument({
    ...base,
    kind: 'credit_note',
    number: 2,
    totalCents: 5_000,
    original: { number: documentNumber('receipt', 7), date: '3 March 2027' },
    reason: 'Damaged',
  });
  assert.equal(doc.title, 'Credit note');
  assert.equal(doc.number, 'CN-000002');
  assert.ok(doc.lines.some((line) => line.label === 'Credits' && line.value === 'R-000007 of 3 March 2027'));
  assert.ok(doc.lines.some((line) => line.value === '-$50.00'));
});

/** A receipt's total and a split of it into the refunds that pay it all back, in the order they are credited. */
const refundedInParts = fc.integer({ min: 1, max: 10_000_000 }).chain((total) =>
  fc
    .uniqueArray(fc.integer({ min: 1, max: Math.max(1, total - 1) }), { maxLength: Math.min(12, total - 1) })
    .map((cuts) => {
      const ends = [...cuts.filter((cut) => cut < total).sort((a, b) => a - b), total];
      return { total, parts: ends.map((end, i) => end - (i === 0 ? 0 : ends[i - 1]!)) };
    }),
);

/** The credit notes of a payment refunded in these parts, built as they are issued: each after those before it. */
function creditNotesOf(parts: number[]) {
  let creditedBeforeCents = 0;
  return parts.map((cents, i) => {
    const doc = buildDocument({
      ...base,
      kind: 'credit_note',
      number: i + 1,
      totalCents: cents,
      original: { number: documentNumber('receipt', 7), date: '3 March 2027' },
      creditedBeforeCents,
    });
    creditedBeforeCents += cents;
    return doc;
  });
}

test('credit notes of a payment refunded in parts never credit more GST than its receipt, and exactly that in full', () => {
  // The case that drifted when each credit note rounded its own GST: $1.00 shows $0.13, two halves $0.07 each.
  assert.deepEqual(
    [splitCredit(0, 50), splitCredit(50, 50)],
    [
      { exclusiveCents: 43, gstCents: 7 },
      { exclusiveCents: 44, gstCents: 6 },
    ],
  );
  fc.assert(
    fc.property(refundedInParts, ({ total, parts }) => {
      const receiptGst = buildDocument({ ...base, totalCents: total }).gstCents!;
      let creditedGst = 0;
      for (const note of creditNotesOf(parts)) {
        const gst = note.gstCents!;
        assert.ok(gst >= 0 && gst <= note.totalCents, `${note.totalCents} credits GST ${gst}`);
        creditedGst += gst;
        assert.ok(creditedGst <= receiptGst, `credited GST ${creditedGst} > the receipt's ${receiptGst}`);
        // What the note shows is what it credits.
        const shown = (label: string) => note.lines.find((line) => line.label === label)?.value;
        assert.equal(shown('Includes GST of'), `-${displayAmount(gst)}`);
      }
      assert.equal(creditedGst, receiptGst, `${total} refunded as ${parts.join(' + ')}`);
    }),
  );
});

test('a credit note’s price before GST is its amount less the GST it credits', () => {
  fc.assert(
    fc.property(fc.integer({ min: 0, max: 10_000_000 }), fc.integer({ min: 1, max: 10_000_000 }), (before, cents) => {
      const { exclusiveCents, gstCents } = splitCredit(before, cents);
      assert.equal(exclusiveCents + gstCents, cents);
      const doc = buildDocument({
        ...base,
        kind: 'credit_note',
        settings: { ...settings, pricesIncludeGst: false },
        totalCents: cents,
        creditedBeforeCents: before,
      });
      const shown = (label: string) => doc.lines.find((line) => line.label === label)?.value;
      assert.equal(shown('Price excluding GST'), `-${displayAmount(exclusiveCents)}`);
      assert.equal(shown('GST at 15%'), `-${displayAmount(gstCents)}`);
    }),
  );
});
