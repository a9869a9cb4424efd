import assert from 'node:assert/strict';
import { test } from 'node:test';
import { Type } from 'typebox';
import { buildTestApp, createTestMerchant } from '../../test/helpers.ts';
import { cachedSerializerCompiler, cachedValidatorCompiler } from './schema-compilers.ts';

const route = { method: 'GET', url: '/x' };

test('a schema compiles once a process: the same object or the same text finds what was compiled', () => {
  const schema = Type.Object({ n: Type.Integer(), s: Type.String() });
  const twin = Type.Object({ n: Type.Integer(), s: Type.String() });
  const serialize = cachedSerializerCompiler({ ...route, schema, httpStatus: '200' });
  assert.equal(cachedSerializerCompiler({ ...route, schema, httpStatus: '200' }), serialize);
  assert.equal(cachedSerializerCompiler({ ...route, schema: twin, httpStatus: '201' }), serialize);
  assert.equal(serialize({ n: 1, s: 'a', extra: true }), '{"n":1,"s":"a"}');
  const other = cachedSerializerCompiler({ ...route, schema: Type.Object({ n: Type.Integer() }), httpStatus: '200' });
  assert.notEqual(other, serialize);
  assert.equal(other({ n: 2, s: 'b' }), '{"n":2}');

  const validate = cachedValidatorCompiler({ ...route, schema, httpPart: 'querystring' });
  assert.equal(cachedValidatorCompiler({ ...route, schema: twin, httpPart: 'querystring' }), validate);
});

test('one schema object checking a body and a query string gets each part’s validator', () => {
  const schema = Type.Object({ n: Type.Integer() });
  const query = cachedValidatorCompiler({ ...route, schema, httpPart: 'querystring' }) as (data: unknown) => boolean;
  const body = cachedValidatorCompiler({ ...route, schema, httpPart: 'body' }) as (data: unknown) => boolean;
  assert.notEqual(query, body);
  // a query string's "5" is the number 5; a JSON body's "5" is a string, not an integer
  assert.equal(query({ n: '5' }), true);
  assert.equal(body({ n: '5' }), false);
  assert.equal(cachedValidatorCompiler({ ...route, schema, httpPart: 'querystring' }), query, 'each kept');
  assert.equal(cachedValidatorCompiler({ ...route, schema, httpPart: 'body' }), body);
});

test('a second app built in the same process answers as the first', async (t) => {
  for (const build of [1, 2]) {
    const app = await buildTestApp(t);
    const merchant = await createTestMerchant(app);
    const auth = { authorization: `Bearer ${merchant.testKey}` };
    const created = await app.app.inject({
      method: 'POST',
      url: '/v1/requests',
      headers: { ...auth, 'content-type': 'application/json' },
      payload: { amount: '12.50 NZD', message: `Build ${build}`, bank_account_id: merchant.bankAccountId },
    });
    assert.equal(created.statusCode, 201, created.body);
    assert.equal(created.json().request.amount.formatted, '$12.50', `build ${build}`);
    const refused = await app.app.inject({ method: 'GET', url: '/v1/requests?limit=1e3', headers: auth });
    assert.equal(refused.statusCode, 400, `build ${build}`);
    assert.equal(refused.json().code, 'bad_request.invalid_param.limit');
  }
});
