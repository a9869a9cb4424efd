import type { FastifyReply, FastifyRequest } from 'fastify';
import { clientKey, retryAfterSeconds } from '../../../http/failure-limiter.ts';
import { PasswordHashingBusy } from '../../../shared/crypto.ts';
import { AppError } from '../../../shared/errors.ts';
import { displayAmount } from '../../../shared/money.ts';
import { hashNewPassword, MIN_PASSWORD_LENGTH } from '../../merchants/merchants.service.ts';
import { can, isRole, ROLE_LABELS, ROLES, type Permission } from '../../team/team.permissions.ts';
import {
  acceptInvitation,
  changeMemberRole,
  inviteMember,
  memberOfTeam,
  normaliseMemberEmail,
  openInvitation,
  removeMember,
  revokeInvitation,
  setSupportRefundLimit,
  teamOf,
  type TeamActor,
  type TeamProblem,
} from '../../team/team.service.ts';
import { text } from '../dashboard.format.ts';
import { dollarsToCents } from '../dashboard.forms.ts';
import {
  formOf,
  originOf,
  PRE_SESSION_COOKIE,
  SESSION_COOKIE,
  type Kit,
  type Scope,
  type SignedAccount,
} from '../dashboard.kit.ts';
import { endSessionsOfMember, SESSION_MAX_MS, startSession, type DashboardSession } from '../dashboard.sessions.ts';
import { secondStepAfterPassword } from '../dashboard.two-factor.ts';
import { continueToSecondStep } from './two-factor.ts';

// The Team page (docs/team.md), outside the modes like the Account page: the members with their
// roles, pending invitations, inviting, revoking, changing a role, removing, and the support refund
// limit. Every change is the team module's service; who may make it is checked there and by the
// route's permission. The invitation link's page (/dashboard/invitations/:token) is before sign-in.

const hidden = { schema: { hide: true } };
const MAX_REFUND_LIMIT_CENTS = 100_000_000;

const actorOf = (session: DashboardSession, request: FastifyRequest): TeamActor => ({
  userId: session.merchant.id,
  memberId: session.member.id,
  email: session.member.email,
  role: session.member.role,
  origin: originOf(request),
});

const layoutOf = (session: DashboardSession) => ({
  session,
  csrf: session.csrfToken,
  can: (permission: Permission) => can(session.member.role, permission),
});

const FLASHES: Record<string, string> = {
  invited: 'The invitation is sent. Its link works once, for 72 hours.',
  reinvited:
    'The invitation is sent again. Only the newest link works (once, for 72 hours): the one sent before no longer does.',
  revoked: 'The invitation is revoked; its link no longer works.',
  role: 'The role is changed. It applies from their next page.',
  removed: 'The member is removed and signed out.',
  limit: 'The support refund limit is set.',
};

export function registerTeamPages(scope: Scope, kit: Kit): void {
  const page = async (reply: FastifyReply, signed: SignedAccount, status: number, extra: Record<string, unknown>) => {
    const team = await teamOf(kit.deps, signed.session.merchant.id);
    return kit.render(reply, status, 'team', {
      title: 'Team',
      ...layoutOf(signed.session),
      ...team,
      limit: (team.supportRefundLimitCents / 100).toFixed(2),
      limitShown: displayAmount(team.supportRefundLimitCents),
      roles: ROLES.map((role) => ({ role, label: ROLE_LABELS[role] })),
      roleLabels: ROLE_LABELS,
      values: {},
      error: null,
      flash: null,
      ...extra,
    });
  };
  /** A refusal of the service, in words, on the team page; nothing was changed. */
  const refused = (reply: FastifyReply, signed: SignedAccount, problem: TeamProblem, values = {}) =>
    page(reply, signed, 400, { error: `${problem.message} Nothing was changed.`, values });
  const done = (reply: FastifyReply, what: keyof typeof FLASHES) => reply.redirect(`/dashboard/team?done=${what}`, 303);

  scope.get(
    '/dashboard/team',
    hidden,
    kit.accountGuard(
      async (request, reply, signed) => page(reply, signed, 200, { flash: FLASHES[text(request.query.done)] ?? null }),
      { permission: 'read' },
    ),
  );

  scope.post(
    '/dashboard/team/invitations',
    hidden,
    kit.accountGuard(
      async (request, reply, signed) => {
        const form = formOf(request);
        const values = { email: text(form.email, 254), role: text(form.role, 20) };
        const email = normaliseMemberEmail(values.email);
        if (!email || !isRole(values.role))
          return refused(
            reply,
            signed,
            { kind: 'problem', message: 'Enter their email address and choose a role.' },
            values,
          );
        const invited = await inviteMember(
          kit.deps,
          { ...actorOf(signed.session, request), merchantName: signed.session.merchant.name },
          { email, role: values.role },
        );
        if (invited.kind === 'problem') return refused(reply, signed, invited, values);
        return done(reply, invited.replaced ? 'reinvited' : 'invited');
      },
      { permission: 'team.manage', post: true },
    ),
  );

  registerTeamChanges(scope, kit, { refused, done });
}

type Answers = {
  refused: (reply: FastifyReply, signed: SignedAccount, problem: TeamProblem) => Promise<FastifyReply>;
  done: (reply: FastifyReply, what: keyof typeof FLASHES) => FastifyReply;
};

/** Another merchant's member or invitation, or one that is gone: 404 in the layout. */
async function orNotFound(kit: Kit, reply: FastifyReply, signed: SignedAccount, act: () => Promise<unknown>) {
  try {
    return await act();
  } catch (error) {
    if (!(error instanceof AppError) || error.status !== 404) throw error;
    return kit.render(reply, 404, 'message', {
      title: 'Not found',
      heading: 'Not found',
      text: 'There is no such member or invitation in your team.',
      base: '/dashboard/team',
      ...layoutOf(signed.session),
    });
  }
}

function registerTeamChanges(scope: Scope, kit: Kit, { refused, done }: Answers): void {
  const deps = kit.deps;
  scope.post<{ Params: { id: string } }>(
    '/dashboard/team/invitations/:id/revoke',
    hidden,
    kit.accountGuard(
      async (request, reply, signed) =>
        orNotFound(kit, reply, signed, async () => {
          const problem = await revokeInvitation(deps, actorOf(signed.session, request), request.params.id);
          return problem ? refused(reply, signed, problem) : done(reply, 'revoked');
        }),
      { permission: 'team.manage', post: true },
    ),
  );

  scope.post<{ Params: { id: string } }>(
    '/dashboard/team/members/:id/role',
    hidden,
    kit.accountGuard(
      async (request, reply, signed) =>
        orNotFound(kit, reply, signed, async () => {
          const role = text(formOf(request).role, 20);
          if (!isRole(role)) return refused(reply, signed, { kind: 'problem', message: 'Choose a role.' });
          const problem = await changeMemberRole(deps, actorOf(signed.session, request), request.params.id, role);
          return problem ? refused(reply, signed, problem) : done(reply, 'role');
        }),
      { permission: 'team.manage', post: true },
    ),
  );

  scope.get<{ Params: { id: string } }>(
    '/dashboard/team/members/:id/remove',
    hidden,
    kit.accountGuard(
      async (request, reply, signed) =>
        orNotFound(kit, reply, signed, async () => {
          const member = await memberOfTeam(deps.db, signed.session.merchant.id, request.params.id);
          return kit.render(reply, 200, 'confirm', {
            title: 'Remove a member',
            ...layoutOf(signed.session),
            heading: `Remove ${member.email} from the team?`,
            consequence: 'They are signed out at once and can no longer log in. To bring them back, invite them again.',
            action: `/dashboard/team/members/${member.id}/remove`,
            confirm: 'Yes, remove them',
            back: '/dashboard/team',
          });
        }),
      { permission: 'team.manage' },
    ),
  );

  scope.post<{ Params: { id: string } }>(
    '/dashboard/team/members/:id/remove',
    hidden,
    kit.accountGuard(
      async (request, reply, signed) =>
        orNotFound(kit, reply, signed, async () => {
          const problem = await removeMember(deps, actorOf(signed.session, request), request.params.id);
          if (problem) return refused(reply, signed, problem);
          // A session is good only while its member is on the team; the rows are ended too, so the list of sessions says so.
          await endSessionsOfMember(deps.db, deps.clock.now(), request.params.id);
          return done(reply, 'removed');
        }),
      { permission: 'team.manage', post: true },
    ),
  );

  scope.post(
    '/dashboard/team/refund-limit',
    hidden,
    kit.accountGuard(
      async (request, reply, signed) => {
        const cents = dollarsToCents(text(formOf(request).limit, 30));
        if (cents === null || Number.isNaN(cents) || cents > MAX_REFUND_LIMIT_CENTS)
          return refused(reply, signed, {
            kind: 'problem',
            message: '“Support refund limit” must be an amount of money, such as 50.00 (0.00 for none).',
          });
        const problem = await setSupportRefundLimit(deps, actorOf(signed.session, request), cents);
        return problem ? refused(reply, signed, problem) : done(reply, 'limit');
      },
      { permission: 'team.manage', post: true },
    ),
  );
}

/** The page of an invitation link, before sign-in: name and password, then signed in. */
export function registerInvitationPages(scope: Scope, kit: Kit): void {
  const deps = kit.deps;
  // The invitation token is in these URLs: their request lines are kept out of the info-level request log.
  const quiet = { ...hidden, logLevel: 'warn' as const };
  const form = (reply: FastifyReply, status: number, data: Record<string, unknown>) =>
    kit.render(reply, status, 'invitation', { title: 'Join the team', minLength: MIN_PASSWORD_LENGTH, ...data });
  const dead = (reply: FastifyReply) =>
    kit.message(
      reply,
      400,
      'This invitation no longer works',
      'Invitation links work once, for 72 hours, until revoked. Ask the person who invited you for a new one.',
    );
  const limited = (reply: FastifyReply, retryAfterMs: number) => {
    reply.header('retry-after', String(retryAfterSeconds(retryAfterMs)));
    return kit.message(
      reply,
      429,
      'Too many tries',
      'Too many invitation links were tried from here. Wait a few minutes and try again.',
    );
  };

  scope.get<{ Params: { token: string } }>('/dashboard/invitations/:token', quiet, async (request, reply) => {
    const opened = await openInvitation(deps, request.params.token, clientKey(request.ip));
    if (opened.kind === 'limited') return limited(reply, opened.retryAfterMs);
    if (opened.kind === 'dead') return dead(reply);
    return form(reply, 200, {
      csrf: kit.preSessionCsrf.token(request, reply),
      token: request.params.token,
      email: opened.invitation.email,
      role: ROLE_LABELS[opened.invitation.role],
    });
  });

  scope.post<{ Params: { token: string } }>('/dashboard/invitations/:token', quiet, async (request, reply) => {
    if (!kit.preSessionCsrf.valid(request)) return kit.forbidden(reply);
    const opened = await openInvitation(deps, request.params.token, clientKey(request.ip));
    if (opened.kind === 'limited') return limited(reply, opened.retryAfterMs);
    if (opened.kind === 'dead') return dead(reply);
    const body = formOf(request);
    const name = text(body.name, 100).trim();
    const password = typeof body.password === 'string' ? body.password : '';
    const again = (status: number, error: string) =>
      form(reply, status, {
        csrf: kit.preSessionCsrf.token(request, reply),
        token: request.params.token,
        email: opened.invitation.email,
        role: ROLE_LABELS[opened.invitation.role],
        name,
        error,
      });
    if (!name) return again(400, 'Enter your name.');
    if (password.length < MIN_PASSWORD_LENGTH || password.length > 200)
      return again(400, `Choose a password of ${MIN_PASSWORD_LENGTH} to 200 characters.`);
    let passwordHash: string;
    try {
      passwordHash = await hashNewPassword(password);
    } catch (error) {
      if (!(error instanceof PasswordHashingBusy)) throw error;
      reply.header('retry-after', '5');
      return again(429, 'Too many passwords are being checked right now. Wait a few seconds and send it again.');
    }
    const accepted = await acceptInvitation(deps, request.params.token, {
      name,
      passwordHash,
      origin: originOf(request),
    });
    if (accepted.kind === 'dead') return dead(reply);
    if (accepted.kind === 'taken')
      return kit.message(
        reply,
        409,
        'You are already a member',
        `${opened.invitation.email} already signs in to a Tono dashboard. Log in with it.`,
      );
    // The new member's password is right by construction: on as after a right password at the
    // login page, to the set-up their team's two-factor requirement asks for before any session.
    const secondStep = await secondStepAfterPassword(deps, accepted.member);
    if (secondStep) return continueToSecondStep(kit, reply, secondStep, '/dashboard');
    const sessionId = await startSession(deps, accepted.member, {
      origin: originOf(request),
      previousSessionId: request.cookies[SESSION_COOKIE],
    });
    reply.setCookie(SESSION_COOKIE, sessionId, { ...kit.cookieOptions(), maxAge: SESSION_MAX_MS / 1000 });
    reply.clearCookie(PRE_SESSION_COOKIE, kit.cookieOptions());
    return reply.redirect('/dashboard', 303);
  });
}
