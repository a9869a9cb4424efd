import { test } from 'node:test';
import assert from 'node:assert/strict';
import http from 'node:http';
import pino from 'pino';
import { secretFreeLog } from '../../logger.ts';
import { loggerOptionsFor } from '../../runtime.ts';
import type { BankConnector } from './bank-connector.ts';
import { hook, listeningApp, payerDecides, type Listening } from '../../../test/support/banks.ts';
import { BankHttp, observeBankExchanges, type BankExchange } from './open-banking.http.ts';
import { SERVICE_CLIENT_ID, STANDALONE_CLIENT_SECRET } from '../../sandbox-bank/sandbox-bank.app.ts';
import { OpenBankingConnector } from './open-banking.connector.ts';
import { OpenBankingRegistry } from './registry.ts';
import { ClientSecretSecurity } from './security.ts';

// The connector against the sandbox bank listening on a real port, through the registry the
// service uses. Both engines: listeningApp is buildTestApp on a real port.

const creditor = { name: 'Acme Coffee', accountNumber: '12-3456-7890123-00' };
let counter = 0;
const key = () => `ck-${Date.now()}-${++counter}`;
const remittance = () => ({
  particulars: `V-${String(++counter).padStart(6, '0')}`,
  code: 'TONO',
  reference: 'ORDER7',
});

async function approve(
  app: Listening,
  connector: BankConnector,
  consentId: string,
  decision: 'approve' | 'decline' = 'approve',
) {
  const url = connector.authoriseUrl({ consentId, redirectUri: app.redirectUri, state: 'state-1' });
  return (await payerDecides(url, decision)).location;
}

async function enduringConsent(
  app: Listening,
  connector: BankConnector,
  overrides: Partial<Parameters<BankConnector['createEnduringConsent']>[0]> = {},
) {
  const created = await connector.createEnduringConsent({
    fromAt: Date.parse('2027-01-01T00:00:00+13:00'),
    toAt: null,
    maxPerPaymentCents: 5_000,
    period: 'Weekly',
    maxPerPeriodCents: 8_000,
    maxCountPerPeriod: null,
    totalCount: null,
    totalAmountCents: null,
    creditor,
    remittance: remittance(),
    idempotencyKey: key(),
    at: Date.parse('2027-01-01T00:00:00+13:00'),
    ...overrides,
  });
  assert.ok(created.ok, JSON.stringify(created));
  const location = await approve(app, connector, created.consentId);
  const exchanged = await connector.exchangeCode({
    code: location.searchParams.get('code')!,
    redirectUri: app.redirectUri,
  });
  assert.ok(exchanged.ok);
  return { consentId: created.consentId, accessToken: exchanged.accessToken };
}

test('one-off payment through the connector: consent, authorise redirect, code exchange, execution', async (t) => {
  const app = await listeningApp(t);
  const connector = app.deps.banks.connectorFor('anz', 'test')!;
  assert.equal(connector.bankId, 'anz');
  const block = remittance();
  const consent = await connector.createSingleConsent({
    amountCents: 1_250,
    creditor,
    remittance: block,
    idempotencyKey: key(),
  });
  assert.ok(consent.ok);
  assert.deepEqual(await connector.getConsent({ consentId: consent.consentId, kind: 'single' }), {
    ok: true,
    status: 'AwaitingAuthorisation',
  });

  const authoriseUrl = connector.authoriseUrl({
    consentId: consent.consentId,
    redirectUri: app.redirectUri,
    state: 'abc',
  });
  assert.ok(authoriseUrl.startsWith(`${app.bankUrl}/authorize?`));
  const location = (await payerDecides(authoriseUrl, 'approve')).location;
  assert.equal(location.searchParams.get('state'), 'abc');
  const code = location.searchParams.get('code')!;
  const exchanged = await connector.exchangeCode({ code, redirectUri: app.redirectUri });
  assert.ok(exchanged.ok);
  assert.equal(exchanged.consentId, consent.consentId);
  assert.deepEqual(await connector.exchangeCode({ code, redirectUri: app.redirectUri }), {
    ok: false,
    reason: 'invalid_code',
    message: 'The code has already been used',
    bankCode: 'invalid_grant',
    unknown: false,
  });

  const submitted = await connector.submitPayment({
    consentId: consent.consentId,
    accessToken: exchanged.accessToken,
    amountCents: 1_250,
    creditor,
    remittance: block,
    idempotencyKey: key(),
  });
  assert.ok(submitted.ok);
  assert.equal(submitted.outcome, 'successful');
  assert.deepEqual(await connector.getPaymentStatus({ paymentId: submitted.paymentId }), {
    ok: true,
    outcome: 'successful',
  });
  assert.deepEqual(await connector.getConsent({ consentId: consent.consentId, kind: 'single' }), {
    ok: true,
    status: 'Consumed',
  });
  // The consent asked for the payer's account (DebtorAccountRelease): the bank gives it for this payment.
  const payer = (await hook('GET', `${app.bankUrl}/test/payers/sandbox`)).body.Data;
  assert.deepEqual(await connector.getDebtorAccount({ paymentId: submitted.paymentId }), {
    ok: true,
    account: { schemeName: 'BECSElectronicCredit', identification: payer.AccountNumber, name: payer.Name },
  });
  const unknown = await connector.getPaymentStatus({ paymentId: 'dp-missing' });
  assert.deepEqual(unknown, {
    ok: false,
    reason: 'invalid_request',
    message: 'No such resource: dp-missing',
    bankCode: 'Field.Invalid',
    unknown: false,
  });
});

test('a payer who declines comes back with error=access_denied', async (t) => {
  const app = await listeningApp(t);
  const connector = app.deps.banks.connectorFor('sandbox', 'test')!;
  const consent = await connector.createSingleConsent({
    amountCents: 500,
    creditor,
    remittance: remittance(),
    idempotencyKey: key(),
  });
  assert.ok(consent.ok);
  const location = await approve(app, connector, consent.consentId, 'decline');
  assert.equal(location.searchParams.get('error'), 'access_denied');
  assert.deepEqual(await connector.getConsent({ consentId: consent.consentId, kind: 'single' }), {
    ok: true,
    status: 'Rejected',
  });
});

test('enduring consent: limits by the caller clock, bank declines mapped to reasons, revocation', async (t) => {
  const app = await listeningApp(t);
  const connector = app.deps.banks.connectorFor('kiwibank', 'test')!;
  const { consentId, accessToken } = await enduringConsent(app, connector);
  const submit = (amountCents: number, at: string) =>
    connector.submitPayment({
      consentId,
      accessToken,
      amountCents,
      creditor,
      remittance: remittance(),
      idempotencyKey: key(),
      at: Date.parse(at),
    });

  const first = await submit(5_000, '2027-02-01T10:00:00+13:00');
  assert.ok(first.ok && first.outcome === 'successful');
  assert.deepEqual(await submit(5_001, '2027-02-02T10:00:00+13:00'), {
    ok: false,
    reason: 'limit_exceeded',
    limit: 'max_per_payment',
    bankCode: 'Resource.Consent.Exceed.MaximumAmount',
    message: 'The amount is over the consent MaximumAmount per payment',
    unknown: false,
  });
  const overWeek = await submit(3_001, '2027-02-07T23:00:00+13:00');
  assert.ok(!overWeek.ok && overWeek.reason === 'limit_exceeded' && overWeek.limit === 'max_per_period');
  const nextWeek = await submit(3_001, '2027-02-08T00:30:00+13:00');
  assert.ok(nextWeek.ok && nextWeek.outcome === 'successful');

  await hook('POST', `${app.bankUrl}/test/consents/${consentId}/decline-next`, {
    count: 1,
    reason: 'insufficient_funds',
  });
  const declined = await submit(100, '2027-02-09T10:00:00+13:00');
  assert.ok(declined.ok);
  assert.equal(declined.outcome, 'failed');
  assert.equal(declined.failureReason, 'insufficient_funds');
  assert.deepEqual(await connector.getPaymentStatus({ paymentId: declined.paymentId }), {
    ok: true,
    outcome: 'failed',
    failureReason: 'insufficient_funds',
  });

  assert.deepEqual(await connector.revokeConsent({ consentId }), { ok: true });
  assert.deepEqual(await connector.getConsent({ consentId, kind: 'enduring' }), { ok: true, status: 'Revoked' });
  const afterRevoke = await submit(100, '2027-02-10T10:00:00+13:00');
  assert.ok(!afterRevoke.ok);
  assert.equal(afterRevoke.reason, 'consent_revoked');
  assert.equal(afterRevoke.unknown, false);
});

test('delayed confirmation is pending until the bank settles it', async (t) => {
  const app = await listeningApp(t);
  const connector = app.deps.banks.connectorFor('bnz', 'test')!;
  const { consentId, accessToken } = await enduringConsent(app, connector);
  await hook('POST', `${app.bankUrl}/test/consents/${consentId}/delay`, { seconds: 30 });
  const at = Date.parse('2027-03-01T09:00:00+13:00');
  const submitted = await connector.submitPayment({
    consentId,
    accessToken,
    amountCents: 700,
    creditor,
    remittance: remittance(),
    idempotencyKey: key(),
    at,
  });
  assert.ok(submitted.ok);
  assert.equal(submitted.outcome, 'pending');
  assert.deepEqual(await connector.getPaymentStatus({ paymentId: submitted.paymentId, at: at + 29_000 }), {
    ok: true,
    outcome: 'pending',
  });
  assert.deepEqual(await connector.getPaymentStatus({ paymentId: submitted.paymentId, at: at + 30_000 }), {
    ok: true,
    outcome: 'successful',
  });
});

test('a bank slower than the timeout is an unknown outcome; the same idempotency key later finds the payment', async (t) => {
  const app = await listeningApp(t);
  const registry = new OpenBankingRegistry({
    config: app.deps.config,
    http: { timeoutMs: 200 },
    sandboxCredentials: app.deps.banks.sandboxCredentials,
  });
  // Closed before the service stops, or the server waits for this client's keep-alive sockets.
  try {
    const connector = registry.connectorFor('asb', 'test')!;
    const { consentId, accessToken } = await enduringConsent(app, connector);
    await hook('POST', `${app.bankUrl}/test/latency`, { consent_id: consentId, ms: 1_000, count: 1 });
    const submission = {
      consentId,
      accessToken,
      amountCents: 900,
      creditor,
      remittance: remittance(),
      idempotencyKey: key(),
      at: Date.parse('2027-03-02T09:00:00+13:00'),
    };
    const slow = await connector.submitPayment(submission);
    assert.deepEqual(slow, {
      ok: false,
      reason: 'timeout',
      message: 'No answer from the bank within 200 ms',
      unknown: true,
    });
    // The retry (as the reconciler would) with the normal deadline: the bank may still be answering the first.
    const again = await app.deps.banks.connectorFor('asb', 'test')!.submitPayment(submission);
    assert.ok(again.ok, JSON.stringify(again));
    assert.equal(again.outcome, 'successful');
  } finally {
    await registry.close();
  }
});

test('network errors and 5xx are unknown outcomes, retried only where repeating is safe', async (t) => {
  let hits = 0;
  const server = http.createServer((_request, response) => {
    hits += 1;
    response.writeHead(503, { 'content-type': 'application/json' }).end('{"Code":"503"}');
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  t.after(() => new Promise<void>((resolve) => server.close(() => resolve())));
  const baseUrl = `http://127.0.0.1:${(server.address() as { port: number }).port}`;
  const httpClient = new BankHttp({ timeoutMs: 1_000, retries: 2, backoffMs: 5 });
  t.after(() => httpClient.close());
  const connector = new OpenBankingConnector({
    bankId: 'x',
    baseUrl,
    http: httpClient,
    security: new ClientSecretSecurity({
      baseUrl,
      credentials: { clientId: 'c', clientSecret: 's' },
      http: httpClient,
    }),
  });

  const status = await connector.submitPayment({
    consentId: 'c',
    accessToken: 'token-token-token',
    amountCents: 100,
    creditor,
    remittance: remittance(),
    idempotencyKey: 'k',
  });
  assert.deepEqual(status, { ok: false, reason: 'bank_unavailable', message: 'The bank answered 503', unknown: true });
  assert.equal(hits, 3);
  hits = 0;
  const exchange = await connector.exchangeCode({ code: 'code', redirectUri: 'http://127.0.0.1/pay/return' });
  assert.equal(exchange.ok, false);
  assert.equal(hits, 1, 'a code exchange is never repeated');

  const closed = new OpenBankingConnector({
    bankId: 'y',
    baseUrl: 'http://127.0.0.1:1',
    http: httpClient,
    security: new ClientSecretSecurity({
      baseUrl: 'http://127.0.0.1:1',
      credentials: { clientId: 'c', clientSecret: 's' },
      http: httpClient,
    }),
  });
  const unreachable = await closed.getPaymentStatus({ paymentId: 'p' });
  assert.ok(!unreachable.ok);
  assert.equal(unreachable.reason, 'network_error');
  assert.equal(unreachable.unknown, true);
});

test('a bank that is busy, redirects, or refuses after a lost answer gives an unknown outcome, never a refusal', async (t) => {
  type Answer = { status: number; body?: string; headers?: Record<string, string> } | 'reset';
  let script: Answer[] = [];
  const seen: string[] = [];
  const server = http.createServer((request, response) => {
    seen.push(`${request.method} ${request.url} ${request.headers['x-idempotency-key'] ?? ''}`.trim());
    if (request.url === '/token') {
      response
        .writeHead(200, { 'content-type': 'application/json' })
        .end('{"access_token":"client-token","expires_in":3600}');
      return;
    }
    const answer = script.shift() ?? { status: 500 };
    if (answer === 'reset') {
      request.socket.destroy();
      return;
    }
    response.writeHead(answer.status, { 'content-type': 'application/json', ...answer.headers }).end(answer.body ?? '');
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  t.after(() => new Promise<void>((resolve) => server.close(() => resolve())));
  const baseUrl = `http://127.0.0.1:${(server.address() as { port: number }).port}`;
  const httpClient = new BankHttp({ timeoutMs: 1_000, retries: 2, backoffMs: 5 });
  t.after(() => httpClient.close());
  const security = new ClientSecretSecurity({
    baseUrl,
    credentials: { clientId: 'c', clientSecret: 's' },
    http: httpClient,
  });
  const connector = new OpenBankingConnector({ bankId: 'x', baseUrl, http: httpClient, security });
  const refusal = (code: string) =>
    JSON.stringify({ Code: '400', Message: 'refused', Errors: [{ ErrorCode: code, Message: 'refused' }] });
  const submit = async (answers: Answer[]) => {
    script = [...answers];
    seen.length = 0;
    return connector.submitPayment({
      consentId: 'c',
      accessToken: 'token-token-token',
      amountCents: 100,
      creditor,
      remittance: remittance(),
      idempotencyKey: 'same-key',
    });
  };
  const unknown = (reply: Awaited<ReturnType<typeof submit>>) => !reply.ok && reply.unknown;

  // The first attempt was taken but its answer lost; the repeat under the same key is refused by a
  // bank that checks its consent or limits before its keys: not a refusal of the payment.
  for (const second of [
    { status: 400, body: refusal('Resource.Consent.InvalidStatus') },
    { status: 400, body: refusal('Resource.Consent.Exceed.Frequency') },
    { status: 401, body: refusal('Unauthorised') },
  ]) {
    for (const first of [{ status: 502 }, 'reset' as const]) {
      const reply = await submit([first, second]);
      assert.ok(unknown(reply), `${JSON.stringify(first)} then ${second.status}: ${JSON.stringify(reply)}`);
      assert.deepEqual(seen, ['POST /domestic-payments same-key', 'POST /domestic-payments same-key']);
    }
  }
  // Busy: waited for when it asks briefly, else unknown at once; 409 and a redirect are never refusals.
  const made = JSON.stringify({ Data: { DomesticPaymentId: 'dp-1', Status: 'AcceptedSettlementCompleted' } });
  assert.deepEqual(
    await submit([
      { status: 429, headers: { 'retry-after': '0' } },
      { status: 201, body: made },
    ]),
    {
      ok: true,
      paymentId: 'dp-1',
      outcome: 'successful',
    },
  );
  const busy = await submit([{ status: 429, headers: { 'retry-after': '120' } }]);
  assert.deepEqual(
    [busy.ok, !busy.ok && busy.reason, !busy.ok && busy.unknown, seen.length],
    [false, 'bank_busy', true, 1],
  );
  assert.ok(unknown(await submit([{ status: 408 }, { status: 408 }, { status: 408 }])));
  assert.ok(unknown(await submit([{ status: 409, body: refusal('Resource.Idempotency.InProgress') }])));
  const moved = await submit([{ status: 307, headers: { location: 'https://elsewhere.example/' } }]);
  assert.deepEqual([!moved.ok && moved.reason, !moved.ok && moved.unknown], ['bank_redirected', true]);
  // A refusal with nothing lost before it is the bank's word.
  const refused = await submit([{ status: 400, body: refusal('Resource.Consent.Exceed.Frequency') }]);
  assert.deepEqual(
    [refused.ok, !refused.ok && refused.reason, !refused.ok && refused.unknown],
    [false, 'limit_exceeded', false],
  );
  // A status the standard does not name, with the bank's id: held by the bank, followed by its id.
  const odd = JSON.stringify({ Data: { DomesticPaymentId: 'dp-2', Status: 'AcceptedWithoutPosting' } });
  assert.deepEqual(await submit([{ status: 201, body: odd }]), { ok: true, paymentId: 'dp-2', outcome: 'pending' });

  // A 401 without JSON on a client call still drops the client token: the next call fetches another.
  script = [
    { status: 401, body: 'Unauthorized' },
    { status: 200, body: JSON.stringify({ Data: { Status: 'Pending' } }) },
  ];
  seen.length = 0;
  await connector.getPaymentStatus({ paymentId: 'dp-3' });
  assert.equal(seen.filter((line) => line.startsWith('POST /token')).length, 2, seen.join(', '));
});

test('tracing: each call sends a new x-fapi-interaction-id, the bank echoes it, and the log line has it with the payment id', async (t) => {
  const app = await listeningApp(t);
  const written: string[] = [];
  // The service's logger as runtime.ts gives it to the banks.
  const log = secretFreeLog(
    pino(loggerOptionsFor({ logLevel: 'info' }), { write: (line: string) => written.push(line) }).child({
      component: 'banks',
    }),
  );
  const httpClient = new BankHttp({ log });
  t.after(() => httpClient.close());
  const connector = new OpenBankingConnector({
    bankId: 'sandbox',
    baseUrl: app.bankUrl,
    http: httpClient,
    security: new ClientSecretSecurity({
      baseUrl: app.bankUrl,
      credentials: { clientId: SERVICE_CLIENT_ID, clientSecret: STANDALONE_CLIENT_SECRET },
      http: httpClient,
    }),
  });
  const exchanges: BankExchange[] = [];
  const stop = observeBankExchanges((exchange) => exchanges.push(exchange));
  t.after(stop);
  const first = await connector.createSingleConsent({
    amountCents: 500,
    creditor,
    remittance: remittance(),
    idempotencyKey: key(),
    trace: { payment_id: 'payment_T1' },
  });
  assert.ok(first.ok);
  await connector.getConsent({ consentId: first.consentId, kind: 'single', trace: { payment_id: 'payment_T1' } });
  const calls = exchanges.filter((exchange) => !exchange.url.endsWith('/token'));
  assert.equal(calls.length, 2);
  const ids = calls.map((exchange) => exchange.requestHeaders['x-fapi-interaction-id']);
  for (const [i, exchange] of calls.entries()) {
    assert.match(ids[i], /^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/);
    assert.equal(exchange.responseHeaders['x-fapi-interaction-id'], ids[i]);
  }
  assert.notEqual(ids[0], ids[1]);
  const lines = written.map((line) => JSON.parse(line) as Record<string, unknown>);
  assert.ok(lines.every((line) => line.component === 'banks' && line.level === 30 && line.msg === 'bank call'));
  const logged = lines.filter((line) => line.payment_id === 'payment_T1');
  assert.deepEqual(
    logged.map((line) => [line.interaction_id, line.bank_call, line.status]),
    [
      [ids[0], 'POST /sandbox-bank/domestic-payment-consents', 201],
      [ids[1], `GET /sandbox-bank/domestic-payment-consents/${first.consentId}`, 200],
    ],
  );
});
