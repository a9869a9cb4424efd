import { Type } from 'typebox';
import type { FastifyInstance } from 'fastify';
import { parseAmount } from '../shared/money.ts';
import { AccountNumberPattern, AmountPattern } from '../shared/open-banking.wire.ts';
import { hasTrustedClientCertificate, selfUrl, type SandboxDeps } from './sandbox.context.ts';
import { fieldInvalid, unauthorised } from './sandbox.errors.ts';
import {
  authoriseDirectly,
  clientConsent,
  clientPayment,
  createPayer,
  declineNext,
  delayConfirmation,
  expireConsentTokens,
  getPayer,
  revokeAtBank,
  type Latency,
} from './hooks.service.ts';
import { authenticateClient, basicCredentials } from './auth.service.ts';
import { releasePayment } from './payments.service.ts';
import { presentPayment, money } from './sandbox.present.ts';
import type { PayerRow } from './sandbox.repo.ts';

// Test hooks under /test/…, for the client's own tests: each call authenticates with the client's
// credentials (HTTP Basic, as at POST /token) and acts only on that client's consent or payment,
// so no one without credentials, and no other client, can disturb a payment. Documented in docs/banks.md.

const Reason = Type.String({
  pattern: '^(?=.{2,40}$)[a-z]{2,}(_[a-z]{2,})*$',
  description: 'snake_case words of 2+ letters, e.g. insufficient_funds, fraud_check, declined',
});
const ConsentIdParams = Type.Object({ ConsentId: Type.String({ maxLength: 128 }) });

function presentPayer(row: PayerRow) {
  return {
    Data: {
      Username: row.username,
      Name: row.name,
      AccountNumber: row.account_number,
      Balance: money(row.balance_cents),
    },
  };
}

declare module 'fastify' {
  interface FastifyRequest {
    hookClient: string;
  }
}

export async function registerHookRoutes(app: FastifyInstance, deps: SandboxDeps, latency: Latency): Promise<void> {
  requireHookClient(app, deps);
  registerPayerHooks(app, deps);
  registerConsentHooks(app, deps);
  registerFlowHooks(app, deps, latency);
}

/** Every hook is the bank client's own: it authenticates as it does at the token endpoint. */
function requireHookClient(app: FastifyInstance, deps: SandboxDeps): void {
  app.addHook('onRequest', async (request) => {
    if (deps.requireClientCertificate && !hasTrustedClientCertificate(request.raw.socket)) {
      throw unauthorised('This bank needs mutual TLS: connect with a client certificate it trusts');
    }
    const [id, secret] = (() => {
      try {
        return basicCredentials(request.headers.authorization);
      } catch {
        return [undefined, undefined];
      }
    })();
    try {
      request.hookClient = authenticateClient(deps, id, secret).clientId;
    } catch {
      throw unauthorised(
        'Test hooks need the client credentials: Authorization: Basic base64(client_id:client_secret)',
        !request.headers.authorization,
      );
    }
  });
}

/** Test payers and their balances: account holders, a merchant's account a refund is paid from among them. */
function registerPayerHooks(app: FastifyInstance, deps: SandboxDeps): void {
  app.post(
    '/test/payers',
    {
      schema: {
        body: Type.Object({
          username: Type.String({ pattern: '^[A-Za-z0-9._-]{1,64}$' }),
          balance: Type.String({ pattern: AmountPattern }),
          name: Type.Optional(Type.String({ minLength: 1, maxLength: 70 })),
          account_number: Type.Optional(Type.String({ pattern: AccountNumberPattern })),
          if_absent: Type.Optional(Type.Boolean()),
          refund_arrangement: Type.Optional(Type.Boolean()),
        }),
      },
    },
    async (request, reply) => {
      const body = request.body as {
        username: string;
        balance: string;
        name?: string;
        account_number?: string;
        if_absent?: boolean;
        refund_arrangement?: boolean;
      };
      const balanceCents = parseAmount(`${body.balance} NZD`);
      if (balanceCents === null) throw fieldInvalid('balance', 'balance must be an amount such as "100.00"');
      const { payer, created } = await createPayer(deps, {
        username: body.username,
        balanceCents,
        name: body.name,
        accountNumber: body.account_number,
        ifAbsent: body.if_absent,
        refundArrangement: body.refund_arrangement,
      });
      return reply.status(created ? 201 : 200).send(presentPayer(payer));
    },
  );

  app.get(
    '/test/payers/:username',
    { schema: { params: Type.Object({ username: Type.String({ maxLength: 64 }) }) } },
    async (request) => presentPayer(await getPayer(deps, (request.params as { username: string }).username)),
  );
}

/** What a consent's next payments do: decline, wait for confirmation, or the consent revoked at the bank. */
function registerConsentHooks(app: FastifyInstance, deps: SandboxDeps): void {
  app.post(
    '/test/consents/:ConsentId/decline-next',
    {
      schema: {
        params: ConsentIdParams,
        body: Type.Object({
          count: Type.Optional(Type.Integer({ minimum: 0, maximum: 1000 })),
          reason: Type.Optional(Reason),
        }),
      },
    },
    async (request) => {
      const { ConsentId } = request.params as { ConsentId: string };
      const body = request.body as { count?: number; reason?: string };
      await declineNext(deps, request.hookClient, ConsentId, body.count ?? 1, body.reason ?? 'declined');
      return { Data: { ConsentId, DeclineNext: body.count ?? 1, Reason: body.reason ?? 'declined' } };
    },
  );

  app.post(
    '/test/consents/:ConsentId/delay',
    {
      schema: {
        params: ConsentIdParams,
        body: Type.Object({
          seconds: Type.Optional(Type.Integer({ minimum: 1, maximum: 366 * 86400 })),
          status: Type.Optional(Type.Union([Type.Literal('Pending'), Type.Literal('AcceptedSettlementInProcess')])),
          off: Type.Optional(Type.Boolean()),
        }),
      },
    },
    async (request) => {
      const { ConsentId } = request.params as { ConsentId: string };
      const body = request.body as {
        seconds?: number;
        status?: 'Pending' | 'AcceptedSettlementInProcess';
        off?: boolean;
      };
      await delayConfirmation(deps, request.hookClient, ConsentId, {
        off: body.off ?? false,
        seconds: body.seconds ?? null,
        status: body.status ?? 'AcceptedSettlementInProcess',
      });
      return {
        Data: {
          ConsentId,
          Delay: body.off
            ? null
            : { Seconds: body.seconds ?? null, Status: body.status ?? 'AcceptedSettlementInProcess' },
        },
      };
    },
  );

  app.post('/test/consents/:ConsentId/revoke', { schema: { params: ConsentIdParams } }, async (request) => {
    const consent = await revokeAtBank(deps, request.hookClient, (request.params as { ConsentId: string }).ConsentId);
    return { Data: { ConsentId: consent.id, Status: consent.status } };
  });

  app.post(
    '/test/consents/:ConsentId/expire-tokens',
    {
      schema: {
        params: ConsentIdParams,
        body: Type.Object({ refresh_tokens: Type.Optional(Type.Boolean()) }),
      },
    },
    async (request) => {
      const { ConsentId } = request.params as { ConsentId: string };
      const body = request.body as { refresh_tokens?: boolean };
      const expired = await expireConsentTokens(deps, request.hookClient, ConsentId, {
        refreshTokens: body.refresh_tokens ?? false,
      });
      return {
        Data: { ConsentId, ExpiredAccessTokens: expired.accessTokens, RevokedRefreshTokens: expired.refreshTokens },
      };
    },
  );
}

/** Driving a flow without a browser: release a held payment, approve a consent, slow the bank down. */
function registerFlowHooks(app: FastifyInstance, deps: SandboxDeps, latency: Latency): void {
  app.post(
    '/test/payments/:DomesticPaymentId/release',
    {
      schema: {
        params: Type.Object({ DomesticPaymentId: Type.String({ maxLength: 128 }) }),
        body: Type.Object({
          outcome: Type.Optional(Type.Union([Type.Literal('completed'), Type.Literal('rejected')])),
          reason: Type.Optional(Reason),
        }),
      },
    },
    async (request) => {
      const body = request.body as { outcome?: 'completed' | 'rejected'; reason?: string };
      const id = (request.params as { DomesticPaymentId: string }).DomesticPaymentId;
      await clientPayment(deps, request.hookClient, id);
      const payment = await releasePayment(deps, id, { outcome: body.outcome ?? 'completed', reason: body.reason });
      return presentPayment(payment, selfUrl(app, request, `/domestic-payments/${payment.id}`));
    },
  );

  app.post(
    '/test/authorise',
    {
      schema: {
        body: Type.Object({
          consent_id: Type.String({ maxLength: 128 }),
          redirect_uri: Type.String({ maxLength: 2048 }),
          state: Type.String({ maxLength: 512 }),
          username: Type.Optional(Type.String({ maxLength: 64 })),
          decision: Type.Optional(Type.Union([Type.Literal('approve'), Type.Literal('decline')])),
        }),
      },
    },
    async (request) => {
      const body = request.body as {
        consent_id: string;
        redirect_uri: string;
        state: string;
        username?: string;
        decision?: 'approve' | 'decline';
      };
      const redirect = await authoriseDirectly(deps, request.hookClient, {
        consentId: body.consent_id,
        redirectUri: body.redirect_uri,
        state: body.state,
        username: body.username ?? 'sandbox',
        decision: body.decision ?? 'approve',
      });
      return { Data: { RedirectUri: redirect } };
    },
  );

  app.post(
    '/test/token-lifetime',
    {
      schema: {
        body: Type.Object({
          enduring_seconds: Type.Union([Type.Integer({ minimum: 1, maximum: 366 * 86400 }), Type.Null()]),
        }),
      },
    },
    async (request) => {
      const seconds = (request.body as { enduring_seconds: number | null }).enduring_seconds;
      deps.tokenLifetimes.setEnduring(request.hookClient, seconds === null ? null : seconds * 1000);
      return { Data: { EnduringSeconds: seconds } };
    },
  );

  app.post(
    '/test/latency',
    {
      schema: {
        body: Type.Object({
          consent_id: Type.String({ maxLength: 128 }),
          ms: Type.Integer({ minimum: 0, maximum: 120_000 }),
          count: Type.Optional(Type.Integer({ minimum: 0, maximum: 1000 })),
        }),
      },
    },
    async (request) => {
      const body = request.body as { consent_id: string; ms: number; count?: number };
      await clientConsent(deps, request.hookClient, body.consent_id);
      latency.set(body.consent_id, body.ms, body.count ?? 1);
      return { Data: { ConsentId: body.consent_id, Ms: body.ms, Count: body.count ?? 1 } };
    },
  );
}
