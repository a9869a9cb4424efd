import assert from 'node:assert/strict';
import type { TestContext } from 'node:test';
import {
  apiClient,
  buildTestApp,
  createTestMerchant,
  type ApiClient,
  type TestApp,
  type TestMerchant,
} from './helpers.ts';
import { smtpReceiver, type SmtpReceiver } from './smtp.ts';
import { createOwnerMember } from '../src/modules/team/team.service.ts';

// The payer dashboard's world for tests: a listening service that mails through a real SMTP
// receiver, two merchants, and a payer with a subscription and a recurring consent at each.

export type PayerWorld = {
  app: TestApp;
  baseUrl: string;
  smtp: SmtpReceiver;
  merchants: Array<{ merchant: TestMerchant; api: ApiClient }>;
  /** Subscriptions and consents by payer email. */
  subscriptions: Record<string, string[]>;
  consents: Record<string, Array<{ id: string; token?: string }>>;
};

/**
 * Two merchants, each with subscriptions and consents for pat@example.com (and the first, for
 * other@example.com too). `taxSettings`: the first merchant's, saved before anything is charged.
 * `payerOnTeam`: pat@example.com is also on the first merchant's team, so that merchant's mail to pat
 * goes by SMTP; test mode emails no one else (docs/email.md, Transport), and the other's is a file.
 */
export async function payerWorld(
  t: TestContext,
  options: { taxSettings?: Record<string, unknown>; payerOnTeam?: boolean } = {},
): Promise<PayerWorld> {
  const smtp = await smtpReceiver(t);
  const app = await buildTestApp(t, { smtpUrl: smtp.url, workers: true });
  const baseUrl = (await app.app.listen({ port: 0, host: '127.0.0.1' })).replace('localhost', '127.0.0.1');
  app.deps.config.publicBaseUrl = baseUrl;
  const merchants = [];
  for (const name of ['Kōwhai Coffee', 'Tui Books']) {
    const merchant = await createTestMerchant(app, name);
    merchants.push({ merchant, api: apiClient(app, merchant.testKey) });
  }
  const world: PayerWorld = { app, baseUrl, smtp, merchants, subscriptions: {}, consents: {} };
  if (options.payerOnTeam)
    await createOwnerMember(app.deps.db, {
      userId: merchants[0]!.merchant.userId,
      email: 'pat@example.com',
      passwordHash: 'unused',
      now: Date.now(),
    });
  if (options.taxSettings) {
    const saved = await apiClient(app, merchants[0]!.merchant.liveKey).post('/v1/tax-settings', options.taxSettings);
    assert.equal(saved.status, 200, saved.text);
  }
  for (const [index, { merchant, api }] of merchants.entries()) {
    for (const email of index === 0 ? ['pat@example.com', 'other@example.com'] : ['pat@example.com']) {
      const sub = await api.post('/v1/requests', {
        bank_account_id: merchant.bankAccountId,
        message: 'Beans',
        subscription_options: { amount: '15.00 NZD', period: 'fortnightly' },
        cust_info: { email },
      });
      assert.equal(sub.status, 201, sub.text);
      const subscription = (await api.post(`/v1/test-helpers/requests/${sub.body.request.id}/pay`, {})).body
        .subscription;
      (world.subscriptions[email] ??= []).push(subscription.id);
      const rec = await api.post('/v1/requests', {
        bank_account_id: merchant.bankAccountId,
        message: 'Top-ups',
        recurring_options: { period: 'weekly', max_per_period: '100.00 NZD', max_per_payment: '50.00 NZD' },
        cust_info: { email },
      });
      const consent = (await api.post(`/v1/test-helpers/requests/${rec.body.request.id}/pay`, {})).body
        .recurring_consent;
      const event = await app.deps.db
        .selectFrom('events')
        .select('secret_sealed')
        .where('object_id', '=', consent.id)
        .where('type', '=', 'recurring_payment.authorised')
        .executeTakeFirstOrThrow();
      (world.consents[email] ??= []).push({ id: consent.id, token: app.deps.secrets.open(event.secret_sealed!) });
    }
  }
  return world;
}

/** A browser's cookie jar for fetch, enough for one origin. */
export class Browser {
  readonly cookies = new Map<string, string>();
  readonly baseUrl: string;
  constructor(baseUrl: string) {
    this.baseUrl = baseUrl;
  }

  async request(
    path: string,
    init: {
      method?: string;
      form?: Record<string, string | string[]>;
      /** A JSON body, as a page's script posts it. */
      json?: unknown;
      headers?: Record<string, string>;
    } = {},
  ) {
    const headers: Record<string, string> = { ...init.headers };
    if (this.cookies.size > 0) headers.cookie = [...this.cookies].map(([k, v]) => `${k}=${v}`).join('; ');
    if (init.form || init.json !== undefined) {
      headers['content-type'] = init.form ? 'application/x-www-form-urlencoded' : 'application/json';
      headers.origin ??= this.baseUrl;
    }
    const response = await fetch(`${this.baseUrl}${path}`, {
      method: init.method ?? (init.form || init.json !== undefined ? 'POST' : 'GET'),
      headers,
      // A field given as a list is sent once per value, as ticked checkboxes are.
      body:
        init.json !== undefined
          ? JSON.stringify(init.json)
          : init.form
            ? new URLSearchParams(
                Object.entries(init.form).flatMap(([name, value]) =>
                  (Array.isArray(value) ? value : [value]).map((one): [string, string] => [name, one]),
                ),
              ).toString()
            : undefined,
      redirect: 'manual',
    });
    for (const line of response.headers.getSetCookie()) {
      const [pair] = line.split(';');
      const [name, ...rest] = pair.split('=');
      const value = rest.join('=');
      if (value === '' || /max-age=0|expires=thu, 01 jan 1970/i.test(line)) this.cookies.delete(name.trim());
      else this.cookies.set(name.trim(), value);
    }
    return {
      status: response.status,
      headers: response.headers,
      text: await response.text(),
      setCookies: response.headers.getSetCookie(),
    };
  }

  cookie(name: string): string | undefined {
    return this.cookies.get(name);
  }

  /** The value of a hidden csrf field on a page. */
  static csrfOf(html: string): string {
    const match = /name="csrf" value="([^"]+)"/.exec(html);
    assert.ok(match, 'a csrf field on the page');
    return match[1];
  }
}

/** Signs a payer in through the pages and the mailed code. */
export async function signIn(world: PayerWorld, email: string): Promise<Browser> {
  const browser = new Browser(world.baseUrl);
  const start = await browser.request('/customer');
  const seenBefore = world.smtp.messages.length;
  const asked = await browser.request('/customer/code', { form: { email, csrf: Browser.csrfOf(start.text) } });
  assert.equal(asked.status, 200, asked.text);
  const mail = await world.smtp.waitFor(
    (m) => m.to === email && /sign-in code/.test(m.subject) && world.smtp.messages.indexOf(m) >= seenBefore,
  );
  const code = /(\d{6})/.exec(mail.subject)![1];
  const verified = await browser.request('/customer/verify', {
    form: { email, code, csrf: Browser.csrfOf(asked.text) },
  });
  assert.equal(verified.status, 303, verified.text);
  assert.equal(verified.headers.get('location'), '/customer');
  return browser;
}
