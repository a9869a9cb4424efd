import { test } from 'node:test';
import assert from 'node:assert/strict';
import fc from 'fast-check';
import { stringify } from 'safe-stable-stringify';
import {
  canonicalRecord,
  chainHash,
  GENESIS_HASH,
  verifyChain,
  type ChainedFields,
  type ChainedRecord,
} from './audit.chain.ts';

const text = fc.string({ maxLength: 12 });
const fieldsArb = fc.record({
  id: fc.string({ minLength: 1, maxLength: 8 }).map((s) => `aud_${s}`),
  at: fc.integer({ min: 0, max: 2 ** 45 }),
  mode: fc.constantFrom('live', 'test', null),
  actor_kind: fc.constantFrom('api_key', 'member', 'payer', 'operator', 'service'),
  actor_id: text,
  action: text,
  object_id: fc.option(text),
  ip: fc.option(text),
  user_agent: fc.option(fc.string({ maxLength: 20 })),
  request_id: fc.option(text),
  summary: fc.jsonValue().map((value) => JSON.stringify(value)),
});

function chainOf(entries: Array<Omit<ChainedFields, 'seq' | 'user_id'>>): ChainedRecord[] {
  const records: ChainedRecord[] = [];
  let prev = GENESIS_HASH;
  entries.forEach((entry, i) => {
    const fields = { ...entry, user_id: 'user_1', seq: i + 1 };
    const hash = chainHash(prev, fields);
    records.push({ ...fields, prev_hash: prev, hash });
    prev = hash;
  });
  return records;
}
const headOf = (records: ChainedRecord[]) =>
  records.length === 0 ? null : { seq: records.at(-1)!.seq, hash: records.at(-1)!.hash };

const chainArb = fc.array(fieldsArb, { minLength: 1, maxLength: 12 }).map(chainOf);

test('an untouched chain verifies', () => {
  fc.assert(
    fc.property(fc.array(fieldsArb, { maxLength: 12 }).map(chainOf), (records) => {
      assert.deepEqual(verifyChain(records, headOf(records)), { records: records.length, broken: null });
    }),
  );
});

test('the canonical form is the record as JSON with its keys sorted, whatever its text holds', () => {
  const anyText = fc.string({ unit: 'binary', maxLength: 16 });
  fc.assert(
    fc.property(fieldsArb, anyText, anyText, fc.integer({ min: 1, max: 2 ** 40 }), (fields, summary, ip, seq) => {
      const record = { ...fields, summary, ip, user_id: 'user_1', seq };
      assert.equal(canonicalRecord(record), stringify(record));
    }),
  );
});

const alterable = [
  'at',
  'mode',
  'actor_kind',
  'actor_id',
  'action',
  'object_id',
  'ip',
  'summary',
  'seq',
  'prev_hash',
  'hash',
] as const;

test('any single alteration is found at the altered record', () => {
  fc.assert(
    fc.property(
      chainArb,
      fc.nat(),
      fc.constantFrom(...alterable),
      fc.string({ minLength: 1 }),
      (records, pick, field, junk) => {
        const at = pick % records.length;
        const original = records[at]!;
        const value =
          field === 'seq' || field === 'at' ? Number(original[field]) + 1 : `${String(original[field])}${junk}`;
        const tampered = records.map((record, i) => (i === at ? { ...record, [field]: value } : record));
        const report = verifyChain(tampered, headOf(records));
        assert.equal(report.broken?.kind, 'altered');
        assert.equal(report.broken?.id, original.id);
      },
    ),
  );
});

test('any single removal is found at the missing number', () => {
  fc.assert(
    fc.property(chainArb, fc.nat(), (records, pick) => {
      const at = pick % records.length;
      const tampered = records.filter((_, i) => i !== at);
      const report = verifyChain(tampered, headOf(records));
      assert.equal(report.broken?.kind, 'removed');
      assert.equal(report.broken?.seq, at + 1);
    }),
  );
});

test('any single insertion is found at the inserted record, however it is numbered and hashed', () => {
  fc.assert(
    fc.property(
      chainArb,
      fc.nat(),
      fieldsArb,
      fc.constantFrom('in its place', 'after the head'),
      fc.string(),
      (records, pick, forged, numbering, prevGuess) => {
        const at = numbering === 'after the head' ? records.length : pick % (records.length + 1);
        const seq = at + 1;
        // Its own hash is right; its link to the record before it is a guess.
        const prev = sha(prevGuess) === (records[at - 1]?.hash ?? GENESIS_HASH) ? `x${prevGuess}` : sha(prevGuess);
        const fields = { ...forged, user_id: 'user_1', seq };
        const record: ChainedRecord = { ...fields, prev_hash: prev, hash: chainHash(prev, fields) };
        const tampered = [...records.slice(0, at), record, ...records.slice(at)];
        const report = verifyChain(tampered, headOf(records));
        assert.equal(report.broken?.kind, 'inserted');
        assert.equal(report.broken?.id, forged.id);
      },
    ),
  );
});

test('a record appended with a good link but no head moved is beyond the head', () => {
  fc.assert(
    fc.property(chainArb, fieldsArb, (records, forged) => {
      const last = records.at(-1)!;
      const fields = { ...forged, user_id: 'user_1', seq: last.seq + 1 };
      const record: ChainedRecord = { ...fields, prev_hash: last.hash, hash: chainHash(last.hash, fields) };
      const report = verifyChain([...records, record], headOf(records));
      assert.equal(report.broken?.kind, 'inserted');
      assert.equal(report.broken?.id, forged.id);
    }),
  );
});

function sha(value: string): string {
  return chainHash(value, {
    id: '',
    user_id: '',
    seq: 0,
    at: 0,
    mode: null,
    actor_kind: '',
    actor_id: '',
    action: '',
    object_id: null,
    ip: null,
    user_agent: null,
    request_id: null,
    summary: '',
  });
}
