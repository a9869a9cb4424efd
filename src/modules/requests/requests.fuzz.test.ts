import { test } from 'node:test';
import assert from 'node:assert/strict';
import fc from 'fast-check';
import { apiClient, buildTestApp, createTestMerchant } from '../../../test/helpers.ts';
import { assertErrorShape } from '../../../test/assertions.ts';

// Malformed bodies of every kind at POST /v1/requests: never a 5xx, always { code, message, params }.

const fieldNames = [
  'bank_account_id',
  'amount',
  'message',
  'type',
  'reference',
  'merchant_identifier',
  'expires_in',
  'allow_dynamic_amount',
  'suggested_amounts',
  'minimum_payment_amount',
  'maximum_payment_amount',
  'require_customer_basic_info',
  'collect_customer_phone',
  'require_customer_phone',
  'require_customer_address',
  'allow_marketing_opt_in',
  'is_donation',
  'add_surcharge',
  'surcharge_optional',
  'success_redirect_url',
  'failure_redirect_url',
  'logo_image_url',
  'banner_image_url',
  'recurring_options',
  'subscription_options',
  'cust_info',
];
const nested = [
  'period',
  'max_per_period',
  'max_per_payment',
  'total_count',
  'total_amount',
  'end_date',
  'start_date',
  'amount',
  'email',
  'phone',
];

const junk = fc.letrec((tie) => ({
  value: fc.oneof(
    { depthSize: 'small' },
    fc.string(),
    fc.string({ unit: 'grapheme' }),
    fc.integer(),
    fc.double(),
    fc.boolean(),
    fc.constant(null),
    fc.constantFrom(
      '10.00 NZD',
      '0.00 NZD',
      '5000.01 NZD',
      '1e400',
      '-0',
      '__proto__',
      'constructor',
      '2031-02-30',
      '99999999d',
      '\u0000',
      'http://localhost/x',
    ),
    fc.array(tie('value'), { maxLength: 4 }),
    fc.dictionary(fc.oneof(fc.string(), fc.constantFrom(...nested)), tie('value'), { maxKeys: 4 }),
  ),
}));

const almostValid = (bankAccountId: string) =>
  fc
    .record({
      base: fc.constant({ bank_account_id: bankAccountId, amount: '10.00 NZD', message: 'Fuzz' } as Record<
        string,
        unknown
      >),
      changes: fc.dictionary(fc.constantFrom(...fieldNames, '__proto__', 'extra'), junk.value, { maxKeys: 4 }),
      drop: fc.subarray(['bank_account_id', 'amount', 'message']),
    })
    .map(({ base, changes, drop }) => {
      const body: Record<string, unknown> = { ...base };
      for (const name of drop) delete body[name];
      for (const [name, value] of Object.entries(changes))
        Object.defineProperty(body, name, { value, enumerable: true, writable: true, configurable: true });
      return JSON.stringify(body);
    });

const text = fc.oneof(
  fc.json().map((value) => value),
  fc.string(),
  fc.string({ unit: 'binary' }),
  fc.constantFrom(
    '{',
    '{"a":',
    '[1,2',
    '{"amount":"10.00 NZD"',
    'undefined',
    'NaN',
    '{"message":"\\ud800"}',
    '\ufeff{}',
    '{"a":1}{"b":2}',
    '{"__proto__":{"x":1}}',
  ),
  fc.nat({ max: 40 }).map((depth) => '['.repeat(depth * 50) + ']'.repeat(depth * 50)),
  fc.nat({ max: 60 }).map((depth) => `${'{"a":'.repeat(depth * 20)}1${'}'.repeat(depth * 20)}`),
  fc.integer({ min: 90_000, max: 120_000 }).map((size) => JSON.stringify({ message: 'x'.repeat(size) })),
);

test('malformed bodies never cause a 5xx and always get the error shape', async (t) => {
  const app = await buildTestApp(t);
  const merchant = await createTestMerchant(app);
  const api = apiClient(app, merchant.testKey);
  const seen = new Map<string, number>();
  const check = async (payload: string, contentType = 'application/json') => {
    const response = await api.post('/v1/requests', payload, { headers: { 'content-type': contentType } });
    assert.ok(response.status < 500, `${response.status} for ${payload.slice(0, 200)}: ${response.text}`);
    if (response.status !== 201) {
      assertErrorShape(response);
      const family = response.body.code.split('.').slice(0, 2).join('.');
      seen.set(family, (seen.get(family) ?? 0) + 1);
    }
    return response;
  };
  await fc.assert(
    fc.asyncProperty(almostValid(merchant.bankAccountId), async (payload) => {
      await check(payload);
    }),
    { numRuns: 400 },
  );
  await fc.assert(
    fc.asyncProperty(text, async (payload) => {
      await check(payload);
    }),
    { numRuns: 300 },
  );
  // a valid body with one string field replaced by any text, control characters and NUL included
  const anyText = fc.oneof(
    fc.string({ unit: 'binary', maxLength: 80 }),
    fc.string({ unit: 'grapheme', maxLength: 80 }),
    fc.constantFrom('\u0000', 'a\u0000', '\ud83d'),
  );
  await fc.assert(
    fc.asyncProperty(
      fc.constantFrom('message', 'merchant_identifier', 'reference', 'bank_account_id', 'amount', 'expires_in'),
      anyText,
      async (field, value) => {
        await check(
          JSON.stringify({
            bank_account_id: merchant.bankAccountId,
            amount: '10.00 NZD',
            message: 'Fuzz',
            [field]: value,
          }),
        );
      },
    ),
    { numRuns: 300 },
  );
  await fc.assert(
    fc.asyncProperty(
      fc.constantFrom(
        'text/plain',
        'application/x-www-form-urlencoded',
        'application/octet-stream',
        'application/json; charset=latin1',
        'application/jsonx',
      ),
      fc.string(),
      async (type, payload) => {
        await check(payload, type);
      },
    ),
    { numRuns: 60 },
  );
  t.diagnostic(JSON.stringify(Object.fromEntries(seen)));
  // the fuzzing reached every family of refusal, not just one early check
  for (const family of [
    'bad_request.invalid_json',
    'bad_request.invalid_param',
    'bad_request.unknown_param',
    'bad_request.missing_param',
  ]) {
    assert.ok(
      [...seen.keys()].some((code) => code.startsWith(family)),
      `no ${family} seen: ${[...seen.keys()].join(', ')}`,
    );
  }
});
