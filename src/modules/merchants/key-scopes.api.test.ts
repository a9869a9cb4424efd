import { test } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import { apiClient, buildTestApp, createTestMerchant, type TestApp } from '../../../test/helpers.ts';
import { createApiKey } from './merchants.service.ts';
import { KEY_RESOURCES, type KeyRestriction, type KeyResource, type Permission } from './key-scopes.rules.ts';

// Restricted API keys against every operation of the API description: a key restricted to another
// resource is refused 403 forbidden.key_scope before anything runs, and a key holding exactly the
// permission the operation declares (x-permission) is not refused. An operation without a declared
// permission fails here, and so does docs/api-keys.md when its list differs from the routes'.

type Operation = { method: string; path: string; permission: string | undefined; operationId: string };

const METHODS = ['get', 'post', 'put', 'patch', 'delete'] as const;

function operationsOf(document: any): Operation[] {
  const operations: Operation[] = [];
  for (const [path, item] of Object.entries(document.paths as Record<string, any>)) {
    for (const method of METHODS) {
      const operation = item[method];
      if (operation)
        operations.push({
          method: method.toUpperCase(),
          path,
          permission: operation['x-permission'],
          operationId: operation.operationId,
        });
    }
  }
  return operations;
}

/** A key of the merchant's test mode with this restriction. */
async function keyWith(app: TestApp, userId: string, restriction: KeyRestriction): Promise<string> {
  return (
    await createApiKey(
      app.deps.db,
      app.deps.clock,
      userId,
      'test',
      { name: 'Scoped', restriction },
      { actor: { kind: 'operator', name: 'test' } },
    )
  ).key;
}

/** The key that holds exactly the permission (`all:read`: read-only; `all:write`: full). */
function exactRestriction(permission: string): KeyRestriction {
  if (permission === 'all:read') return { kind: 'read_only' };
  if (permission === 'all:write') return { kind: 'full' };
  return { kind: 'limited', permissions: [permission as Permission] };
}

function otherResource(permission: string): KeyResource {
  return permission.startsWith('requests:') ? 'refunds' : 'requests';
}

const call = (app: TestApp, key: string, operation: Operation) =>
  app.app.inject({
    method: operation.method as 'GET',
    // Made-up ids: a permitted key gets 400 or 404 for them, never 403.
    url: operation.path.replace(/\{[a-z_]+\}/g, 'x'),
    headers: {
      authorization: `Bearer ${key}`,
      ...(operation.method === 'GET' || operation.method === 'DELETE' ? {} : { 'content-type': 'application/json' }),
    },
    payload: operation.method === 'GET' || operation.method === 'DELETE' ? undefined : '{}',
  });

test('every operation declares its permission; a key restricted elsewhere gets 403 forbidden.key_scope, a key with exactly that permission does not', async (t) => {
  const app = await buildTestApp(t);
  const merchant = await createTestMerchant(app);
  await app.app.ready();
  const operations = operationsOf(app.app.swagger());
  assert.ok(operations.length > 50, 'the whole API is walked');
  const undeclared = operations.filter((operation) => !operation.permission);
  assert.deepEqual(
    undeclared.map((operation) => `${operation.method} ${operation.path}`),
    [],
    'every operation declares config.keyScope (the resource it touches)',
  );
  const keys = new Map<string, string>();
  const keyFor = async (restriction: KeyRestriction) => {
    const name = JSON.stringify(restriction);
    if (!keys.has(name)) keys.set(name, await keyWith(app, merchant.userId, restriction));
    return keys.get(name)!;
  };
  const readOnly = await keyFor({ kind: 'read_only' });
  for (const operation of operations) {
    const permission = operation.permission!;
    const [resource, access] = permission.split(':');
    assert.ok(resource === 'all' || (KEY_RESOURCES as readonly string[]).includes(resource!), permission);
    const label = `${operation.method} ${operation.path} (${permission})`;

    const elsewhere = await keyFor({ kind: 'limited', permissions: [`${otherResource(permission)}:write`] });
    const refused = await call(app, elsewhere, operation);
    assert.equal(refused.statusCode, 403, `${label}: a key of another resource is refused`);
    const body = refused.json();
    assert.equal(body.code, 'forbidden.key_scope', label);
    assert.equal(body.params.needed, permission, label);
    assert.ok(body.message.includes(`it needs ${permission}`), `${label}: ${body.message}`);

    const exact = await call(app, await keyFor(exactRestriction(permission)), operation);
    assert.notEqual(exact.statusCode, 403, `${label}: the exact permission is enough (${exact.body})`);
    assert.notEqual(exact.statusCode, 401, label);

    const byReadOnly = await call(app, readOnly, operation);
    if (access === 'read') assert.notEqual(byReadOnly.statusCode, 403, `${label}: read-only reads`);
    else assert.equal(byReadOnly.statusCode, 403, `${label}: read-only does not write`);
    if (access === 'write' && resource !== 'all') {
      const readOfIt = await call(app, await keyFor(exactRestriction(`${resource}:read`)), operation);
      assert.equal(readOfIt.statusCode, 403, `${label}: read of the resource is not write`);
    }
  }
});

test('a refused call does nothing, names the missing permission, and the same key does what it may', async (t) => {
  const app = await buildTestApp(t);
  const merchant = await createTestMerchant(app);
  const refundsOnly = apiClient(
    app,
    await keyWith(app, merchant.userId, { kind: 'limited', permissions: ['refunds:write'] }),
  );
  const body = { bank_account_id: merchant.bankAccountId, amount: '12.50 NZD', message: 'Coffee' };
  const refused = await refundsOnly.post('/v1/requests', body);
  assert.deepEqual(
    [refused.status, refused.body],
    [
      403,
      {
        code: 'forbidden.key_scope',
        message: 'This key cannot write requests: it needs requests:write',
        params: { needed: 'requests:write' },
      },
    ],
  );
  const count = async () =>
    Number(
      (
        await app.deps.db
          .selectFrom('requests')
          .select((eb) => eb.fn.countAll().as('n'))
          .where('user_id', '=', merchant.userId)
          .executeTakeFirstOrThrow()
      ).n,
    );
  assert.equal(await count(), 0, 'nothing was created');
  assert.equal((await refundsOnly.get('/v1/refunds')).status, 200, 'write includes read');
  assert.equal((await refundsOnly.get('/v1/requests')).status, 403);

  const requestsWriter = apiClient(
    app,
    await keyWith(app, merchant.userId, { kind: 'limited', permissions: ['requests:write'] }),
  );
  assert.equal((await requestsWriter.post('/v1/requests', body)).status, 201);
  assert.equal(await count(), 1);
  // A full key (the merchant's first) is not restricted at all.
  assert.equal((await apiClient(app, merchant.testKey).get('/v1/test-helpers/clock')).status, 200);
  const clockByLimited = await requestsWriter.post('/v1/test-helpers/clock/advance', { seconds: 60 });
  assert.deepEqual(
    [clockByLimited.status, clockByLimited.body.message],
    [403, 'This key cannot write all resources: it needs all:write (a full-access key)'],
  );
});

test('docs/api-keys.md lists the resources and every operation with the permission the code declares', async (t) => {
  const app = await buildTestApp(t);
  const doc = fs.readFileSync('docs/api-keys.md', 'utf8');
  const documented = [...doc.matchAll(/^\| `(GET|POST|PUT|PATCH|DELETE) (\/v1\/[^`]+)` \| `([a-z]+:[a-z]+)` \|/gm)].map(
    (match) => `${match[1]} ${match[2]} ${match[3]}`,
  );
  await app.app.ready();
  const declared = operationsOf(app.app.swagger()).map(
    (operation) => `${operation.method} ${operation.path} ${operation.permission}`,
  );
  assert.deepEqual([...documented].sort(), [...declared].sort(), 'the route list of docs/api-keys.md');
  const resources = [...doc.matchAll(/^- `([a-z]+)`: /gm)].map((match) => match[1]);
  assert.deepEqual(resources, [...KEY_RESOURCES], 'the resource list of docs/api-keys.md');
});
