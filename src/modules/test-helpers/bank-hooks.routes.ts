import { Type, type Static, type TSchema } from 'typebox';
import { recordAuditAfter } from '../audit/audit.service.ts';
import { errorResponses, IdParams } from '../../http/schemas.ts';
import { AppError } from '../../shared/errors.ts';
import { pendingBankConsentOfAuthorisation } from '../authorisations/authorisations.service.ts';
import { bankConsentOfConsent, retrieveConsent } from '../consents/consents.service.ts';
import { ConsentEnvelope, DeclineNextBody } from '../consents/consents.schemas.ts';
import { apiKeyAuth, keyScope } from '../merchants/merchants.auth.ts';
import type { KeyResource } from '../merchants/key-scopes.rules.ts';
import { bankIdsOfPayment, pendingBankConsentOfRequest, retrievePayment } from '../payments/payments.service.ts';
import { PaymentEnvelope } from '../payments/payments.schemas.ts';
import { RequestEnvelope } from '../requests/requests.schemas.ts';
import { getRequest, retrieveRequest } from '../requests/requests.service.ts';
import { bankConsentOfSubscription, retrieveSubscription } from '../subscriptions/subscriptions.service.ts';
import { SubscriptionEnvelope } from '../subscriptions/subscriptions.schemas.ts';
import type { App } from '../../http/app-type.ts';
import type { Ctx, Deps } from '../context.ts';
import { testKeysOnly } from './clock.service.ts';

// What a merchant can make the sandbox bank do, with its test key and on its own objects only
// (docs/banks.md, "Test hooks"): refuse the next executions, hold their confirmation (the payment is then
// `unconfirmed` until released or the hold ends), answer slowly, and release a held payment. Each
// acts on the bank's consent behind a payment, a recurring consent or a subscription, or behind a
// request whose payer is approving at their bank right now, so a test can arrange what the bank will
// do before the payer approves. The bank's own hooks need the service's client secret, which
// nobody else holds.

export const DelayBody = Type.Object(
  {
    seconds: Type.Optional(
      Type.Integer({
        minimum: 1,
        maximum: 366 * 86400,
        description: 'How long the bank holds each confirmation; without it, until released',
        'x-expected': 'a whole number of seconds up to 366 days',
      }),
    ),
    status: Type.Optional(
      Type.Union([Type.Literal('Pending'), Type.Literal('AcceptedSettlementInProcess')], {
        description: 'What the bank answers meanwhile (default AcceptedSettlementInProcess)',
      }),
    ),
    off: Type.Optional(Type.Boolean({ description: 'true: confirm at once again' })),
  },
  { additionalProperties: false },
);
export type DelayBody = Static<typeof DelayBody>;

export const LatencyBody = Type.Object(
  {
    ms: Type.Integer({
      minimum: 0,
      maximum: 120_000,
      description: 'How long the bank waits before answering',
      'x-expected': 'milliseconds from 0 to 120000',
    }),
    count: Type.Optional(Type.Integer({ minimum: 1, maximum: 1000, description: 'For how many calls (default 1)' })),
  },
  { additionalProperties: false },
);
export type LatencyBody = Static<typeof LatencyBody>;

export const ReleaseBody = Type.Object(
  {
    outcome: Type.Optional(
      Type.Union([Type.Literal('completed'), Type.Literal('rejected')], {
        description: 'How the bank settles the held payment (default completed)',
      }),
    ),
    reason: Type.Optional(
      Type.String({
        pattern: '^[a-z][a-z_]{0,39}$',
        description: 'With rejected: e.g. insufficient_funds',
        'x-expected': 'snake_case, e.g. insufficient_funds',
      }),
    ),
  },
  { additionalProperties: false },
);
export type ReleaseBody = Static<typeof ReleaseBody>;

type Target = { consentId: string | null; paymentId?: string | null };
type Action = {
  name: 'decline-next' | 'delay' | 'latency' | 'release';
  summary: (noun: string) => string;
  body: TSchema;
  hook(target: Target, body: any): { path: string; body: unknown };
};

const noConsentYet = (noun: string) =>
  new AppError(
    'conflict.invalid_state',
    `No bank has been asked for this ${noun} yet: the payer has not chosen a bank`,
    { status: 'awaiting-bank' },
  );

const ACTIONS: Record<Action['name'], Action> = {
  'decline-next': {
    name: 'decline-next',
    summary: (noun) => `The bank refuses the next \`count\` payments under this ${noun}'s consent`,
    body: DeclineNextBody,
    hook: (target, body) => ({
      path: `/consents/${encodeURIComponent(target.consentId!)}/decline-next`,
      body: { count: body.count ?? 1, ...(body.reason !== undefined && { reason: body.reason }) },
    }),
  },
  delay: {
    name: 'delay',
    summary: (noun) =>
      `The bank holds the confirmation of payments under this ${noun}'s consent, so they are unconfirmed until it settles them`,
    body: DelayBody,
    hook: (target, body) => ({ path: `/consents/${encodeURIComponent(target.consentId!)}/delay`, body }),
  },
  latency: {
    name: 'latency',
    summary: (noun) => `The bank answers calls about this ${noun}'s consent slowly`,
    body: LatencyBody,
    hook: (target, body) => ({
      path: '/latency',
      body: { consent_id: target.consentId, ms: body.ms, count: body.count ?? 1 },
    }),
  },
  release: {
    name: 'release',
    summary: () => 'The bank settles a payment whose confirmation it held: completed or rejected',
    body: ReleaseBody,
    hook: (target, body) => ({ path: `/payments/${encodeURIComponent(target.paymentId!)}/release`, body }),
  },
};

type Resource = {
  path: 'payments' | 'recurring-consents' | 'subscriptions' | 'requests';
  noun: string;
  idOf: string;
  envelope: TSchema;
  actions: Array<Action['name']>;
  target(ctx: Ctx, id: string): Promise<Target>;
  present(ctx: Ctx, id: string): unknown;
};

const RESOURCES: Resource[] = [
  {
    path: 'payments',
    noun: 'payment',
    idOf: 'Payment id (payment_…)',
    envelope: PaymentEnvelope,
    actions: ['decline-next', 'delay', 'latency', 'release'],
    target: async (ctx, id) => {
      const ids = await bankIdsOfPayment(ctx, id);
      const enduring = ids.recurringConsentId
        ? await bankConsentOfConsent(ctx, ids.recurringConsentId)
        : ids.subscriptionId
          ? await bankConsentOfSubscription(ctx, ids.subscriptionId)
          : null;
      return { consentId: ids.consentId ?? enduring, paymentId: ids.paymentId };
    },
    present: retrievePayment,
  },
  {
    path: 'recurring-consents',
    noun: 'recurring consent',
    idOf: 'Recurring consent id (recurring_…)',
    envelope: ConsentEnvelope,
    actions: ['delay', 'latency'],
    target: async (ctx, id) => ({ consentId: await bankConsentOfConsent(ctx, id) }),
    present: retrieveConsent,
  },
  {
    path: 'subscriptions',
    noun: 'subscription',
    idOf: 'Subscription id (subscription_…)',
    envelope: SubscriptionEnvelope,
    actions: ['delay', 'latency'],
    target: async (ctx, id) => ({ consentId: await bankConsentOfSubscription(ctx, id) }),
    present: retrieveSubscription,
  },
  {
    // A request whose payer is at their bank now: what the bank does once they approve.
    path: 'requests',
    noun: 'request',
    idOf: 'Request id (request_…)',
    envelope: RequestEnvelope,
    actions: ['decline-next', 'delay', 'latency'],
    target: async (ctx, id) => {
      // Only the merchant's own request: presenting it (its QR code) waits for the answer.
      await getRequest(ctx.db, { userId: ctx.merchant.id, mode: ctx.mode }, id);
      return {
        consentId:
          (await pendingBankConsentOfRequest(ctx, id)) ?? (await pendingBankConsentOfAuthorisation(ctx.db, id)),
      };
    },
    present: retrieveRequest,
  },
];

/** The object a hook acts on, as the audit trail names it (`payment.test_delay`). */
const AUDITED_AS: Record<string, string> = {
  payments: 'payment',
  'recurring-consents': 'consent',
  subscriptions: 'subscription',
  requests: 'request',
};

/** A refusal by the bank is 409 conflict.invalid_state, the bank out of reach 503 (BankRegistry.sandboxTestHook). */
async function callBank(deps: Deps, hook: { path: string; body: unknown }): Promise<void> {
  await deps.banks.sandboxTestHook(hook.path, hook.body);
}

/** The permission each hook needs: write of the object it acts on. */
const KEY_RESOURCE_OF: Record<Resource['path'], KeyResource> = {
  payments: 'payments',
  'recurring-consents': 'consents',
  subscriptions: 'subscriptions',
  requests: 'requests',
};

export async function registerBankHookRoutes(app: App, deps: Deps): Promise<void> {
  const auth = apiKeyAuth(deps);
  for (const resource of RESOURCES) {
    for (const name of resource.actions) {
      const action = ACTIONS[name];
      app.post(
        `/v1/test-helpers/${resource.path}/:id/${name}`,
        {
          onRequest: [auth, testKeysOnly],
          config: { bodyOptional: true, keyScope: keyScope(KEY_RESOURCE_OF[resource.path]) },
          preValidation: async (request) => {
            if (request.body === undefined) request.body = {};
          },
          schema: {
            tags: ['Test helpers'],
            summary: action.summary(resource.noun),
            params: IdParams(resource.idOf),
            body: action.body,
            response: { 200: resource.envelope, ...errorResponses, 503: errorResponses[400] },
          },
        },
        async (request) => {
          const target = await resource.target(request.ctx, request.params.id);
          // Releasing needs only the bank's payment; the other hooks act on its consent.
          if (name === 'release' && !target.paymentId) {
            throw new AppError(
              'conflict.invalid_state',
              'This payment has not been executed at the bank yet, so there is nothing to release',
              { status: 'not-executed' },
            );
          }
          if (name !== 'release' && !target.consentId) throw noConsentYet(resource.noun);
          await callBank(deps, action.hook(target, request.body));
          await recordAuditAfter(
            request.ctx,
            `${AUDITED_AS[resource.path]}.test_${name.replace('-', '_')}`,
            request.params.id,
            (request.body ?? {}) as Record<string, unknown>,
          );
          return await resource.present(request.ctx, request.params.id);
        },
      );
    }
  }
}
