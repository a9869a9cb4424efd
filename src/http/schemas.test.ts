import { test } from 'node:test';
import assert from 'node:assert/strict';
import build from 'fast-json-stringify';
import fc from 'fast-check';
import Fastify from 'fastify';
import { Type } from 'typebox';
import { AmountObject, Nullable, refuseValidatingResponseSchemas, Timestamp, validatingKeywordIn } from './schemas.ts';
import { validatorCompiler } from './validation.ts';
import { RequestEnvelope } from '../modules/requests/requests.schemas.ts';

/** fast-json-stringify's own code for a schema: it embeds a validator only when it must run one as it writes. */
const needsValidator = (schema: object) =>
  (build(schema, { mode: 'standalone' }) as unknown as string).includes('validatorState');

test('Nullable writes a type list, or null among an enum, never an anyOf', () => {
  assert.deepEqual({ ...Nullable(Type.String()) }, { type: ['string', 'null'] });
  assert.deepEqual({ ...Nullable(Type.Integer()) }, { type: ['integer', 'null'] });
  assert.deepEqual({ ...Nullable(Timestamp) }, { ...Timestamp, type: ['string', 'null'] });
  assert.deepEqual({ ...Nullable(Type.Enum(['merchant', 'payer'])) }, { enum: ['merchant', 'payer', null] });
  const amount = Nullable(AmountObject) as unknown as { type: string[]; properties: object; title: string };
  assert.deepEqual(amount.type, ['object', 'null']);
  assert.equal(amount.title, 'Amount');
  assert.deepEqual(amount.properties, AmountObject.properties);
  assert.throws(() => Nullable(Type.Union([Type.String(), Type.Integer()])), /one type, or an enum/);
});

test('a nullable field takes its type or null, and nothing else, when validated', () => {
  const body = Type.Object({
    at: Nullable(Timestamp),
    amount: Nullable(AmountObject),
    by: Nullable(Type.Enum(['merchant', 'payer'])),
  });
  const validate = validatorCompiler({ schema: body, method: 'POST', url: '/', httpPart: 'body' }) as (
    data: unknown,
  ) => boolean;
  assert.equal(validate({ at: null, amount: null, by: null }), true);
  assert.equal(
    validate({ at: '2026-11-26T00:00:00.000Z', amount: { value: '1.00 NZD', formatted: '$1.00' }, by: 'payer' }),
    true,
  );
  assert.equal(validate({ at: 'yesterday', amount: null, by: null }), false);
  assert.equal(validate({ at: null, amount: { value: '1.00 NZD' }, by: null }), false);
  assert.equal(validate({ at: null, amount: null, by: 'bank' }), false);
});

test('the request object is written without a validator, and as JSON.stringify writes it, nulls or not', () => {
  assert.equal(needsValidator(RequestEnvelope), false);
  assert.equal(
    needsValidator(Type.Object({ x: Type.Union([Type.String(), Type.Null()]) })),
    true,
    'the check tells an anyOf apart',
  );
  const serialise = build(RequestEnvelope);
  const orNull = <T>(value: fc.Arbitrary<T>) => fc.option(value, { nil: null });
  const amount = fc.record({ value: fc.string(), formatted: fc.string() });
  const timestamp = fc
    .date({ min: new Date(0), max: new Date(4e12), noInvalidDate: true })
    .map((date) => date.toISOString());
  const text = fc.string({ unit: 'binary' });
  const request = fc.record({
    id: text,
    url: text,
    status: fc.constantFrom('active', 'paid', 'expired', 'deleted'),
    type: fc.constantFrom('single', 'multi'),
    message: text,
    amount: orNull(amount),
    bank_account_id: text,
    user_id: text,
    merchant_identifier: orNull(text),
    pcr: fc.record({ reference: text }),
    flow: text,
    qr_data: text,
    logo_image_url: orNull(text),
    banner_image_url: orNull(text),
    min_payment_amount: orNull(fc.integer()),
    max_payment_amount: orNull(fc.integer()),
    is_test_mode: fc.boolean(),
    is_donation: fc.boolean(),
    add_surcharge: fc.boolean(),
    surcharge_optional: fc.boolean(),
    allow_dynamic_amount: fc.boolean(),
    suggested_amounts: orNull(text),
    allow_marketing_opt_in: fc.boolean(),
    collect_customer_phone: fc.boolean(),
    require_customer_phone: fc.boolean(),
    require_customer_basic_info: fc.boolean(),
    require_customer_address: fc.boolean(),
    success_redirect_url: orNull(text),
    failure_redirect_url: orNull(text),
    created_at: timestamp,
    updated_at: timestamp,
    deleted_at: orNull(timestamp),
  });
  fc.assert(fc.property(request, (object) => serialise({ request: object }) === JSON.stringify({ request: object })));
});

test('a route whose response schema holds an anyOf, oneOf or if is refused as it is registered', async () => {
  assert.equal(validatingKeywordIn({ type: 'object', properties: { a: { type: ['string', 'null'] } } }), null);
  assert.equal(validatingKeywordIn({ properties: { a: { items: [{ oneOf: [] }] } } }), '#/properties/a/items/0/oneOf');
  // A field named like a keyword, and data that looks like one, are neither.
  assert.equal(
    validatingKeywordIn({
      type: 'object',
      properties: { if: { type: 'string' }, anyOf: { type: 'integer' } },
      examples: [{ oneOf: 1 }],
    }),
    null,
  );
  assert.equal(validatingKeywordIn({ properties: { if: { anyOf: [] } } }), '#/properties/if/anyOf');
  const app = Fastify();
  app.addHook('onRoute', refuseValidatingResponseSchemas);
  app.get('/fine', { schema: { response: { 200: Type.Object({ a: Nullable(Type.String()) }) } } }, async () => ({
    a: null,
  }));
  assert.throws(
    () =>
      app.get(
        '/union',
        { schema: { response: { 200: Type.Object({ a: Type.Union([Type.String(), Type.Null()]) }) } } },
        async () => ({ a: null }),
      ),
    /GET \/union: the 200 response schema has #\/properties\/a\/anyOf/,
  );
  const reply = await app.inject({ url: '/fine' });
  assert.equal(reply.body, '{"a":null}');
  await app.close();
});
