import { createApiKey, listApiKeysOf, revokeApiKeyOf } from '../../merchants/merchants.service.ts';
import type { Kit, Scope, Signed } from '../dashboard.kit.ts';
import type { FastifyReply } from 'fastify';
import { text } from '../dashboard.format.ts';
import { holdForOneView, takeOneView } from '../dashboard.sessions.ts';

// API keys of the mode in the URL: prefix, created, last used; a new key is shown once; revoking
// one (after confirming) makes it fail with 401 at once.

const hidden = { schema: { hide: true } };

/** The merchant's key of this mode with this id, if any. */
const findKey = async (kit: Kit, signed: Signed, id: string) =>
  (await listApiKeysOf(kit.deps.db, signed.session.merchant.id, signed.mode)).find((key) => key.id === id);

const notFound = (kit: Kit, reply: FastifyReply, signed: Signed) =>
  kit.message(
    reply,
    404,
    'Not found',
    `There is nothing with that address in ${signed.mode} mode.`,
    signed,
    'api-keys',
  );

export function registerKeyPages(scope: Scope, kit: Kit): void {
  registerKeyList(scope, kit);
  registerKeyCreated(scope, kit);
  registerKeyRevoke(scope, kit);
}

/** The keys of the mode, and a new one. */
function registerKeyList(scope: Scope, kit: Kit): void {
  const deps = kit.deps;

  scope.get(
    '/dashboard/:mode/api-keys',
    hidden,
    kit.guard(async (request, reply, signed) => {
      const keys = await listApiKeysOf(deps.db, signed.session.merchant.id, signed.mode);
      const flash = text(request.query.done) === 'revoked' ? 'The key is revoked: calls with it now get 401.' : null;
      return kit.render(reply, 200, 'api-keys', {
        title: 'API keys',
        ...kit.layoutOf(signed, 'api-keys'),
        keys,
        flash,
      });
    }),
  );

  scope.post(
    '/dashboard/:mode/api-keys',
    hidden,
    kit.guard(
      async (_request, reply, signed) => {
        const key = await createApiKey(deps.db, deps.clock, signed.session.merchant.id, signed.mode, signed.ctx);
        // Post/redirect/get: only the key's hash is kept; the key itself waits, sealed, for one view.
        await holdForOneView(deps, signed.session, { kind: 'api_key', id: key.id, value: key });
        return reply.redirect(`${signed.base}/api-keys/${key.id}/created`, 303);
      },
      { post: true },
    ),
  );
}

/** The page after a key's creation: the key, once. */
function registerKeyCreated(scope: Scope, kit: Kit): void {
  const deps = kit.deps;

  scope.get(
    '/dashboard/:mode/api-keys/:id/created',
    hidden,
    kit.guard(async (request, reply, signed) => {
      if (!(await findKey(kit, signed, request.params.id))) return notFound(kit, reply, signed);
      const key = await takeOneView(deps, signed.session, 'api_key', request.params.id);
      if (!key)
        return kit.message(
          reply,
          200,
          'The key was already shown',
          'A new key is shown once, on the page right after it is created; only its hash is kept. Create another key if you need one, and revoke the one you cannot use.',
          signed,
          'api-keys',
        );
      return kit.render(reply, 200, 'api-key-created', {
        title: 'API key created',
        ...kit.layoutOf(signed, 'api-keys'),
        key,
      });
    }),
  );
}

/** Revoking a key, after confirming. */
function registerKeyRevoke(scope: Scope, kit: Kit): void {
  const deps = kit.deps;

  scope.get(
    '/dashboard/:mode/api-keys/:id/revoke',
    hidden,
    kit.guard(async (request, reply, signed) => {
      const key = await findKey(kit, signed, request.params.id);
      if (!key) return notFound(kit, reply, signed);
      return kit.render(reply, 200, 'confirm', {
        title: 'Revoke this key',
        ...kit.layoutOf(signed, 'api-keys'),
        heading: `Revoke the key ${key.hint}?`,
        consequence:
          'Every call with it is refused with 401 from now on. Anything still using it stops working. This cannot be undone.',
        action: `${signed.base}/api-keys/${key.id}/revoke`,
        confirm: 'Yes, revoke it',
        back: `${signed.base}/api-keys`,
      });
    }),
  );

  scope.post(
    '/dashboard/:mode/api-keys/:id/revoke',
    hidden,
    kit.guard(
      async (request, reply, signed) => {
        await revokeApiKeyOf(
          deps.db,
          deps.clock,
          signed.session.merchant.id,
          signed.mode,
          request.params.id,
          signed.ctx,
        );
        return reply.redirect(`${signed.base}/api-keys?done=revoked`, 303);
      },
      { post: true },
    ),
  );
}
