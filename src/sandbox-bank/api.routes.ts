import { Type } from 'typebox';
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import {
  DomesticConsentRequest,
  DomesticPaymentRequest,
  EnduringConsentRequest,
  SANDBOX_REASON_HEADER,
  SANDBOX_TIME_HEADER,
  reasonToCode,
} from '../shared/open-banking.wire.ts';
import { hasTrustedClientCertificate, selfUrl, type BankTime, type SandboxDeps } from './sandbox.context.ts';
import { BankApiError, fieldInvalid, unauthorised } from './sandbox.errors.ts';
import { authenticateBearer, type Caller } from './auth.service.ts';
import {
  createDomesticConsent,
  createEnduringConsent,
  effectiveStatus,
  getConsentOf,
  revokeEnduringConsent,
} from './consents.service.ts';
import { debtorAccountOf, getDomesticPayment, submitDomesticPayment } from './payments.service.ts';
import { presentConsent, presentDebtorAccount, presentPayment } from './sandbox.present.ts';
import type { ConsentRow, PaymentRow } from './sandbox.repo.ts';
import type { Latency } from './hooks.service.ts';

declare module 'fastify' {
  interface FastifyRequest {
    bankCaller: Caller;
  }
}

const IdempotencyHeaders = Type.Object({
  'x-idempotency-key': Type.String({ minLength: 1, maxLength: 40, pattern: '^(?!\\s)(.*)(\\S)$' }),
});
const PaymentIdParams = Type.Object({ DomesticPaymentId: Type.String({ maxLength: 128 }) });

/** The standard gives no reason for a rejection: the sandbox names the one its hooks chose in a header of its own. */
function sendPayment(reply: FastifyReply, status: number, payment: PaymentRow, self: string) {
  if (payment.status === 'Rejected' && payment.status_reason)
    reply.header(SANDBOX_REASON_HEADER, reasonToCode(payment.status_reason));
  return reply.status(status).send(presentPayment(payment, self));
}
const ConsentIdParams = Type.Object({ ConsentId: Type.String({ maxLength: 128 }) });

/** x-sandbox-time, when the caller sends it, is "now" for consent validity and limit periods. */
export function bankTimeOf(request: FastifyRequest, deps: SandboxDeps): BankTime {
  const raw = request.headers[SANDBOX_TIME_HEADER];
  if (raw === undefined) return deps.clock.now();
  const parsed = typeof raw === 'string' ? Date.parse(raw) : NaN;
  if (Number.isNaN(parsed))
    throw fieldInvalid(SANDBOX_TIME_HEADER, `${SANDBOX_TIME_HEADER} must be an ISO 8601 date-time`);
  return parsed;
}

/** The consent a request is about, for per-consent latency: named in the path, or in the body of a payment. */
function consentOf(request: FastifyRequest): string | null {
  const params = request.params as { ConsentId?: string } | undefined;
  const body = request.body as { Data?: { ConsentId?: unknown } } | undefined;
  const fromBody = body?.Data?.ConsentId;
  return params?.ConsentId ?? (typeof fromBody === 'string' ? fromBody : null);
}

/** The standard's resource endpoints, each behind a bearer token from POST /token. */
export async function registerApiRoutes(app: FastifyInstance, deps: SandboxDeps, latency: Latency): Promise<void> {
  guardApi(app, deps, latency);
  registerConsentApi(app, deps);
  registerPaymentApi(app, deps);
}

/** Every call carries a token of this bank (and, where asked, a client certificate); a consent's latency hook slows its answers. */
function guardApi(app: FastifyInstance, deps: SandboxDeps, latency: Latency): void {
  app.addHook('preValidation', async (request) => {
    if (deps.requireClientCertificate && !hasTrustedClientCertificate(request.raw.socket)) {
      throw unauthorised('This bank needs mutual TLS: connect with a client certificate it trusts');
    }
    request.bankCaller = await authenticateBearer(deps, request.headers.authorization);
  });
  app.addHook('onSend', async (request, _reply, payload) => {
    const ms = latency.take(consentOf(request));
    if (ms > 0) await new Promise((resolve) => setTimeout(resolve, ms));
    return payload;
  });
}

/** The two kinds of payment consent: the same routes, each with its own request body and creation. */
const CONSENT_KINDS = [
  {
    path: '/domestic-payment-consents',
    kind: 'domestic',
    body: DomesticConsentRequest,
    // The body has been validated against `body` by then.
    create: (deps: SandboxDeps, clientId: string, body: unknown, key: string) =>
      createDomesticConsent(deps, clientId, body as DomesticConsentRequest, key),
  },
  {
    path: '/enduring-payment-consents',
    kind: 'enduring',
    body: EnduringConsentRequest,
    create: (deps: SandboxDeps, clientId: string, body: unknown, key: string) =>
      createEnduringConsent(deps, clientId, body as EnduringConsentRequest, key),
  },
] as const;

/** Payment consents: single and enduring, created, read and revoked. */
function registerConsentApi(app: FastifyInstance, deps: SandboxDeps): void {
  const self = (request: FastifyRequest, path: string) => selfUrl(app, request, path);
  const present = (request: FastifyRequest, consent: ConsentRow, path: string) =>
    presentConsent(
      consent,
      effectiveStatus(consent, bankTimeOf(request, deps)),
      self(request, `${path}/${consent.id}`),
    );

  for (const { path, kind, body, create } of CONSENT_KINDS) {
    app.post(path, { schema: { headers: IdempotencyHeaders, body } }, async (request, reply) => {
      const { consent } = await create(
        deps,
        request.bankCaller.clientId,
        request.body,
        request.headers['x-idempotency-key'] as string,
      );
      return reply.status(201).send(present(request, consent, path));
    });

    app.get(`${path}/:ConsentId`, { schema: { params: ConsentIdParams } }, async (request) => {
      const { ConsentId } = request.params as { ConsentId: string };
      return present(request, await getConsentOf(deps, request.bankCaller.clientId, kind, ConsentId), path);
    });
  }

  app.delete(
    '/enduring-payment-consents/:ConsentId',
    { schema: { params: ConsentIdParams } },
    async (request, reply) => {
      const { ConsentId } = request.params as { ConsentId: string };
      await revokeEnduringConsent(deps, ConsentId, request.bankCaller.clientId);
      return reply.status(204).send();
    },
  );
}

/** Payments under a consent, and the payer's account they came from. */
function registerPaymentApi(app: FastifyInstance, deps: SandboxDeps): void {
  const self = (request: FastifyRequest, path: string) => selfUrl(app, request, path);

  app.post(
    '/domestic-payments',
    { schema: { headers: IdempotencyHeaders, body: DomesticPaymentRequest } },
    async (request, reply) => {
      const caller = request.bankCaller;
      if (caller.consentId === null) {
        throw new BankApiError(
          403,
          'Resource.Consent.Mismatch',
          'Payments need the consent-bound token from the authorization_code grant',
          'Authorization',
        );
      }
      const body = request.body as DomesticPaymentRequest;
      const { payment } = await submitDomesticPayment(
        deps,
        { clientId: caller.clientId, consentId: caller.consentId },
        body,
        request.headers['x-idempotency-key'] as string,
        bankTimeOf(request, deps),
      );
      return sendPayment(reply, 201, payment, self(request, `/domestic-payments/${payment.id}`));
    },
  );

  app.get('/domestic-payments/:DomesticPaymentId', { schema: { params: PaymentIdParams } }, async (request, reply) => {
    const { DomesticPaymentId } = request.params as { DomesticPaymentId: string };
    const payment = await getDomesticPayment(
      deps,
      request.bankCaller.clientId,
      DomesticPaymentId,
      bankTimeOf(request, deps),
    );
    return sendPayment(reply, 200, payment, self(request, `/domestic-payments/${payment.id}`));
  });

  app.get(
    '/domestic-payments/:DomesticPaymentId/debtor-account',
    { schema: { params: PaymentIdParams } },
    async (request) => {
      const { DomesticPaymentId } = request.params as { DomesticPaymentId: string };
      const payer = await debtorAccountOf(deps, request.bankCaller.clientId, DomesticPaymentId);
      return presentDebtorAccount(payer, self(request, `/domestic-payments/${DomesticPaymentId}/debtor-account`));
    },
  );
}
