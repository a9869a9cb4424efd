import { test } from 'node:test';
import assert from 'node:assert/strict';
import fc from 'fast-check';
import {
  accessOf,
  allows,
  describeRestriction,
  KEY_RESOURCES,
  normalisePermissions,
  parsePermissions,
  permissionNeeded,
  refusalMessage,
  restrictionFromColumn,
  restrictionToColumn,
  type KeyAccess,
  type KeyRestriction,
  type Permission,
} from './key-scopes.rules.ts';

const resource = fc.constantFrom(...KEY_RESOURCES);
const access = fc.constantFrom<KeyAccess>('read', 'write');
const permission = fc.tuple(resource, access).map(([r, a]) => `${r}:${a}` as Permission);
const restriction: fc.Arbitrary<KeyRestriction> = fc.oneof(
  fc.constant({ kind: 'full' } as const),
  fc.constant({ kind: 'read_only' } as const),
  fc
    .array(permission, { minLength: 1, maxLength: 12 })
    .map((permissions) => ({ kind: 'limited' as const, permissions })),
);

test('a restriction stored and read back allows exactly what it allowed', () => {
  fc.assert(
    fc.property(restriction, resource, access, (given, r, a) => {
      const back = restrictionFromColumn(restrictionToColumn(given));
      assert.equal(allows(back, r, a), allows(given, r, a));
      assert.equal(describeRestriction(back), describeRestriction(given));
    }),
  );
});

test('a limited key allows a resource exactly when it holds it: write includes read, read never writes', () => {
  fc.assert(
    fc.property(fc.array(permission, { maxLength: 12 }), resource, access, (held, r, a) => {
      const expected = held.includes(`${r}:write`) || (a === 'read' && held.includes(`${r}:read`));
      assert.equal(allows({ kind: 'limited', permissions: held }, r, a), expected);
      assert.equal(allows({ kind: 'limited', permissions: held }, 'all', a), false, 'all needs read-only or full');
    }),
  );
  for (const r of [...KEY_RESOURCES, 'all' as const]) {
    assert.equal(allows({ kind: 'read_only' }, r, 'read'), true);
    assert.equal(allows({ kind: 'read_only' }, r, 'write'), false);
    assert.equal(allows({ kind: 'full' }, r, 'write'), true);
  }
});

test('a permission list parses to one permission per resource, and anything else is refused with the reason', () => {
  fc.assert(
    fc.property(fc.array(permission, { minLength: 1, maxLength: 12 }), (list) => {
      const parsed = parsePermissions(list.join(', '));
      assert.deepEqual(parsed, normalisePermissions(list));
      assert.equal(new Set((parsed as Permission[]).map((p) => p.split(':')[0])).size, (parsed as Permission[]).length);
    }),
  );
  assert.deepEqual(parsePermissions(''), { error: 'name at least one permission, e.g. requests:write' });
  for (const bad of ['money:read', 'requests', 'requests:delete', 'requests:read:x', 'all:write'])
    assert.ok('error' in (parsePermissions(bad) as object), bad);
  assert.deepEqual(
    restrictionFromColumn('nonsense'),
    { kind: 'limited', permissions: [] },
    'unreadable allows nothing',
  );
  assert.equal(
    describeRestriction({ kind: 'limited', permissions: ['refunds:read', 'requests:write'] }),
    'Read and write requests; read refunds',
  );
});

test('a route reads with GET or HEAD and writes otherwise, unless it says which', () => {
  assert.equal(accessOf({ resource: 'events' }, 'GET'), 'read');
  assert.equal(accessOf({ resource: 'events' }, 'HEAD'), 'read');
  for (const method of ['POST', 'PUT', 'PATCH', 'DELETE']) {
    assert.equal(accessOf({ resource: 'events' }, method), 'write');
    assert.equal(accessOf({ resource: 'events', access: 'read' }, method), 'read', `${method} declared a read`);
    assert.equal(permissionNeeded({ resource: 'events', access: 'read' }, method), 'events:read');
  }
  assert.equal(accessOf({ resource: 'all', access: 'write' }, 'GET'), 'write');
  assert.equal(
    refusalMessage({ resource: 'refunds' }, 'POST'),
    'This key cannot write refunds: it needs refunds:write',
  );
});
