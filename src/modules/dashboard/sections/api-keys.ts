import { createApiKey, listApiKeysOf, revokeApiKeyOf } from '../../merchants/merchants.service.ts';
import type { Kit, Scope, Signed } from '../dashboard.kit.ts';
import { text } from '../dashboard.format.ts';

// API keys of the mode in the URL: prefix, created, last used; a new key is shown once; revoking
// one (after confirming) makes it fail with 401 at once.

const hidden = { schema: { hide: true } };

export function registerKeyPages(scope: Scope, kit: Kit): void {
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
        const key = await createApiKey(deps.db, deps.clock, signed.session.merchant.id, signed.mode);
        // Only its hash is kept: this reply is the one time the key is seen.
        return kit.render(reply, 201, 'api-key-created', {
          title: 'API key created',
          ...kit.layoutOf(signed, 'api-keys'),
          key,
        });
      },
      { post: true },
    ),
  );

  const findKey = async (signed: Signed, id: string) =>
    (await listApiKeysOf(deps.db, signed.session.merchant.id, signed.mode)).find((key) => key.id === id);

  scope.get(
    '/dashboard/:mode/api-keys/:id/revoke',
    hidden,
    kit.guard(async (request, reply, signed) => {
      const key = await findKey(signed, request.params.id);
      if (!key)
        return kit.message(
          reply,
          404,
          'Not found',
          `There is nothing with that address in ${signed.mode} mode.`,
          signed,
          'api-keys',
        );
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
        await revokeApiKeyOf(deps.db, deps.clock, signed.session.merchant.id, signed.mode, request.params.id);
        return reply.redirect(`${signed.base}/api-keys?done=revoked`, 303);
      },
      { post: true },
    ),
  );
}
