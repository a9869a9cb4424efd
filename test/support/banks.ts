// Helpers for the banks tests: the whole service listening on a real port (so the mounted sandbox
// bank is reached over HTTP), a tiny client of the standard, and a payer who signs in and
// approves through the bank's HTML forms as a browser without JavaScript would.
import type { TestContext } from 'node:test';
import { buildTestApp, type TestApp } from '../helpers.ts';
import type { Runtime } from '../../src/runtime.ts';
import { SERVICE_CLIENT_ID, STANDALONE_CLIENT_SECRET } from '../../src/sandbox-bank/sandbox-bank.app.ts';

export type Listening = TestApp & { baseUrl: string; bankUrl: string; redirectUri: string };

export async function listeningApp(t: TestContext): Promise<Listening> {
  const app = await buildTestApp(t);
  const address = await app.app.listen({ port: 0, host: '127.0.0.1' });
  const baseUrl = address.replace('localhost', '127.0.0.1');
  app.deps.config.publicBaseUrl = baseUrl;
  return { ...app, baseUrl, bankUrl: `${baseUrl}/sandbox-bank`, redirectUri: `${baseUrl}/pay/return` };
}

export type Reply = { status: number; body: any; text: string; headers: Headers };

export async function call(
  method: string,
  url: string,
  options: { token?: string; body?: unknown; headers?: Record<string, string>; form?: Record<string, string> } = {},
): Promise<Reply> {
  const headers: Record<string, string> = { ...options.headers };
  if (options.token) headers.authorization = `Bearer ${options.token}`;
  let body: string | undefined;
  if (options.form) {
    headers['content-type'] = 'application/x-www-form-urlencoded';
    body = new URLSearchParams(options.form).toString();
  } else if (options.body !== undefined) {
    headers['content-type'] = 'application/json';
    body = JSON.stringify(options.body);
  }
  const response = await fetch(url, { method, headers, body, redirect: 'manual' });
  const text = await response.text();
  let json: any;
  try {
    json = text ? JSON.parse(text) : undefined;
  } catch {
    json = undefined;
  }
  return { status: response.status, body: json, text, headers: response.headers };
}

/** Authorization for the sandbox bank's test hooks: the service's client credentials, as HTTP Basic. */
export const SERVICE_BASIC = `Basic ${Buffer.from(`${SERVICE_CLIENT_ID}:${STANDALONE_CLIENT_SECRET}`).toString('base64')}`;

/** A sandbox bank test hook, called as the service's client. */
export function hook(method: 'GET' | 'POST', url: string, body?: unknown): Promise<Reply> {
  return call(method, url, { headers: { authorization: SERVICE_BASIC }, ...(body !== undefined && { body }) });
}

/** A sandbox payer's balance, as the sandbox's test hook shows it (e.g. '95.00'), from the service's base URL. */
export async function sandboxBalanceOf(baseUrl: string, username: string): Promise<string> {
  return (await hook('GET', `${baseUrl}/sandbox-bank/test/payers/${username}`)).body.Data.Balance.Amount as string;
}

export async function clientToken(bankUrl: string): Promise<string> {
  const reply = await call('POST', `${bankUrl}/token`, {
    form: { grant_type: 'client_credentials', client_id: SERVICE_CLIENT_ID, client_secret: STANDALONE_CLIENT_SECRET },
  });
  if (reply.status !== 200) throw new Error(`token: ${reply.status} ${reply.text}`);
  return reply.body.access_token;
}

function hiddenFields(html: string): Record<string, string> {
  const fields: Record<string, string> = {};
  for (const match of html.matchAll(/<input type="hidden" name="([^"]+)" value="([^"]*)">/g)) {
    fields[match[1]] = match[2]
      .replace(/&amp;/g, '&')
      .replace(/&quot;/g, '"')
      .replace(/&#39;/g, "'")
      .replace(/&lt;/g, '<')
      .replace(/&gt;/g, '>');
  }
  return fields;
}

function formAction(html: string): string {
  const match = /<form method="post" action="([^"]+)">/.exec(html);
  if (!match) throw new Error(`no form in page: ${html.slice(0, 300)}`);
  return match[1];
}

/** Opens the authorise URL, signs in, and presses Approve or Decline; returns the redirect. */
export async function payerDecides(
  authoriseUrl: string,
  decision: 'approve' | 'decline',
  username = 'sandbox',
): Promise<{ location: URL; consentPage: string }> {
  const origin = new URL(authoriseUrl).origin;
  const login = await call('GET', authoriseUrl);
  if (login.status !== 200) throw new Error(`authorize: ${login.status} ${login.text}`);
  const consent = await call('POST', origin + formAction(login.text), {
    form: { ...hiddenFields(login.text), username, password: 'anything' },
  });
  if (consent.status !== 200) throw new Error(`login: ${consent.status} ${consent.text}`);
  const decided = await call('POST', origin + formAction(consent.text), {
    form: { ...hiddenFields(consent.text), decision },
  });
  if (decided.status !== 303) throw new Error(`decision: ${decided.status} ${decided.text}`);
  return { location: new URL(decided.headers.get('location')!), consentPage: consent.text };
}

export const creditor = {
  SchemeName: 'BECSElectronicCredit',
  Identification: '12-3456-7890123-00',
  Name: 'Acme Coffee',
} as const;
export const remittance = (particulars = 'V-ABC123', reference = 'INV42') => ({
  Reference: {
    CreditorName: 'Acme Coffee',
    CreditorReference: { Particulars: particulars, Code: 'TONO', Reference: reference },
  },
});

/**
 * The test-mode sandbox connector's submissions lose their answer before they reach the bank (a
 * timeout): the first `lose` of them. The times they were sent at, and the answers of those that
 * reached the bank, are kept.
 */
export function loseSubmissions(t: TestContext, runtime: Pick<Runtime, 'deps'>, lose: number) {
  const connector = runtime.deps.banks.connectorFor('sandbox', 'test')!;
  const submit = connector.submitPayment.bind(connector);
  const sentAt: number[] = [];
  const answered: Array<Awaited<ReturnType<typeof submit>>> = [];
  t.mock.method(connector, 'submitPayment', async (input: Parameters<typeof submit>[0]) => {
    sentAt.push(input.at ?? Date.now());
    if (sentAt.length <= lose) return { ok: false, reason: 'timeout', message: 'no answer in 10 s', unknown: true };
    const answer = await submit(input);
    answered.push(answer);
    return answer;
  });
  return { sentAt, answered };
}

/**
 * The test-mode sandbox connector loses its first submission's answer, then refuses every one sent
 * again on its limits, as a bank that counts the payment it made before it looks at its keys
 * would. How many were sent is kept.
 */
export function loseThenRefuseOnLimits(t: TestContext, runtime: Pick<Runtime, 'deps'>) {
  const connector = runtime.deps.banks.connectorFor('sandbox', 'test')!;
  const sent = { count: 0 };
  t.mock.method(connector, 'submitPayment', async () => {
    sent.count += 1;
    return sent.count === 1
      ? { ok: false, reason: 'timeout', message: 'no answer in 10 s', unknown: true }
      : { ok: false, reason: 'limit_exceeded', limit: 'max_per_period', message: 'Exceed.Frequency', unknown: false };
  });
  return sent;
}
