import { test } from 'node:test';
import assert from 'node:assert/strict';
import fc from 'fast-check';
import { apiClient, buildTestApp, createTestMerchant, freshDb } from '../../test/helpers.ts';
import { buildSandboxBankApp, migrateSandboxBank } from '../sandbox-bank/sandbox-bank.app.ts';
import { inspectInput, MAX_JSON_DEPTH } from './text-guard.ts';
import { SERVICE_BASIC } from '../../test/support/banks.ts';

// Deeply nested JSON and NUL characters, on the API, the pages and the sandbox bank (mounted and alone).

const deepArrays = (n: number) => '['.repeat(n) + ']'.repeat(n);
const deepObjects = (n: number) => `${'{"":'.repeat(n)}1${'}'.repeat(n)}`; // 100,001 bytes at 20,000: within the 100 kB limit
const tooDeep = {
  code: 'bad_request.invalid_json',
  message: `The body is nested too deeply: at most ${MAX_JSON_DEPTH} levels of objects and arrays`,
  params: {},
};

test('inspectInput: depth is bounded without recursion, NUL is found with its path', () => {
  assert.deepEqual(inspectInput(JSON.parse(deepArrays(20_000))), { kind: 'too_deep' });
  assert.deepEqual(inspectInput(JSON.parse(deepObjects(20_000))), { kind: 'too_deep' });
  assert.equal(inspectInput(JSON.parse(deepArrays(MAX_JSON_DEPTH))), null);
  assert.deepEqual(inspectInput(JSON.parse(deepArrays(MAX_JSON_DEPTH + 1))), { kind: 'too_deep' });
  assert.deepEqual(inspectInput({ a: 'ok', b: [{ c: 'x\u0000' }] }), { kind: 'nul', field: 'b.0.c' });
  assert.deepEqual(
    inspectInput({ a: 'x\u0000', b: 'y\u0000' }),
    { kind: 'nul', field: 'a' },
    'the first field is reported',
  );
  assert.deepEqual(inspectInput({ 'k\u0000': 1 }), { kind: 'nul', field: 'k\\u0000' });
  // Half of a surrogate pair, in a value or a name: neither engine would store it as it came.
  assert.deepEqual(inspectInput({ a: 'ok', b: { c: 'a\ud800b' } }), { kind: 'lone_surrogate', field: 'b.c' });
  assert.deepEqual(inspectInput({ message: 'x\udfff' }), { kind: 'lone_surrogate', field: 'message' });
  assert.deepEqual(inspectInput({ 'k\ud800': 'v' }), { kind: 'lone_surrogate', field: 'k\ufffd' });
  assert.equal(inspectInput({ tui: 'Tūī 🐦' }), null, 'a whole pair is fine');
  // A flat object of strings (params, a query): clean passes, and otherwise its first field with a NUL, in its key or its value, is named.
  const withNul = fc.string({ maxLength: 6 }).chain((text) => fc.constantFrom(text, `${text}\u0000`));
  fc.assert(
    fc.property(fc.dictionary(withNul, withNul), (input) => {
      const first = Object.entries(input).find(([key, value]) => key.includes('\u0000') || value.includes('\u0000'));
      // biome-ignore lint/suspicious/noControlCharactersInRegex: NUL is what the guard looks for
      const expected = first === undefined ? null : { kind: 'nul', field: first[0].replace(/\u0000/g, '\\u0000') };
      assert.deepEqual(inspectInput(input), expected);
    }),
  );
  // Any JSON within the depth and without NUL passes.
  fc.assert(
    fc.property(fc.jsonValue({ maxDepth: 10 }), (value) => {
      const clean = JSON.parse(JSON.stringify(value).replace(/\\u0000/g, ''));
      return inspectInput(clean) === null;
    }),
  );
});

test('20,000-deep arrays and objects get 400 on the API, the pages and the mounted sandbox bank, and the process stays well', async (t) => {
  const app = await buildTestApp(t);
  const merchant = await createTestMerchant(app);
  const api = apiClient(app, merchant.testKey);
  const request = (
    await api.post('/v1/requests', { bank_account_id: merchant.bankAccountId, amount: '5.00 NZD', message: 'Deep' })
  ).body.request;
  const json = { 'content-type': 'application/json' };
  for (let round = 0; round < 20; round++) {
    for (const body of [deepArrays(20_000), deepObjects(20_000)]) {
      const created = await api.post('/v1/requests', body);
      assert.deepEqual([created.status, created.body], [400, tooDeep]);
      const executed = await api.post('/v1/payments', body);
      assert.deepEqual([executed.status, executed.body], [400, tooDeep]);
      const page = await app.app.inject({ method: 'POST', url: `/pay/${request.id}`, headers: json, payload: body });
      assert.equal(page.statusCode, 400);
      assert.deepEqual(page.json(), tooDeep);
      for (const url of [
        '/sandbox-bank/token',
        '/sandbox-bank/domestic-payment-consents',
        '/sandbox-bank/test/latency',
      ]) {
        const bank = await app.app.inject({
          method: 'POST',
          url,
          headers: { ...json, authorization: SERVICE_BASIC },
          payload: body,
        });
        assert.equal(bank.statusCode, 400, url);
        assert.equal(bank.json().Errors[0].ErrorCode, 'Field.Invalid', url);
      }
    }
  }
  // still serving
  assert.equal((await api.get(`/v1/requests/${request.id}`)).status, 200);
});

test('the sandbox bank alone refuses deep bodies and NUL characters in its own error shape', async (t) => {
  const testDb = await freshDb();
  await migrateSandboxBank(testDb.db);
  const app = await buildSandboxBankApp({ db: testDb.db, zone: 'Pacific/Auckland', clients: () => [] });
  t.after(async () => {
    await app.close();
    await testDb.drop();
  });
  const deep = await app.inject({
    method: 'POST',
    url: '/domestic-payment-consents',
    headers: { 'content-type': 'application/json' },
    payload: deepArrays(20_000),
  });
  assert.equal(deep.statusCode, 400);
  assert.equal(deep.json().Errors[0].ErrorCode, 'Field.Invalid');
  const nul = await app.inject({ method: 'GET', url: '/authorize?consent_id=%00&redirect_uri=y&state=z' });
  assert.equal(nul.statusCode, 400);
  assert.deepEqual(nul.json().Errors[0], {
    ErrorCode: 'Field.Invalid',
    Message: 'consent_id must not contain NUL (\\u0000) characters',
    Path: 'consent_id',
  });
});
