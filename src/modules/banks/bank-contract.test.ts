import { test } from 'node:test';
import assert from 'node:assert/strict';
import { observeBankExchanges, type BankExchange } from './open-banking.http.ts';
import { paymentInitiationContract } from './payment-initiation.contract.ts';
import {
  findOfficialStandard,
  officialStandardFile,
  operationDifferences,
  operationFacts,
  StandardChecker,
  STANDARD_ENV,
} from '../../../test/support/payment-initiation-standard.ts';

// The contract with real banks: every exchange between the connector and the sandbox bank during
// the flow tests (one-off approved and declined, recurring with a bank refusal and both
// revocations, subscriptions over the test clock, reconciliation of unconfirmed payments, refunds
// under the merchant's refund authority) is
// recorded and checked against the Payments NZ Payment Initiation v3.0.2 operations: parameters,
// required headers, security, request and answer bodies per operation and status, error codes from
// the standard's list, and x-fapi-interaction-id sent and echoed. The flows run on both engines
// (SQLite, and PostgreSQL with TEST_ENGINE=postgres), so the check does too.
//
// The repository's own description (payment-initiation.contract.ts) is always the reference, so a
// bare clone checks everything. When the official document is at hand (CI keeps it beside the
// checkout), the exchanges are checked against it too, and the two descriptions are compared
// operation by operation so that ours cannot drift from the standard.

const recorded: BankExchange[] = [];
observeBankExchanges((exchange) => recorded.push(exchange));

// The flows register their tests here, and run before the check below.
await import('../../../test/flows/checkout.flow.test.ts');
await import('../consents/consents.flow.test.ts');
await import('../subscriptions/subscriptions.flow.test.ts');
// Refunds: the merchant's refund authority (an enduring consent) and refunds paid under it, declines included.
await import('../refunds/refunds.test.ts');
// Every call of the connector, debtor-account included.
await import('./open-banking.connector.test.ts');

/** The sandbox bank's base URL in an exchange: everything before the standard's resource path. */
function baseOf(url: string): string {
  const parsed = new URL(url);
  const at = parsed.pathname.search(
    /\/(domestic-payment-consents|enduring-payment-consents|domestic-payments|token)(\/|$)/,
  );
  return `${parsed.origin}${at < 0 ? parsed.pathname : parsed.pathname.slice(0, at)}`;
}

const official = findOfficialStandard();
const absent = official
  ? false
  : `the official document is not at ${officialStandardFile()} (name its file in ${STANDARD_ENV})`;

function checkExchanges(doc: unknown): void {
  const checker = new StandardChecker(doc);
  // The sandbox bank's answers (the connector test's deliberately broken fake banks aside).
  const apiCalls = recorded.filter(
    (exchange) => /\/sandbox-bank\//.test(exchange.url) && !/\/token$/.test(new URL(exchange.url).pathname),
  );
  assert.ok(apiCalls.length > 50, `only ${apiCalls.length} exchanges were recorded`);
  const seen = new Set<string>();
  const distinct = new Map<string, number>();
  for (const exchange of apiCalls) {
    const base = baseOf(exchange.url);
    const operation = checker.operationOf(exchange, base);
    if (operation) seen.add(operation.id);
    for (const problem of checker.violations(exchange, base)) {
      const key = `${operation?.id ?? exchange.url} ${exchange.status}: ${problem}`;
      distinct.set(key, (distinct.get(key) ?? 0) + 1);
    }
  }
  const report = [...distinct].map(([problem, count]) => `${count}× ${problem}`).join('\n');
  assert.equal(distinct.size, 0, `${distinct.size} distinct violations in ${apiCalls.length} exchanges:\n${report}`);
  // Every operation of the standard was exercised.
  const missing = checker.operationIds().filter((id) => !seen.has(id));
  assert.deepEqual(missing, [], `operations the flows never called: ${missing.join(', ')}`);
}

function refusesOldShapes(doc: unknown): void {
  const checker = new StandardChecker(doc);
  const base = 'http://bank.example/sandbox-bank';
  const account = { SchemeName: 'BECSElectronicCredit', Identification: '12-3456-7890123-00', Name: 'Acme Coffee' };
  const old: BankExchange = {
    method: 'POST',
    url: `${base}/enduring-payment-consents`,
    requestHeaders: { authorization: 'Bearer abc', 'x-idempotency-key': 'k1', 'content-type': 'application/json' },
    requestBody: {
      Data: {
        FromDateTime: '2026-11-23T00:00:00Z',
        Frequency: { Period: 'Week', TotalAmount: { Amount: '20.00', Currency: 'NZD' } },
        Initiation: { CreditorAccount: account },
      },
      Risk: {},
    },
    status: 404,
    responseHeaders: {},
    responseBody: { Code: '404 NotFound', Message: 'x', Errors: [{ ErrorCode: 'Resource.NotFound', Message: 'x' }] },
  };
  const problems = checker.violations(old, base).join('\n');
  assert.match(problems, /request header x-fapi-interaction-id is not sent/);
  assert.match(problems, /request body\/Data must NOT have additional properties/);
  assert.match(problems, /response status 404 is not declared/);
  const refusal = checker.violations(
    {
      ...old,
      requestBody: undefined,
      method: 'GET',
      url: `${base}/enduring-payment-consents/epc-1`,
      status: 401,
      requestHeaders: { 'x-fapi-interaction-id': 'i-1', authorization: 'Bearer abc' },
      responseHeaders: { 'x-fapi-interaction-id': 'i-1' },
      responseBody: {
        Code: '401 Unauthorized',
        Message: 'x',
        Errors: [{ ErrorCode: 'Header.Unauthorized', Message: 'x' }],
      },
    },
    base,
  );
  assert.match(refusal.join('\n'), /Errors\/0\/ErrorCode must be equal to one of the allowed values/);
}

test('refunds were among the exchanges: payments under a refund authority, with the statement text "Refund"', () => {
  const refunds = recorded.filter((exchange) => {
    const body = exchange.requestBody as { Data?: { Initiation?: { RemittanceInformation?: unknown } } } | undefined;
    return (
      exchange.method === 'POST' &&
      new URL(exchange.url).pathname.endsWith('/domestic-payments') &&
      JSON.stringify(body?.Data?.Initiation?.RemittanceInformation ?? {}).includes('"Particulars":"Refund"')
    );
  });
  assert.ok(refunds.length >= 3, `${refunds.length} refund payments were recorded`);
  assert.ok(refunds.some((exchange) => exchange.status === 201));
});

test('every exchange of the flows conforms to our description of Payment Initiation v3.0.2', () => {
  checkExchanges(paymentInitiationContract);
});

test('every exchange of the flows conforms to the official Payment Initiation v3.0.2 document', {
  skip: absent,
}, () => {
  checkExchanges(official!.doc);
});

test('our description refuses the shapes the connector and the sandbox bank used before v3.0.2', () => {
  refusesOldShapes(paymentInitiationContract);
});

test('the official document refuses the shapes the connector and the sandbox bank used before v3.0.2', {
  skip: absent,
}, () => {
  refusesOldShapes(official!.doc);
});

test('our description says what the official document says, operation by operation', { skip: absent }, async (t) => {
  const ours = operationFacts(paymentInitiationContract);
  const theirs = operationFacts(official!.doc);
  await t.test('the same operations', () => {
    const onlyOurs = [...ours.keys()].filter((id) => !theirs.has(id));
    const onlyOfficial = [...theirs.keys()].filter((id) => !ours.has(id));
    assert.deepEqual(
      { onlyOurs, onlyOfficial },
      { onlyOurs: [], onlyOfficial: [] },
      `operations only in ours: ${onlyOurs.join(', ') || 'none'}; only in ${official!.file}: ${onlyOfficial.join(', ') || 'none'}`,
    );
  });
  for (const id of [...theirs.keys()].sort()) {
    await t.test(id, () => {
      const mine = ours.get(id);
      const standard = theirs.get(id)!;
      assert.ok(mine, `${id} is in the official document but not in ours`);
      const found = operationDifferences(mine, standard);
      if (found.length > 0) assert.fail(`${id} differs from ${official!.file}:\n${found.join('\n')}`);
      // Backstop in case the report above misses a kind of difference.
      assert.deepEqual(mine, standard);
    });
  }
});
