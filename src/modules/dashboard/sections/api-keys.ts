import {
  createApiKeyOf,
  isRollPeriod,
  listApiKeysOf,
  MAX_KEY_NAME_LENGTH,
  revokeApiKeyOf,
  rollApiKeyOf,
  type ApiKeySummary,
  type RollPeriod,
} from '../../merchants/merchants.service.ts';
import {
  describeRestriction,
  KEY_RESOURCES,
  normalisePermissions,
  parsePermissions,
  type KeyRestriction,
} from '../../merchants/key-scopes.rules.ts';
import { formOf, problemOf, type Kit, type Scope, type Signed } from '../dashboard.kit.ts';
import { formKeyOf, isSentBeforeWithOtherValues, newConfirmationKey, SENT_BEFORE } from '../dashboard.forms.ts';
import { idempotent } from '../../../http/idempotency.ts';
import type { FastifyReply } from 'fastify';
import { oneOf, text, texts } from '../dashboard.format.ts';
import { heldForOneView, holdForOneView, takeOneView } from '../dashboard.sessions.ts';

// API keys of the mode in the URL (docs/api-keys.md): each with its name, restriction, creator,
// creation, last use and, for a rolled key, when it stops. A new key is shown once; rolling one
// makes a new key with the same name and restriction and keeps the old one working for the period
// chosen; revoking one (after confirming) makes it fail with 401 at once.

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

const ACCESS_KINDS = ['full', 'read_only', 'limited'] as const;

/** The roll periods as the form offers them, in order. */
const ROLL_CHOICES: Array<{ value: RollPeriod; label: string }> = [
  { value: 'now', label: 'Stop the old key now' },
  { value: '1h', label: 'Keep the old key working for 1 hour' },
  { value: '24h', label: 'Keep the old key working for 24 hours' },
  { value: '3d', label: 'Keep the old key working for 3 days' },
  { value: '7d', label: 'Keep the old key working for 7 days' },
];

type KeyStatus = 'active' | 'expiring' | 'expired' | 'revoked';

function statusOf(key: ApiKeySummary, now: number): KeyStatus {
  if (key.revoked_at != null) return 'revoked';
  if (key.expires_at != null) return key.expires_at <= now ? 'expired' : 'expiring';
  return 'active';
}

/** What a rolled key's new key page says of the key it replaces. */
type Replaces = { id: string; hint: string; stopsAt: number; now: boolean };

/** The key a held new key replaces, when it was made by a roll. */
const replacedBy = (held: unknown): string | null =>
  (held as { replaces?: Partial<Replaces> } | null)?.replaces?.id ?? null;

type KeyFormValues = { name?: string; access?: string; permissions?: string[] };
type FormProblem = { input: string; message: string };

export function registerKeyPages(scope: Scope, kit: Kit): void {
  registerKeyList(scope, kit);
  registerKeyCreated(scope, kit);
  registerKeyRoll(scope, kit);
  registerKeyRevoke(scope, kit);
}

/**
 * What is wrong with the key's name, in the form's words, or null. Checked here rather than left
 * to the API, whose refusal names its own field, not the form's label.
 */
function problemOfName(name: string): FormProblem | null {
  if (!name) return { input: 'name', message: 'Give the key a name: say what uses it, e.g. "Shop server".' };
  if (name.length > MAX_KEY_NAME_LENGTH)
    return { input: 'name', message: `“Name” can be at most ${MAX_KEY_NAME_LENGTH} characters: shorten it.` };
  return null;
}

/** The restriction the form asks for, or what is wrong with it. */
function restrictionOfForm(access: string, permissions: string[]): KeyRestriction | FormProblem {
  if (access === 'full') return { kind: 'full' };
  if (access === 'read_only') return { kind: 'read_only' };
  if (access !== 'limited') return { input: 'access-full', message: 'Choose what the key may do.' };
  if (permissions.length === 0)
    return {
      input: 'perm-requests-read',
      message: 'Tick at least one permission for a restricted key, or choose read-only or full access.',
    };
  const parsed = parsePermissions(permissions.join(','));
  if (!Array.isArray(parsed)) return { input: 'perm-requests-read', message: `${parsed.error}.` };
  return { kind: 'limited', permissions: normalisePermissions(parsed) };
}

/** The keys of the mode, and a new one. */
function registerKeyList(scope: Scope, kit: Kit): void {
  const deps = kit.deps;

  const listPage = async (
    signed: Signed,
    values: KeyFormValues,
    error: FormProblem | null,
    formKey: string = newConfirmationKey(),
  ) => {
    const now = deps.clock.now();
    const keys = await listApiKeysOf(deps.db, signed.session.merchant.id, signed.mode);
    return {
      title: 'API keys',
      ...kit.layoutOf(signed, 'api-keys'),
      keys: keys.map((key) => ({
        ...key,
        status: statusOf(key, now),
        restrictionText: describeRestriction(key.restriction),
      })),
      resources: KEY_RESOURCES,
      maxNameLength: MAX_KEY_NAME_LENGTH,
      values,
      error,
      // The create form's one-time key: a second post of it leads to the key the first made.
      formKey,
    };
  };

  scope.get(
    '/dashboard/:mode/api-keys',
    hidden,
    kit.guard(
      async (request, reply, signed) => {
        const done = text(request.query.done);
        const flash = done === 'revoked' ? 'The key is revoked: calls with it now get 401.' : null;
        return kit.render(reply, 200, 'api-keys', { ...(await listPage(signed, {}, null)), flash });
      },
      { permission: 'read' },
    ),
  );

  scope.post(
    '/dashboard/:mode/api-keys',
    hidden,
    kit.guard(
      async (request, reply, signed) => {
        const form = formOf(request);
        // Not cut to the limit: a name over it is refused, not shortened without a word.
        const name = text(form.name, 1000);
        const access = oneOf(form.access, ACCESS_KINDS);
        const permissions = texts(form.permissions);
        const values = { name, access, permissions };
        const formKey = formKeyOf(form);
        const again = (problem: FormProblem, key = formKey ?? newConfirmationKey()) =>
          listPage(signed, values, problem, key).then((page) => kit.render(reply, 400, 'api-keys', page));
        const nameProblem = problemOfName(name);
        if (nameProblem) return again(nameProblem);
        const restriction = restrictionOfForm(access, permissions);
        if ('input' in restriction) return again(restriction);
        try {
          // Post/redirect/get: only the key's hash is kept; the key itself waits, sealed, for one
          // view, held in the transaction that makes it. A repeat of the form's key (a double
          // click) makes nothing and leads to the first's page, which shows the key if it has not
          // been shown yet: the key is not kept anywhere to be shown again.
          const made = await idempotent(
            signed.ctx,
            formKey ?? undefined,
            'dashboard POST /api-keys',
            { name, restriction },
            201,
            async (trx) => {
              const key = await createApiKeyOf({ ...signed.ctx, db: trx }, { name, restriction });
              await holdForOneView(deps, signed.session, { kind: 'api_key', id: key.id, value: key }, trx);
              return { id: key.id };
            },
          );
          return reply.redirect(`${signed.base}/api-keys/${made.body.id}/created`, 303);
        } catch (error) {
          if (isSentBeforeWithOtherValues(error))
            return again({ input: 'name', message: SENT_BEFORE }, newConfirmationKey());
          const problem = problemOf(error);
          if (problem)
            return again({ input: problem.field === 'name' ? 'name' : 'access-full', message: problem.message });
          throw error;
        }
      },
      { permission: 'api_keys.manage', post: true },
    ),
  );
}

/** The page after a key's creation or roll: the key, once. */
function registerKeyCreated(scope: Scope, kit: Kit): void {
  const deps = kit.deps;

  scope.get(
    '/dashboard/:mode/api-keys/:id/created',
    hidden,
    kit.guard(
      async (request, reply, signed) => {
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
      },
      { permission: 'api_keys.manage' },
    ),
  );
}

/** Rolling a key: the period the old one keeps working, confirmed on its own page. */
function registerKeyRoll(scope: Scope, kit: Kit): void {
  const deps = kit.deps;

  const rollPage = (signed: Signed, key: ApiKeySummary, period: string, error: string | null) => ({
    title: 'Roll this key',
    ...kit.layoutOf(signed, 'api-keys'),
    key: { ...key, restrictionText: describeRestriction(key.restriction) },
    choices: ROLL_CHOICES,
    period,
    error,
  });

  scope.get(
    '/dashboard/:mode/api-keys/:id/roll',
    hidden,
    kit.guard(
      async (request, reply, signed) => {
        const key = await findKey(kit, signed, request.params.id);
        if (!key) return notFound(kit, reply, signed);
        if (statusOf(key, deps.clock.now()) !== 'active')
          return kit.message(
            reply,
            409,
            'This key cannot be rolled',
            'Only an active key can be rolled: this one is revoked, expired or already rolled. Create a new key instead.',
            signed,
            'api-keys',
          );
        return kit.render(reply, 200, 'api-key-roll', rollPage(signed, key, '24h', null));
      },
      { permission: 'api_keys.manage' },
    ),
  );

  scope.post(
    '/dashboard/:mode/api-keys/:id/roll',
    hidden,
    kit.guard(
      async (request, reply, signed) => {
        const key = await findKey(kit, signed, request.params.id);
        if (!key) return notFound(kit, reply, signed);
        const period = text(formOf(request).period, 10);
        if (!isRollPeriod(period))
          return kit.render(
            reply,
            400,
            'api-key-roll',
            rollPage(signed, key, '24h', 'Choose how long the old key keeps working: at most 7 days.'),
          );
        try {
          // The new key is held for its one view in the roll's own transaction: a second post of
          // this form (a double click) that finds the key rolled already also finds its replacement.
          const rolled = await deps.store.transaction(async (trx) => {
            const made = await rollApiKeyOf({ ...signed.ctx, db: trx }, key.id, period);
            const replaces: Replaces = { id: key.id, hint: key.hint, stopsAt: made.old.stopsAt, now: period === 'now' };
            await holdForOneView(
              deps,
              signed.session,
              { kind: 'api_key', id: made.created.id, value: { ...made.created, replaces } },
              trx,
            );
            return made;
          });
          return reply.redirect(`${signed.base}/api-keys/${rolled.created.id}/created`, 303);
        } catch (error) {
          const problem = problemOf(error);
          if (!problem) throw error;
          // Rolled already by this session, its new key not yet seen: the page that shows it, once.
          const held =
            problem.code === 'conflict.invalid_state' ? await heldForOneView(deps, signed.session, 'api_key') : null;
          if (held && replacedBy(held.value) === key.id)
            return reply.redirect(`${signed.base}/api-keys/${held.id}/created`, 303);
          return kit.message(reply, 409, 'This key cannot be rolled', problem.message, signed, 'api-keys');
        }
      },
      { permission: 'api_keys.manage', post: true },
    ),
  );
}

/** Revoking a key, after confirming. */
function registerKeyRevoke(scope: Scope, kit: Kit): void {
  scope.get(
    '/dashboard/:mode/api-keys/:id/revoke',
    hidden,
    kit.guard(
      async (request, reply, signed) => {
        const key = await findKey(kit, signed, request.params.id);
        if (!key) return notFound(kit, reply, signed);
        return kit.render(reply, 200, 'confirm', {
          title: 'Revoke this key',
          ...kit.layoutOf(signed, 'api-keys'),
          heading: `Revoke the key ${key.hint} (${key.name})?`,
          consequence:
            'Every call with it is refused with 401 from now on. Anything still using it stops working. This cannot be undone.',
          action: `${signed.base}/api-keys/${key.id}/revoke`,
          confirm: 'Yes, revoke it',
          back: `${signed.base}/api-keys`,
        });
      },
      { permission: 'api_keys.manage' },
    ),
  );

  scope.post(
    '/dashboard/:mode/api-keys/:id/revoke',
    hidden,
    kit.guard(
      async (request, reply, signed) => {
        await revokeApiKeyOf(signed.ctx, request.params.id);
        return reply.redirect(`${signed.base}/api-keys?done=revoked`, 303);
      },
      { permission: 'api_keys.manage', post: true },
    ),
  );
}
