import { randomUUID } from 'node:crypto';
import type { Origin } from '../../context.ts';
import type { FastifyReply, FastifyRequest } from 'fastify';
import { clientKey, retryAfterSeconds } from '../../../http/failure-limiter.ts';
import { text } from '../dashboard.format.ts';
import { formOf, originOf, PRE_SESSION_COOKIE, SESSION_COOKIE, type Kit, type Scope } from '../dashboard.kit.ts';
import {
  holdForOneView,
  recordFailedSignIn,
  SESSION_MAX_MS,
  startSession,
  sessionOf,
  takeOneView,
  type DashboardSession,
} from '../dashboard.sessions.ts';
import {
  confirmTwoFactorEnrolment,
  enrolmentOf,
  makeNewRecoveryCodes,
  memberOf,
  passSignInWithCode,
  passSignInWithSetup,
  PENDING_SIGN_IN_MS,
  pendingSignInOf,
  rememberNextPath,
  setTeamTwoFactorRequirement,
  turnOffTwoFactor,
  twoFactorStatus,
  type CodeRefusal,
  type PendingSignIn,
  type SecondStep,
} from '../dashboard.two-factor.ts';
import { liveMemberById } from '../../team/team.service.ts';
import {
  addPasskey,
  hasPasskeys,
  passkeyRegistrationOptions,
  passkeysAvailable,
  passkeysOf,
  passkeySignInOptions,
  passSignInWithPasskey,
  removePasskey,
  type PasskeyRefusal,
} from '../dashboard.passkeys.ts';

// Two-factor sign-in's pages (docs/team.md): the code page and the required set-up between the
// password and the session, and on the account page setting it up, new recovery codes, turning it
// off and the team's requirement. Pages before sign-in carry the pre-session CSRF token; the
// others, the session's.

const hidden = { schema: { hide: true } };
/** The pending sign-in's token, for 5 minutes, only under /dashboard. */
export const PENDING_COOKIE = 'tono_dash_2fa';
const CODE_PAGE = '/dashboard/login/two-factor';
const SETUP_PAGE = '/dashboard/login/two-factor/setup';
const ACCOUNT = '/dashboard/account';

const minutes = (ms: number) => Math.max(1, Math.ceil(ms / 60_000));

/** The sentence for a code that was not taken, and its status. */
function refusalOf(reply: FastifyReply, refusal: CodeRefusal, recoveryToo: boolean): { status: number; error: string } {
  switch (refusal.kind) {
    case 'malformed':
      return {
        status: 400,
        error: recoveryToo
          ? 'Enter the 6-digit code your authenticator app shows, or one of your recovery codes.'
          : 'Enter the 6-digit code your authenticator app shows.',
      };
    case 'wrong':
      return {
        status: 400,
        error: 'That code is not right, or it was used already. Enter the code your app shows now.',
      };
    case 'limited':
      reply.header('retry-after', String(retryAfterSeconds(refusal.retryAfterMs)));
      return {
        status: 429,
        error: `Too many wrong codes. Codes are refused for ${minutes(refusal.retryAfterMs)} minutes.`,
      };
    case 'expired':
      return { status: 400, error: 'This sign-in took longer than 5 minutes. Log in again.' };
  }
}

/**
 * After a right password, for the login route: the pending sign-in's cookie, and on to the code
 * page or the set-up the team requires. `nextPath` is the page to go on to, already checked.
 */
export async function continueToSecondStep(
  kit: Kit,
  reply: FastifyReply,
  outcome: SecondStep,
  nextPath: string,
): Promise<FastifyReply> {
  await rememberNextPath(kit.deps, outcome.pendingToken, nextPath);
  reply.setCookie(PENDING_COOKIE, outcome.pendingToken, { ...kit.cookieOptions(), maxAge: PENDING_SIGN_IN_MS / 1000 });
  return reply.redirect(outcome.step === 'code' ? CODE_PAGE : SETUP_PAGE, 303);
}

/** What the account page shows of two-factor sign-in: its state, the team's requirement, and what just changed. */
export async function twoFactorAccountView(kit: Kit, session: DashboardSession, done: unknown) {
  const notices: Record<string, string> = {
    'two-factor-off': 'Two-factor sign-in is off.',
    'two-factor-required':
      'Your team now needs two-factor sign-in: members without it set it up when they next log in.',
    'two-factor-not-required': 'Your team no longer needs two-factor sign-in.',
    'two-factor-own-first':
      'Set up two-factor sign-in for yourself first; then you can require it for your team. Nothing was changed.',
    'passkey-added': 'The passkey is added: you can use it instead of a code when you log in.',
    'passkey-removed': 'The passkey is removed.',
  };
  return {
    ...(await twoFactorStatus(kit.deps, memberOf(session))),
    passkeys: await passkeysOf(kit.deps, memberOf(session)),
    passkeysAvailable: passkeysAvailable(kit.deps),
    notice: notices[text(done)] ?? null,
  };
}

export function registerTwoFactorPages(scope: Scope, kit: Kit): void {
  registerSignInCode(scope, kit);
  registerSignInSetup(scope, kit);
  registerAccountSetup(scope, kit);
  registerAccountChanges(scope, kit);
  registerTeamRequirement(scope, kit);
  registerPasskeyAdding(scope, kit);
  registerPasskeyRemoval(scope, kit);
}

/** Opens the session once the second step has passed, and goes on to `to`. */
async function openSignedInSession(
  kit: Kit,
  request: FastifyRequest,
  reply: FastifyReply,
  memberId: string,
): Promise<{ sessionId: string } | null> {
  const member = await liveMemberById(kit.deps.db, memberId);
  if (!member) return null;
  const sessionId = await startSession(kit.deps, member, {
    origin: originOf(request),
    previousSessionId: request.cookies[SESSION_COOKIE],
  });
  reply.setCookie(SESSION_COOKIE, sessionId, { ...kit.cookieOptions(), maxAge: SESSION_MAX_MS / 1000 });
  reply.clearCookie(PENDING_COOKIE, kit.cookieOptions());
  reply.clearCookie(PRE_SESSION_COOKIE, kit.cookieOptions());
  return { sessionId };
}

const NO_LONGER_A_MEMBER = 'You are no longer a member of this team.';

/** A pending sign-in that ended while its page was open (5 minutes, or spent in another tab). */
function loginAgain(kit: Kit, reply: FastifyReply, error: string): FastifyReply {
  reply.clearCookie(PENDING_COOKIE, kit.cookieOptions());
  return kit.message(reply, 400, 'Log in again', error);
}

/** The pending sign-in of this step; otherwise on to its own step's page, or the login page again. */
async function pendingOr(
  kit: Kit,
  request: FastifyRequest,
  reply: FastifyReply,
  step: PendingSignIn['step'],
): Promise<PendingSignIn | null> {
  const pending = await pendingSignInOf(kit.deps, request.cookies[PENDING_COOKIE]);
  if (pending?.step === step) return pending;
  // The other step's page is where this sign-in goes on; with none live, the login page.
  if (pending) await reply.redirect(pending.step === 'code' ? CODE_PAGE : SETUP_PAGE, 303);
  else {
    reply.clearCookie(PENDING_COOKIE, kit.cookieOptions());
    await reply.redirect('/dashboard/login', 303);
  }
  return null;
}

/** The code page: an authenticator code or a recovery code after the password. */
function registerSignInCode(scope: Scope, kit: Kit): void {
  const page = async (
    request: FastifyRequest,
    reply: FastifyReply,
    pending: PendingSignIn,
    status: number,
    error: string | null,
  ) =>
    kit.render(reply, status, 'two-factor-code', {
      title: 'Enter your code',
      csrf: kit.preSessionCsrf.token(request, reply),
      passkeys: await hasPasskeys(kit.deps, pending.member.memberId),
      error,
    });

  scope.get(CODE_PAGE, hidden, async (request, reply) => {
    const pending = await pendingOr(kit, request, reply, 'code');
    if (!pending) return reply;
    return page(request, reply, pending, 200, null);
  });

  scope.post(CODE_PAGE, hidden, async (request, reply) => {
    if (!kit.preSessionCsrf.valid(request)) return kit.forbidden(reply);
    const pending = await pendingOr(kit, request, reply, 'code');
    if (!pending) return reply;
    const outcome = await passSignInWithCode(kit.deps, pending, formOf(request).code, clientKey(request.ip));
    if (outcome.kind === 'wrong') await recordFailedSignIn(kit.deps, pending.member.email, originOf(request), 'code');
    if (outcome.kind !== 'passed') {
      const refused = refusalOf(reply, outcome, true);
      if (outcome.kind === 'expired') return loginAgain(kit, reply, refused.error);
      return page(request, reply, pending, refused.status, refused.error);
    }
    if (!(await openSignedInSession(kit, request, reply, outcome.memberId)))
      return loginAgain(kit, reply, NO_LONGER_A_MEMBER);
    return reply.redirect(pending.nextPath, 303);
  });

  // Signing in with a passkey instead of a code: the page's script asks for the options, has the
  // browser sign the challenge, and posts the answer; each answer is JSON the script acts on.
  scope.post(`${CODE_PAGE}/passkey/options`, hidden, async (request, reply) => {
    if (!kit.preSessionCsrf.valid(request)) return kit.forbidden(reply);
    const pending = await pendingSignInOf(kit.deps, request.cookies[PENDING_COOKIE]);
    const options = pending ? await passkeySignInOptions(kit.deps, pending) : null;
    if (!options) return reply.code(400).send({ error: 'This sign-in took longer than 5 minutes. Log in again.' });
    return reply.send(options);
  });

  scope.post(`${CODE_PAGE}/passkey`, hidden, async (request, reply) => {
    if (!kit.preSessionCsrf.valid(request)) return kit.forbidden(reply);
    const pending = await pendingSignInOf(kit.deps, request.cookies[PENDING_COOKIE]);
    if (!pending) return reply.code(400).send({ error: 'This sign-in took longer than 5 minutes. Log in again.' });
    const outcome = await passSignInWithPasskey(kit.deps, pending, formOf(request).response, clientKey(request.ip));
    if (outcome.kind === 'wrong')
      await recordFailedSignIn(kit.deps, pending.member.email, originOf(request), 'passkey');
    if (outcome.kind !== 'passed') {
      if (outcome.kind === 'wrong')
        return reply.code(400).send({ error: 'That passkey did not sign in. Try again, or enter a code.' });
      return reply.code(refusalOf(reply, outcome, true).status).send({ error: refusalOf(reply, outcome, true).error });
    }
    if (!(await openSignedInSession(kit, request, reply, outcome.memberId)))
      return reply.code(400).send({ error: NO_LONGER_A_MEMBER });
    return reply.send({ redirect: pending.nextPath });
  });
}

/** Set-up the team requires, before the session opens: the member can do nothing else until it is done. */
function registerSignInSetup(scope: Scope, kit: Kit): void {
  const page = async (
    request: FastifyRequest,
    reply: FastifyReply,
    pending: PendingSignIn,
    status: number,
    error: string | null,
  ) => {
    const enrolment = await enrolmentOf(kit.deps, pending.member);
    if (!enrolment) return reply.redirect('/dashboard/login', 303);
    return kit.render(reply, status, 'two-factor-setup', {
      title: 'Set up two-factor sign-in',
      csrf: kit.preSessionCsrf.token(request, reply),
      action: SETUP_PAGE,
      requiredByTeam: true,
      enrolment,
      error,
    });
  };

  scope.get(SETUP_PAGE, hidden, async (request, reply) => {
    const pending = await pendingOr(kit, request, reply, 'setup');
    if (!pending) return reply;
    return page(request, reply, pending, 200, null);
  });

  scope.post(SETUP_PAGE, hidden, async (request, reply) => {
    if (!kit.preSessionCsrf.valid(request)) return kit.forbidden(reply);
    const pending = await pendingOr(kit, request, reply, 'setup');
    if (!pending) return reply;
    const outcome = await passSignInWithSetup(
      kit.deps,
      pending,
      formOf(request).code,
      clientKey(request.ip),
      originOf(request),
    );
    if (outcome.kind !== 'passed') {
      const refused = refusalOf(reply, outcome, false);
      if (outcome.kind === 'expired') return loginAgain(kit, reply, refused.error);
      return page(request, reply, pending, refused.status, refused.error);
    }
    const opened = await openSignedInSession(kit, request, reply, outcome.memberId);
    if (!opened) return loginAgain(kit, reply, NO_LONGER_A_MEMBER);
    return showRecoveryCodesNext(kit, reply, opened.sessionId, outcome.recoveryCodes);
  });
}

/** Post/redirect/get: the new codes wait, sealed in the session, for the one page view after the redirect. */
async function showRecoveryCodesNext(
  kit: Kit,
  reply: FastifyReply,
  sessionOrId: DashboardSession | string,
  codes: string[],
): Promise<FastifyReply> {
  const session = typeof sessionOrId === 'string' ? await sessionOf(kit.deps, sessionOrId) : sessionOrId;
  if (!session) throw new Error('the session just opened is not live');
  const id = randomUUID();
  await holdForOneView(kit.deps, session, { kind: 'recovery_codes', id, value: codes });
  return reply.redirect(`${ACCOUNT}/two-factor/recovery-codes/${id}`, 303);
}

type AccountHandler = (request: FastifyRequest, reply: FastifyReply, session: DashboardSession) => Promise<unknown>;

/**
 * An account page through the account guard: signed out leads to the login page, a post needs this
 * session's CSRF token. A member's own second step is theirs to manage whatever their role (`read`);
 * the team's requirement is the owner's.
 */
function accountPage(
  kit: Kit,
  handler: AccountHandler,
  options: { post?: boolean; permission?: 'read' | 'team.two_factor' } = {},
) {
  return kit.accountGuard((request, reply, signed) => handler(request, reply, signed.session), {
    permission: options.permission ?? 'read',
    post: options.post ?? false,
  });
}

/** Setting up two-factor sign-in from the account page, and the recovery codes shown once. */
function registerAccountSetup(scope: Scope, kit: Kit): void {
  const page = async (reply: FastifyReply, session: DashboardSession, status: number, error: string | null) => {
    const enrolment = await enrolmentOf(kit.deps, memberOf(session));
    if (!enrolment) return reply.redirect(ACCOUNT, 303);
    return kit.render(reply, status, 'two-factor-setup', {
      title: 'Set up two-factor sign-in',
      session,
      csrf: session.csrfToken,
      action: `${ACCOUNT}/two-factor/setup`,
      requiredByTeam: false,
      enrolment,
      error,
    });
  };

  scope.get(
    `${ACCOUNT}/two-factor/setup`,
    hidden,
    accountPage(kit, (_request, reply, session) => page(reply, session, 200, null)),
  );

  scope.post(
    `${ACCOUNT}/two-factor/setup`,
    hidden,
    accountPage(
      kit,
      async (request, reply, session) => {
        const outcome = await confirmTwoFactorEnrolment(
          kit.deps,
          memberOf(session),
          formOf(request).code,
          clientKey(request.ip),
          originOf(request),
        );
        if (outcome.kind !== 'enabled') {
          const refused = refusalOf(reply, outcome, false);
          return page(reply, session, refused.status, refused.error);
        }
        return showRecoveryCodesNext(kit, reply, session, outcome.recoveryCodes);
      },
      { post: true },
    ),
  );

  scope.get<{ Params: { id: string } }>(
    `${ACCOUNT}/two-factor/recovery-codes/:id`,
    hidden,
    accountPage(kit, async (request, reply, session) => {
      const id = (request.params as { id: string }).id;
      const codes = await takeOneView(kit.deps, session, 'recovery_codes', id);
      if (!Array.isArray(codes))
        return kit.render(reply, 404, 'message', {
          title: 'Recovery codes',
          session,
          heading: 'These recovery codes were already shown',
          text: 'Recovery codes are shown once, right after they are made; only their hashes are kept. If you did not keep them, make a new set from your account page.',
          base: ACCOUNT,
        });
      return kit.render(reply, 200, 'two-factor-recovery', { title: 'Your recovery codes', session, codes });
    }),
  );
}

/** New recovery codes, and turning it off: each with a current code. */
function registerAccountChanges(scope: Scope, kit: Kit): void {
  const withCode = (
    path: string,
    copy: { title: string; heading: string; consequence: string; confirm: string; confirmClass: string },
    act: (
      session: DashboardSession,
      code: unknown,
      client: string,
      origin: Origin,
    ) => ReturnType<typeof makeNewRecoveryCodes | typeof turnOffTwoFactor>,
    done: (reply: FastifyReply, session: DashboardSession, outcome: any) => Promise<unknown>,
  ) => {
    const page = async (reply: FastifyReply, session: DashboardSession, status: number, error: string | null) => {
      if (!(await twoFactorStatus(kit.deps, memberOf(session))).enabled) return reply.redirect(ACCOUNT, 303);
      return kit.render(reply, status, 'two-factor-confirm', {
        ...copy,
        session,
        csrf: session.csrfToken,
        action: path,
        error,
      });
    };
    scope.get(
      path,
      hidden,
      accountPage(kit, (_request, reply, session) => page(reply, session, 200, null)),
    );
    scope.post(
      path,
      hidden,
      accountPage(
        kit,
        async (request, reply, session) => {
          const outcome = await act(session, formOf(request).code, clientKey(request.ip), originOf(request));
          if (outcome.kind === 'required')
            return page(reply, session, 409, 'Your team requires two-factor sign-in, so it cannot be turned off.');
          if (outcome.kind === 'made' || outcome.kind === 'off') return done(reply, session, outcome);
          const refused = refusalOf(reply, outcome, true);
          return page(reply, session, refused.status, refused.error);
        },
        { post: true },
      ),
    );
  };

  withCode(
    `${ACCOUNT}/two-factor/new-recovery-codes`,
    {
      title: 'Make new recovery codes',
      heading: 'Make new recovery codes',
      consequence:
        'Ten new codes replace your old ones: the old ones stop working at once. Enter a code from your authenticator app (or an unused recovery code) to go on.',
      confirm: 'Make new codes',
      confirmClass: 'primary',
    },
    (session, code, client, origin) => makeNewRecoveryCodes(kit.deps, memberOf(session), code, client, origin),
    (reply, session, outcome) => showRecoveryCodesNext(kit, reply, session, outcome.recoveryCodes),
  );

  withCode(
    `${ACCOUNT}/two-factor/off`,
    {
      title: 'Turn off two-factor sign-in',
      heading: 'Turn off two-factor sign-in',
      consequence:
        'Logging in will need only your password. Your authenticator and your recovery codes stop working. Enter a code from your authenticator app (or an unused recovery code) to go on.',
      confirm: 'Turn it off',
      confirmClass: 'danger',
    },
    (session, code, client, origin) => turnOffTwoFactor(kit.deps, memberOf(session), code, client, origin),
    async (reply) => reply.redirect(`${ACCOUNT}?done=two-factor-off`, 303),
  );
}

/** The team's requirement (only the owner may change it, once the dashboard has roles). */
function registerTeamRequirement(scope: Scope, kit: Kit): void {
  scope.post(
    `${ACCOUNT}/two-factor/requirement`,
    hidden,
    accountPage(
      kit,
      async (request, reply, session) => {
        const required = text(formOf(request).required);
        if (required !== 'yes' && required !== 'no')
          return kit.message(
            reply,
            400,
            'Nothing was changed',
            'Choose whether your team requires two-factor sign-in.',
          );
        const outcome = await setTeamTwoFactorRequirement(
          kit.deps,
          memberOf(session),
          required === 'yes',
          originOf(request),
        );
        const done =
          outcome.kind === 'own_first'
            ? 'two-factor-own-first'
            : required === 'yes'
              ? 'two-factor-required'
              : 'two-factor-not-required';
        return reply.redirect(`${ACCOUNT}?done=${done}`, 303);
      },
      { post: true, permission: 'team.two_factor' },
    ),
  );
}

/** The sentence for a passkey that was not added. */
function passkeyRefusalText(refusal: PasskeyRefusal): string {
  switch (refusal.kind) {
    case 'no_host_name':
      return 'Passkeys need the dashboard at a host name (PUBLIC_BASE_URL), not an IP address.';
    case 'not_enabled':
      return 'Set up two-factor sign-in with an authenticator app first; a passkey is a second way to give your second step.';
    case 'too_many':
      return 'You have 10 passkeys, the most one member may keep. Remove one first.';
    case 'bad_name':
      return 'Give the passkey a name of up to 60 characters, so you can tell it from others.';
    case 'not_verified':
      return 'Your browser’s answer did not verify, or took longer than 5 minutes. Nothing was added; try again.';
  }
}

// Every kind of CodeRefusal, so that a new one cannot be missed here.
const CODE_REFUSALS: Record<CodeRefusal['kind'], true> = { malformed: true, wrong: true, limited: true, expired: true };
const isCodeRefusal = (outcome: { kind: string }): outcome is CodeRefusal => Object.hasOwn(CODE_REFUSALS, outcome.kind);

/**
 * Adding a passkey from the account page (with the page's script) and removing one. Both change the
 * second step, so both need a current code or an unused recovery code, as new recovery codes do: a
 * session left open is not enough. Adding takes it with the options (the challenge is kept only
 * once the code is right); removing, on its own confirmation page.
 */
function registerPasskeyAdding(scope: Scope, kit: Kit): void {
  scope.post(
    `${ACCOUNT}/passkeys/options`,
    hidden,
    accountPage(
      kit,
      async (request, reply, session) => {
        const options = await passkeyRegistrationOptions(kit.deps, memberOf(session), {
          rawCode: formOf(request).code,
          client: clientKey(request.ip),
          origin: originOf(request),
        });
        if ('kind' in options) {
          if (!isCodeRefusal(options)) return reply.code(409).send({ error: passkeyRefusalText(options) });
          const refused = refusalOf(reply, options, true);
          return reply.code(refused.status).send({ error: `${refused.error} Nothing was added.` });
        }
        return reply.send(options);
      },
      { post: true },
    ),
  );

  scope.post(
    `${ACCOUNT}/passkeys`,
    hidden,
    accountPage(
      kit,
      async (request, reply, session) => {
        const form = formOf(request);
        const outcome = await addPasskey(
          kit.deps,
          memberOf(session),
          { response: form.response, name: form.name },
          originOf(request),
        );
        if (outcome.kind !== 'added') return reply.code(400).send({ error: passkeyRefusalText(outcome) });
        return reply.send({ redirect: `${ACCOUNT}?done=passkey-added#two-factor` });
      },
      { post: true },
    ),
  );
}

/** Removing a passkey: a confirmation page that asks for the code, and its post. */
function registerPasskeyRemoval(scope: Scope, kit: Kit): void {
  const removal = `${ACCOUNT}/passkeys/:id/delete`;
  const notFound = (reply: FastifyReply, session: DashboardSession) =>
    kit.render(reply, 404, 'message', {
      title: 'Not found',
      session,
      heading: 'No such passkey',
      text: 'It may have been removed already.',
    });
  const confirmRemoval = async (
    reply: FastifyReply,
    session: DashboardSession,
    id: string,
    status: number,
    error: string | null,
  ) => {
    const passkey = (await passkeysOf(kit.deps, memberOf(session))).find((row) => row.id === id);
    if (!passkey) return notFound(reply, session);
    return kit.render(reply, status, 'two-factor-confirm', {
      title: 'Remove a passkey',
      heading: `Remove the passkey ${passkey.name}?`,
      consequence:
        'It will no longer give your second step when you log in. Enter a code from your authenticator app (or an unused recovery code) to go on.',
      confirm: 'Remove the passkey',
      confirmClass: 'danger',
      session,
      csrf: session.csrfToken,
      action: `${ACCOUNT}/passkeys/${encodeURIComponent(id)}/delete`,
      error,
    });
  };

  scope.get<{ Params: { id: string } }>(
    removal,
    hidden,
    accountPage(kit, (request, reply, session) =>
      confirmRemoval(reply, session, text((request.params as { id: string }).id, 64), 200, null),
    ),
  );

  scope.post<{ Params: { id: string } }>(
    removal,
    hidden,
    accountPage(
      kit,
      async (request, reply, session) => {
        const id = text((request.params as { id: string }).id, 64);
        const outcome = await removePasskey(kit.deps, memberOf(session), id, {
          rawCode: formOf(request).code,
          client: clientKey(request.ip),
          origin: originOf(request),
        });
        if (outcome.kind === 'not_found') return notFound(reply, session);
        if (outcome.kind !== 'removed') {
          const refused = refusalOf(reply, outcome, true);
          return confirmRemoval(reply, session, id, refused.status, refused.error);
        }
        return reply.redirect(`${ACCOUNT}?done=passkey-removed#two-factor`, 303);
      },
      { post: true },
    ),
  );
}
