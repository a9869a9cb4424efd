import { Type } from 'typebox';
import type { FastifyInstance, FastifyReply } from 'fastify';
import { hasTrustedClientCertificate, selfUrl, type SandboxDeps } from './sandbox.context.ts';
import {
  AuthorisePageError,
  JWT_BEARER,
  LoginRefused,
  OAuthError,
  authenticateAssertion,
  authenticateClient,
  basicCredentials,
  consentToAuthorise,
  decide,
  exchangeCode,
  issueClientToken,
  logIn,
  refreshConsentToken,
  sessionConsent,
} from './auth.service.ts';
import { consentRows, sendPage } from './pages.ts';

const text = (maxLength: number) => Type.String({ maxLength });

/** A page the payer cannot go on from (an unknown consent, a redirect it does not own): said plainly, and nothing else. */
function refuse(reply: FastifyReply, error: unknown) {
  if (error instanceof AuthorisePageError)
    return sendPage(reply, 400, 'message', {
      title: 'Cannot continue',
      heading: 'We cannot continue',
      message: error.message,
    });
  throw error;
}

export async function registerAuthRoutes(app: FastifyInstance, deps: SandboxDeps): Promise<void> {
  registerSignInPage(app, deps);
  registerDecision(app, deps);
  registerTokenEndpoint(app, deps);
}

/** The payer signs in at the bank. */
function registerSignInPage(app: FastifyInstance, deps: SandboxDeps): void {
  const prefix = app.prefix;
  const loginPage = (
    reply: FastifyReply,
    status: number,
    form: { consentId: string; redirectUri: string; state: string; username?: string; error?: string },
  ) =>
    sendPage(reply, status, 'login', {
      title: 'Sign in',
      action: `${prefix}/authorize/login`,
      username: '',
      error: null,
      ...form,
    });

  app.get(
    '/authorize',
    {
      schema: {
        querystring: Type.Object({
          consent_id: text(128),
          redirect_uri: text(2048),
          state: text(512),
          client_id: Type.Optional(text(128)),
        }),
      },
    },
    async (request, reply) => {
      const {
        consent_id: consentId,
        redirect_uri: redirectUri,
        state,
        client_id: clientId,
      } = request.query as Record<string, string>;
      try {
        const consent = await consentToAuthorise(deps, consentId, redirectUri);
        if (clientId !== undefined && clientId !== consent.client_id)
          throw new AuthorisePageError('This consent was made by another payment service.');
      } catch (error) {
        return refuse(reply, error);
      }
      return loginPage(reply, 200, { consentId, redirectUri, state });
    },
  );

  app.post(
    '/authorize/login',
    {
      schema: {
        body: Type.Object({
          consent_id: text(128),
          redirect_uri: text(2048),
          state: text(512),
          username: text(100),
          password: text(200),
        }),
      },
    },
    async (request, reply) => {
      const body = request.body as Record<string, string>;
      const form = { consentId: body.consent_id, redirectUri: body.redirect_uri, state: body.state };
      try {
        const { sessionId, consent, payer } = await logIn(deps, {
          ...form,
          username: body.username,
          password: body.password,
        });
        return sendPage(
          reply,
          200,
          'consent',
          {
            title: 'Approve',
            heading: consent.kind === 'domestic' ? 'Approve this payment?' : 'Approve these regular payments?',
            kind: consent.kind,
            payeeName: consent.creditor_name,
            payerAccount: payer.account_number,
            rows: consentRows(consent, deps.zone),
            action: `${prefix}/authorize/decision`,
            session: sessionId,
          },
          form.redirectUri,
        );
      } catch (error) {
        if (error instanceof LoginRefused)
          return loginPage(reply, 401, { ...form, username: body.username, error: error.message });
        return refuse(reply, error);
      }
    },
  );
}

/** The payer approves or declines, and goes back to the service. */
function registerDecision(app: FastifyInstance, deps: SandboxDeps): void {
  app.post(
    '/authorize/decision',
    {
      schema: {
        body: Type.Object({
          session: text(128),
          decision: Type.Union([Type.Literal('approve'), Type.Literal('decline')]),
        }),
      },
    },
    async (request, reply) => {
      const body = request.body as { session: string; decision: 'approve' | 'decline' };
      try {
        await sessionConsent(deps, body.session);
        return reply.redirect(await decide(deps, body.session, body.decision), 303);
      } catch (error) {
        return refuse(reply, error);
      }
    },
  );
}

/**
 * OAuth token endpoint: client_credentials for API calls, authorization_code after approval, and
 * refresh_token for an enduring consent's next access token.
 */
function registerTokenEndpoint(app: FastifyInstance, deps: SandboxDeps): void {
  app.post('/token', async (request, reply) => {
    const body = (request.body ?? {}) as Record<string, string | undefined>;
    try {
      if (deps.requireClientCertificate && !hasTrustedClientCertificate(request.raw.socket)) {
        throw new OAuthError(
          401,
          'invalid_client',
          'This bank needs mutual TLS: connect with a client certificate it trusts',
        );
      }
      let client: Awaited<ReturnType<typeof authenticateAssertion>>;
      if (body.client_assertion_type === JWT_BEARER) {
        client = await authenticateAssertion(
          deps,
          body.client_id,
          body.client_assertion,
          selfUrl(app, request, '/token'),
        );
      } else {
        const [basicId, basicSecret] = basicCredentials(request.headers.authorization);
        client = authenticateClient(deps, basicId ?? body.client_id, basicSecret ?? body.client_secret);
      }
      reply.header('cache-control', 'no-store');
      if (body.grant_type === 'client_credentials') return await issueClientToken(deps, client);
      if (body.grant_type === 'authorization_code')
        return await exchangeCode(deps, client, body.code, body.redirect_uri);
      if (body.grant_type === 'refresh_token')
        return await refreshConsentToken(deps, client, body.refresh_token, body.scope);
      throw new OAuthError(
        400,
        'unsupported_grant_type',
        'grant_type must be client_credentials, authorization_code or refresh_token',
      );
    } catch (error) {
      if (error instanceof OAuthError)
        return reply.status(error.status).send({ error: error.error, error_description: error.message });
      throw error;
    }
  });
}
