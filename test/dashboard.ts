import type { TestContext } from 'node:test';
import { apiClient, buildTestApp, createTestMerchant, type ApiClient, type TestApp, type TestMerchant } from './helpers.ts';
import { Browser } from './payer.ts';
import { smtpReceiver, type SmtpReceiver } from './smtp.ts';

// The merchant dashboard's world for tests: a listening service that mails through a real SMTP
// receiver, and two merchants who can sign in with a known password.

export const PASSWORD = 'correct horse battery';

export type DashMerchant = TestMerchant & { email: string; live: ApiClient; test: ApiClient };
export type DashWorld = { app: TestApp; baseUrl: string; smtp: SmtpReceiver; merchants: DashMerchant[] };

export async function dashWorld(t: TestContext, options: { workers?: boolean } = {}): Promise<DashWorld> {
  const smtp = await smtpReceiver(t);
  const app = await buildTestApp(t, { smtpUrl: smtp.url, workers: options.workers ?? true });
  const baseUrl = (await app.app.listen({ port: 0, host: '127.0.0.1' })).replace('localhost', '127.0.0.1');
  app.deps.config.publicBaseUrl = baseUrl;
  const merchants: DashMerchant[] = [];
  for (const name of ['Kōwhai Coffee', 'Tui Books']) {
    const merchant = await createTestMerchant(app, name);
    const user = await app.deps.db.selectFrom('users').select('email').where('id', '=', merchant.userId).executeTakeFirstOrThrow();
    merchants.push({ ...merchant, email: user.email, live: apiClient(app, merchant.liveKey), test: apiClient(app, merchant.testKey) });
  }
  return { app, baseUrl, smtp, merchants };
}

/** Signs a merchant in through the login page; the browser then holds the session cookie. */
export async function logIn(world: DashWorld, merchant: DashMerchant, password = PASSWORD): Promise<Browser> {
  const browser = new Browser(world.baseUrl);
  const page = await browser.request('/dashboard/login');
  const done = await browser.request('/dashboard/login', { form: { email: merchant.email, password, csrf: Browser.csrfOf(page.text) } });
  if (done.status !== 303) throw new Error(`login failed: ${done.status} ${done.text.slice(0, 500)}`);
  return browser;
}

/** Visible text of a page, tags removed and the escapes the templates write turned back. */
export const textOf = (html: string) =>
  html.replace(/<[^>]+>/g, ' ').replace(/&#39;/g, "'").replace(/&quot;/g, '"').replace(/&lt;/g, '<').replace(/&gt;/g, '>').replace(/&amp;/g, '&').replace(/\s+/g, ' ');
