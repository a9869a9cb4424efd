// What an API key may do (docs/api-keys.md). A key is full, read-only, or limited to chosen
// resources, each read or write; write includes read of the same resource. Every /v1 route
// declares the resource it touches (`config.keyScope`), and whether it reads or writes when its
// method does not say (GET reads, anything else writes). The key check compares the two.

export const KEY_RESOURCES = [
  'requests',
  'payments',
  'refunds',
  'reconciliation',
  'receipts',
  'customers',
  'subscriptions',
  'consents',
  'webhooks',
  'events',
  'audit',
] as const;

export type KeyResource = (typeof KEY_RESOURCES)[number];
export type KeyAccess = 'read' | 'write';
export type Permission = `${KeyResource}:${KeyAccess}`;

/**
 * What a route needs. `all` is for the test helpers that act on every resource at once (the test
 * clock, deleting all test data): reading it takes a read-only or full key, writing it a full key.
 */
export type KeyScope = { resource: KeyResource | 'all'; access?: KeyAccess };

export type KeyRestriction = { kind: 'full' } | { kind: 'read_only' } | { kind: 'limited'; permissions: Permission[] };

export const FULL_ACCESS: KeyRestriction = { kind: 'full' };

const READ_ONLY_COLUMN = 'read_only';

const isResource = (value: string): value is KeyResource => (KEY_RESOURCES as readonly string[]).includes(value);

/** The access a route needs: its own word, or its method's (GET and HEAD read). */
export function accessOf(scope: KeyScope, method: string): KeyAccess {
  return scope.access ?? (method === 'GET' || method === 'HEAD' ? 'read' : 'write');
}

/** The permission a route needs, as the docs and the error name it: `refunds:write`, `all:read`. */
export function permissionNeeded(scope: KeyScope, method: string): string {
  return `${scope.resource}:${accessOf(scope, method)}`;
}

/** One permission per resource (write includes read), in the order of KEY_RESOURCES. */
export function normalisePermissions(permissions: Iterable<Permission>): Permission[] {
  const byResource = new Map<KeyResource, KeyAccess>();
  for (const permission of permissions) {
    const [resource, access] = permission.split(':') as [KeyResource, KeyAccess];
    if (byResource.get(resource) !== 'write') byResource.set(resource, access);
  }
  return KEY_RESOURCES.filter((resource) => byResource.has(resource)).map(
    (resource) => `${resource}:${byResource.get(resource)!}` as Permission,
  );
}

/** Whether a key with this restriction may make a call that needs `access` to `resource`. */
export function allows(restriction: KeyRestriction, resource: KeyResource | 'all', access: KeyAccess): boolean {
  if (restriction.kind === 'full') return true;
  if (restriction.kind === 'read_only') return access === 'read';
  if (resource === 'all') return false;
  return restriction.permissions.some(
    (permission) => permission === `${resource}:write` || permission === `${resource}:${access}`,
  );
}

/** The sentence of a refused call (403 forbidden.key_scope). */
export function refusalMessage(scope: KeyScope, method: string): string {
  const access = accessOf(scope, method);
  const needed = permissionNeeded(scope, method);
  if (scope.resource === 'all')
    return access === 'read'
      ? `This key cannot read all resources: it needs ${needed} (a read-only or full-access key)`
      : `This key cannot write all resources: it needs ${needed} (a full-access key)`;
  return `This key cannot ${access} ${scope.resource}: it needs ${needed}`;
}

/** As stored in api_keys.permissions: null for full, `read_only`, or a comma-separated list. */
export function restrictionToColumn(restriction: KeyRestriction): string | null {
  if (restriction.kind === 'full') return null;
  if (restriction.kind === 'read_only') return READ_ONLY_COLUMN;
  return normalisePermissions(restriction.permissions).join(',');
}

/** Read back from api_keys.permissions; anything unreadable allows nothing rather than everything. */
export function restrictionFromColumn(value: string | null): KeyRestriction {
  if (value == null) return FULL_ACCESS;
  if (value === READ_ONLY_COLUMN) return { kind: 'read_only' };
  const parsed = parsePermissions(value);
  return { kind: 'limited', permissions: Array.isArray(parsed) ? parsed : [] };
}

/** `requests:write,refunds:read` as permissions, or what is wrong with the list. */
export function parsePermissions(text: string): Permission[] | { error: string } {
  const items = text
    .split(',')
    .map((item) => item.trim())
    .filter(Boolean);
  if (items.length === 0) return { error: 'name at least one permission, e.g. requests:write' };
  const permissions: Permission[] = [];
  for (const item of items) {
    const [resource, access, extra] = item.split(':');
    if (!resource || !isResource(resource) || (access !== 'read' && access !== 'write') || extra !== undefined)
      return {
        error: `${item} is not a permission: use resource:read or resource:write, the resource one of ${KEY_RESOURCES.join(', ')}`,
      };
    permissions.push(`${resource}:${access}`);
  }
  return normalisePermissions(permissions);
}

/** The restriction in words, for the keys page and the CLI. */
export function describeRestriction(restriction: KeyRestriction): string {
  if (restriction.kind === 'full') return 'Full access';
  if (restriction.kind === 'read_only') return 'Read-only';
  const permissions = normalisePermissions(restriction.permissions);
  if (permissions.length === 0) return 'No access';
  const of = (access: KeyAccess) =>
    permissions.filter((permission) => permission.endsWith(`:${access}`)).map((p) => p.split(':')[0]);
  const written = of('write');
  const read = of('read');
  return [
    written.length > 0 ? `read and write ${written.join(', ')}` : null,
    read.length > 0 ? `read ${read.join(', ')}` : null,
  ]
    .filter(Boolean)
    .join('; ')
    .replace(/^./, (first) => first.toUpperCase());
}
