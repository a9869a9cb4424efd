import type { TestContext } from 'node:test';
import { NO_ORIGIN } from '../src/modules/context.ts';
import {
  apiClient,
  buildTestApp,
  createTestMerchant,
  type ApiClient,
  type TestApp,
  type TestMerchant,
} from './helpers.ts';
import { Browser } from './payer.ts';
import { hashPassword } from '../src/shared/crypto.ts';
import type { Role } from '../src/modules/team/team.permissions.ts';
import { changeMemberRole, createOwnerMember, firstOwnerOf } from '../src/modules/team/team.service.ts';
import { smtpReceiver, type SmtpReceiver } from './smtp.ts';
import assert from 'node:assert/strict';
import { localAt } from '../src/shared/zone.ts';

// The merchant dashboard's world for tests: a listening service that mails through a real SMTP
// receiver, and two merchants who can sign in with a known password.

export const PASSWORD = 'correct horse battery';

export type DashMerchant = TestMerchant & { email: string; live: ApiClient; test: ApiClient };
export type DashWorld = { app: TestApp; baseUrl: string; smtp: SmtpReceiver; merchants: DashMerchant[] };

export async function dashWorld(
  t: TestContext,
  options: { workers?: boolean; banksFile?: string | null } = {},
): Promise<DashWorld> {
  const smtp = await smtpReceiver(t);
  const { workers = true, ...overrides } = options;
  const app = await buildTestApp(t, { smtpUrl: smtp.url, workers, ...overrides });
  const baseUrl = (await app.app.listen({ port: 0, host: '127.0.0.1' })).replace('localhost', '127.0.0.1');
  app.deps.config.publicBaseUrl = baseUrl;
  const merchants: DashMerchant[] = [];
  for (const name of ['Kōwhai Coffee', 'Tui Books']) {
    const merchant = await createTestMerchant(app, name);
    const user = await app.deps.db
      .selectFrom('users')
      .select('email')
      .where('id', '=', merchant.userId)
      .executeTakeFirstOrThrow();
    merchants.push({
      ...merchant,
      email: user.email,
      live: apiClient(app, merchant.liveKey),
      test: apiClient(app, merchant.testKey),
    });
  }
  return { app, baseUrl, smtp, merchants };
}

/** Signs a merchant's owner in through the login page; the browser then holds the session cookie. */
export async function logIn(world: DashWorld, merchant: DashMerchant, password = PASSWORD): Promise<Browser> {
  return logInAs(world, merchant.email, password);
}

let memberCounter = 0;
let passwordHash: Promise<string> | null = null;

/**
 * A member of the merchant's team with `role` and the password PASSWORD, made as the operator's
 * owner and then given the role by the merchant's first owner, through the team service.
 */
export async function addMember(
  world: DashWorld,
  merchant: DashMerchant,
  role: Role,
): Promise<{ id: string; email: string }> {
  memberCounter += 1;
  const deps = world.app.deps;
  const email = `${role}-${memberCounter}-${merchant.userId.slice(-6).toLowerCase()}@example.com`;
  passwordHash ??= hashPassword(PASSWORD);
  const member = await createOwnerMember(deps.db, {
    userId: merchant.userId,
    email,
    passwordHash: await passwordHash,
    now: deps.clock.now(),
  });
  const owner = (await firstOwnerOf(deps.db, merchant.userId))!;
  const refused = await changeMemberRole(
    deps,
    { userId: merchant.userId, memberId: owner.id, email: owner.email, role: 'owner', origin: NO_ORIGIN },
    member.id,
    role,
  );
  if (refused) throw new Error(refused.message);
  return { id: member.id, email };
}

/** Signs anyone in through the login page by email; the browser then holds the session cookie. */
export async function logInAs(world: { baseUrl: string }, email: string, password = PASSWORD): Promise<Browser> {
  const browser = new Browser(world.baseUrl);
  const page = await browser.request('/dashboard/login');
  const done = await browser.request('/dashboard/login', {
    form: { email, password, csrf: Browser.csrfOf(page.text) },
  });
  if (done.status !== 303) throw new Error(`login failed: ${done.status} ${done.text.slice(0, 500)}`);
  return browser;
}

/** Visible text of a page, tags removed and the escapes the templates write turned back. */
export const textOf = (html: string) =>
  html
    .replace(/<[^>]+>/g, ' ')
    .replace(/&#39;/g, "'")
    .replace(/&quot;/g, '"')
    .replace(/&lt;/g, '<')
    .replace(/&gt;/g, '>')
    .replace(/&amp;/g, '&')
    .replace(/\s+/g, ' ');

/** One of everything in a merchant's test mode: a paid request, a customer, a subscription, a consent, a webhook, an event. */
export async function objectsOf(world: DashWorld, merchant: DashMerchant) {
  const api = merchant.test;
  const request = (
    await api.post('/v1/requests', { bank_account_id: merchant.bankAccountId, message: 'Cup', amount: '4.00 NZD' })
  ).body.request;
  const payment = (
    await api.post(`/v1/test-helpers/requests/${request.id}/pay`, {
      cust_info: { email: 'pat@example.com', first_name: 'Pat' },
    })
  ).body.payment;
  const subRequest = (
    await api.post('/v1/requests', {
      bank_account_id: merchant.bankAccountId,
      message: 'Beans',
      subscription_options: { amount: '15.00 NZD', period: 'fortnightly' },
      cust_info: { email: 'pat@example.com' },
    })
  ).body.request;
  const subscription = (await api.post(`/v1/test-helpers/requests/${subRequest.id}/pay`, {})).body.subscription;
  const recRequest = (
    await api.post('/v1/requests', {
      bank_account_id: merchant.bankAccountId,
      message: 'Top-ups',
      recurring_options: { period: 'weekly', max_per_period: '100.00 NZD', max_per_payment: '50.00 NZD' },
      cust_info: { email: 'pat@example.com' },
    })
  ).body.request;
  const consent = (await api.post(`/v1/test-helpers/requests/${recRequest.id}/pay`, {})).body.recurring_consent;
  const webhook = (await api.post('/v1/webhooks', { url: 'https://example.com/hooks' })).body.webhook;
  const customer = (await api.get('/v1/customers')).body.customers[0];
  const event = (await api.get('/v1/events', { query: { object_id: request.id } })).body.events[0];
  const key = (
    await world.app.deps.db
      .selectFrom('api_keys')
      .select('id')
      .where('user_id', '=', merchant.userId)
      .where('mode', '=', 'test')
      .executeTakeFirstOrThrow()
  ).id;
  return { request, payment, subscription, consent, webhook, customer, event, key };
}

export function detailPaths(o: Awaited<ReturnType<typeof objectsOf>>): string[] {
  return [
    `requests/${o.request.id}`,
    `requests/${o.request.id}/delete`,
    `payments/${o.payment.id}`,
    `customers/${o.customer.id}`,
    `subscriptions/${o.subscription.id}`,
    `subscriptions/${o.subscription.id}/pause`,
    `subscriptions/${o.subscription.id}/resume`,
    `subscriptions/${o.subscription.id}/cancel`,
    `recurring-consents/${o.consent.id}`,
    `recurring-consents/${o.consent.id}/revoke`,
    `webhooks/${o.webhook.id}`,
    `webhooks/${o.webhook.id}/delete`,
    `events/${o.event.id}`,
    `api-keys/${o.key}/revoke`,
    `api-keys/${o.key}/roll`,
  ];
}

/**
 * Moves the merchant's test clock to 9 am on 2 January next year in New Zealand, when UTC still has
 * 1 January, for the names of files dated by the merchant's day; that day, YYYY-MM-DD.
 */
export async function clockOnNzMorningOfUtcYesterday(merchant: DashMerchant): Promise<string> {
  const year = new Date().getUTCFullYear() + 1;
  const nzMorning = localAt(`${year}-01-02T09:00`, 'Pacific/Auckland');
  assert.equal(nzMorning.toUTC().toISODate(), `${year}-01-01`);
  const moved = await merchant.test.post('/v1/test-helpers/clock/advance', { to: nzMorning.toUTC().toISO() });
  assert.equal(moved.status, 200, moved.text);
  return `${year}-01-02`;
}
