import { test } from 'node:test';
import assert from 'node:assert/strict';
import { generateOpenApi } from '../../../scripts/openapi.ts';
import { checkoutWorld, createRequest, returnToService, submitPage } from '../../../test/flows/checkout.fixtures.ts';
import { authoriseAtBank } from '../test-helpers/pay.bank-driver.ts';
import { tokenOf } from '../../../test/support/consents.ts';
import { verifyChains } from './audit.service.ts';
import { chainCommitted } from './audit.service.ts';

// Every API operation that changes something leaves exactly one audit record: its action, the
// object it acted on, the key that called (actor api_key, the key's id) and the call's request id.
// The operations are taken from the OpenAPI document, so a new one without a step here (and a
// record in its service) fails this test.

type Reply = { status: number; body: any; text: string; headers: Record<string, unknown> };
/** `objectId` is known before the call, or read from its reply (the object it made). */
type Step = {
  action: string;
  objectId: string | null | ((reply: Reply) => string);
  call: () => Promise<Reply>;
  /** The key the call is made with, when not the test key: its id. */
  keyId?: string;
};

test('every mutating API operation is recorded once, with its action, object, key and request id; failures leave nothing', async (t) => {
  const world = await checkoutWorld(t);
  const { api, app, merchant } = world;
  const db = app.deps.db;
  const testKey = await db
    .selectFrom('api_keys')
    .select('id')
    .where('user_id', '=', merchant.userId)
    .where('mode', '=', 'test')
    .executeTakeFirstOrThrow();

  const document = JSON.parse(await generateOpenApi());
  const mutating = new Map<string, string>();
  for (const [path, operations] of Object.entries<Record<string, any>>(document.paths))
    for (const [method, operation] of Object.entries(operations))
      if (['post', 'put', 'patch', 'delete'].includes(method))
        mutating.set(operation.operationId, `${method.toUpperCase()} ${path}`);

  const done = new Set<string>();
  const recorded: string[] = [];
  /** Runs one operation and checks its record. */
  async function step(operationId: string, { action, objectId, call, keyId = testKey.id }: Step): Promise<Reply> {
    const reply = await call();
    assert.ok(reply.status >= 200 && reply.status < 300, `${operationId}: ${reply.status} ${reply.text}`);
    const requestId = String(reply.headers['x-request-id']);
    await chainCommitted(db);
    const records = await db.selectFrom('audit_events').selectAll().where('request_id', '=', requestId).execute();
    assert.equal(records.length, 1, `${operationId} (${mutating.get(operationId)}) leaves one audit record`);
    const [record] = records;
    assert.deepEqual(
      {
        action: record!.action,
        object_id: record!.object_id,
        actor: [record!.actor_kind, record!.actor_id],
        user_id: record!.user_id,
      },
      {
        action,
        object_id: typeof objectId === 'function' ? objectId(reply) : objectId,
        actor: ['api_key', keyId],
        user_id: merchant.userId,
      },
      operationId,
    );
    done.add(operationId);
    recorded.push(record!.id);
    return reply;
  }
  const ok = async (reply: Promise<Reply>) => {
    const answered = await reply;
    assert.ok(answered.status < 300, answered.text);
    return answered.body;
  };

  // A one-off request, paid, refunded
  const made = await step('createRequest', {
    action: 'request.create',
    objectId: (reply) => reply.body.request.id,
    call: () =>
      api.post('/v1/requests', {
        bank_account_id: merchant.bankAccountId,
        amount: '12.00 NZD',
        type: 'multi',
        message: 'Flat whites',
      }),
  });
  const request = made.body.request;
  const paid = await step('payTestRequest', {
    action: 'request.test_pay',
    objectId: request.id,
    call: () => api.post(`/v1/test-helpers/requests/${request.id}/pay`, {}),
  });
  const paymentId = paid.body.payment.id;
  await step('createRefund', {
    action: 'refund.create',
    objectId: (reply) => reply.body.refund.id,
    call: () => api.post('/v1/refunds', { payment_id: paymentId, amount: '1.00 NZD' }),
  });
  // The settings are both modes': only a live key changes them.
  const liveKey = await db
    .selectFrom('api_keys')
    .select('id')
    .where('user_id', '=', merchant.userId)
    .where('mode', '=', 'live')
    .executeTakeFirstOrThrow();
  await step('setTaxSettings', {
    action: 'tax_settings.update',
    objectId: null,
    keyId: liveKey.id,
    call: () =>
      world.live.post('/v1/tax-settings', {
        legal_name: 'Kōwhai Coffee Limited',
        gst_number: '49-091-850',
        prices_include_gst: true,
        issue_tax_invoices: true,
        email_receipts: false,
      }),
  });
  await step('declineNextRefunds', {
    action: 'refund_authority.test_decline_next',
    objectId: (reply) => reply.body.refund_authority_id,
    call: () => api.post('/v1/test-helpers/refunds/decline-next', {}),
  });

  // A bank statement that shows the payment: imported (and matched), unmatched, matched by hand
  const statementDay = new Date(app.deps.clock.now()).toLocaleDateString('en-NZ', {
    timeZone: app.deps.config.serviceTimeZone,
    day: '2-digit',
    month: '2-digit',
    year: 'numeric',
  });
  const statement = await step('createStatement', {
    action: 'statement.import',
    objectId: (reply) => reply.body.statement.id,
    call: () =>
      api.post('/v1/statements', {
        content: `Date,Amount,Other Party,Description,Reference,Particulars,Analysis Code\n${statementDay},0.01,A Payer,DIRECT CREDIT,,${paid.body.payment.pcr.particulars},TONO\n`,
      }),
  });
  const [statementLine] = (await ok(api.get(`/v1/statement-lines?statement_id=${statement.body.statement.id}`)))
    .statement_lines;
  await step('unmatchStatementLine', {
    action: 'statement_line.unmatch',
    objectId: statementLine.id,
    call: () => api.post(`/v1/statement-lines/${statementLine.id}/unmatch`, {}),
  });
  await step('matchStatementLine', {
    action: 'statement_line.match',
    objectId: statementLine.id,
    call: () => api.post(`/v1/statement-lines/${statementLine.id}/match`, { payment_id: paymentId }),
  });

  // The same request, its payer now at the bank: the bank hooks on the request and the payment
  const atBank = async () => {
    const submitted = await submitPage(world.baseUrl, request.id, { bank: 'sandbox' });
    const payments = (await ok(api.get(`/v1/requests/${request.id}/payments`))).payments;
    return { submitted, payment: payments.find((p: any) => p.status === 'awaiting-consent').id as string };
  };
  const held = await atBank();
  const hook = (operationId: string, object: 'request' | 'payment', id: string, name: string, body: unknown) =>
    step(operationId, {
      action: `${object}.test_${name.replace('-', '_')}`,
      objectId: id,
      call: () => api.post(`/v1/test-helpers/${object}s/${id}/${name}`, body),
    });
  await hook('slowBankForRequest', 'request', request.id, 'latency', { ms: 0 });
  await hook('delayConfirmationsForRequest', 'request', request.id, 'delay', {});
  await hook('slowBankForPayment', 'payment', held.payment, 'latency', { ms: 0 });
  await hook('delayTestPaymentConfirmation', 'payment', held.payment, 'delay', {});
  await returnToService(await authoriseAtBank(held.submitted.location!, 'approve', `${world.baseUrl}/pay/return`));
  await hook('releaseTestPaymentAtBank', 'payment', held.payment, 'release', {});
  const declined = await atBank();
  await hook('declineNextAtBankForRequest', 'request', request.id, 'decline-next', {});
  await hook('declineTestPaymentAtBank', 'payment', declined.payment, 'decline-next', {});

  // A recurring consent: executions held at the bank, released, refused, slowed, revoked
  const authorised = async () => {
    const recurring = await createRequest(world, {
      recurring_options: { period: 'weekly', max_per_period: '50.00 NZD' },
      cust_info: { email: 'payer@example.com' },
    });
    const consent = (await ok(api.post(`/v1/test-helpers/requests/${recurring.id}/pay`, {}))).recurring_consent;
    return consent.id as string;
  };
  const consentA = await authorised();
  await step('delayRecurringPaymentConfirmations', {
    action: 'consent.test_delay',
    objectId: consentA,
    call: () => api.post(`/v1/test-helpers/recurring-consents/${consentA}/delay`, {}),
  });
  const token = await tokenOf({ runtime: app } as any, consentA);
  await step('createPayment', {
    action: 'payment.charge',
    objectId: (reply) => reply.body.payment.id,
    call: () => api.post('/v1/payments', { token, amount: '2.00 NZD', idempotency_key: 'audit-1' }),
  });
  await step('declineNextRecurringPayments', {
    action: 'consent.test_decline_next',
    objectId: consentA,
    call: () => api.post(`/v1/test-helpers/recurring-consents/${consentA}/decline-next`, {}),
  });
  await step('slowBankForRecurringConsent', {
    action: 'consent.test_latency',
    objectId: consentA,
    call: () => api.post(`/v1/test-helpers/recurring-consents/${consentA}/latency`, { ms: 0 }),
  });
  await step('revokeRecurringConsentAtBank', {
    action: 'consent.test_revoke_at_bank',
    objectId: consentA,
    call: () => api.post(`/v1/test-helpers/recurring-consents/${consentA}/revoke-at-bank`, {}),
  });
  await step('revokeRecurringConsent', {
    action: 'consent.revoke',
    objectId: consentA,
    call: () => api.put(`/v1/recurring-consents/${consentA}/revoke`),
  });
  const consentB = await authorised();
  await step('revokeRecurringConsentByPayer', {
    action: 'consent.revoke',
    objectId: consentB,
    call: () => api.post(`/v1/test-helpers/recurring-consents/${consentB}/revoke-by-payer`, {}),
  });

  // Subscriptions
  const subscribed = async () => {
    const plan = await createRequest(world, {
      subscription_options: { amount: '15.00 NZD', period: 'monthly' },
      cust_info: { email: 'pat@example.com' },
    });
    return (await ok(api.post(`/v1/test-helpers/requests/${plan.id}/pay`, {}))).subscription.id as string;
  };
  const subscription = await subscribed();
  const onSubscription: Array<[string, string, string, unknown, 'post' | 'put']> = [
    ['pauseSubscription', 'subscription.pause', `/v1/subscriptions/${subscription}/pause`, {}, 'post'],
    ['resumeSubscription', 'subscription.resume', `/v1/subscriptions/${subscription}/resume`, {}, 'post'],
    [
      'declineNextSubscriptionCharges',
      'subscription.test_decline_next',
      `/v1/test-helpers/subscriptions/${subscription}/decline-next`,
      { count: 1 },
      'post',
    ],
    [
      'delaySubscriptionChargeConfirmations',
      'subscription.test_delay',
      `/v1/test-helpers/subscriptions/${subscription}/delay`,
      {},
      'post',
    ],
    [
      'slowBankForSubscription',
      'subscription.test_latency',
      `/v1/test-helpers/subscriptions/${subscription}/latency`,
      { ms: 0 },
      'post',
    ],
    [
      'cancelSubscriptionAtBank',
      'subscription.test_cancel_at_bank',
      `/v1/test-helpers/subscriptions/${subscription}/cancel-at-bank`,
      {},
      'post',
    ],
    ['cancelSubscription', 'subscription.cancel', `/v1/subscriptions/${subscription}/cancel`, undefined, 'put'],
  ];
  for (const [operationId, action, path, body, method] of onSubscription)
    await step(operationId, {
      action,
      objectId: subscription,
      call: () => (method === 'put' ? api.put(path, body) : api.post(path, body)),
    });
  const second = await subscribed();
  await step('cancelSubscriptionByPayer', {
    action: 'subscription.cancel',
    objectId: second,
    call: () => api.post(`/v1/test-helpers/subscriptions/${second}/cancel-by-payer`, {}),
  });

  // Webhook endpoints and events
  const endpoint = await step('createWebhook', {
    action: 'webhook_endpoint.create',
    objectId: (reply) => reply.body.webhook.id,
    call: () => api.post('/v1/webhooks', { url: 'https://example.com/hooks' }),
  });
  const webhookId = endpoint.body.webhook.id;
  await step('updateWebhook', {
    action: 'webhook_endpoint.update',
    objectId: webhookId,
    call: () => api.patch(`/v1/webhooks/${webhookId}`, { description: 'Orders' }),
  });
  await step('rotateWebhookSecret', {
    action: 'webhook_endpoint.rotate_secret',
    objectId: webhookId,
    call: () => api.post(`/v1/webhooks/${webhookId}/rotate-secret`, {}),
  });
  await step('recoverWebhook', {
    action: 'webhook_endpoint.recover',
    objectId: webhookId,
    call: () => api.post(`/v1/webhooks/${webhookId}/recover`, { since: '2020-01-01T00:00:00.000Z' }),
  });
  const event = (await ok(api.get('/v1/events', { query: { limit: '1' } }))).events[0];
  await step('resendEvent', {
    action: 'event.resend',
    objectId: event.id,
    call: () => api.post(`/v1/events/${event.id}/resend`, { webhook_id: webhookId }),
  });
  await step('deleteWebhook', {
    action: 'webhook_endpoint.delete',
    objectId: webhookId,
    call: () => api.delete(`/v1/webhooks/${webhookId}`),
  });

  // A request deleted, the test clock moved and reset, the test data deleted
  const doomed = await createRequest(world, { amount: '3.00 NZD' });
  await step('deleteRequest', {
    action: 'request.delete',
    objectId: doomed.id,
    call: () => api.delete(`/v1/requests/${doomed.id}`),
  });
  await step('advanceTestClock', {
    action: 'test_clock.advance',
    objectId: null,
    call: () => api.post('/v1/test-helpers/clock/advance', { seconds: 60 }),
  });
  await step('resetTestClock', {
    action: 'test_clock.reset',
    objectId: null,
    call: () => api.post('/v1/test-helpers/clock/reset', {}),
  });
  await step('deleteTestData', {
    action: 'test_data.delete',
    objectId: null,
    call: () => api.delete('/v1/test-helpers/data'),
  });

  const missing = [...mutating.keys()].filter((operationId) => !done.has(operationId));
  assert.deepEqual(missing, [], `mutating operations without an audit step: ${missing.map((id) => mutating.get(id))}`);

  // The chain holds, and the API lists what was recorded, newest first
  const [chain] = await verifyChains(db, merchant.userId);
  assert.equal(chain!.broken, null);
  // A test key lists its mode's records; the live key also those without a mode (the tax settings').
  const ids: string[] = [];
  for (const client of [api, world.live]) {
    const listed = await ok(client.get('/v1/audit-events', { query: { limit: '1000', actor_kind: 'api_key' } }));
    ids.push(...listed.audit_events.map((record: any) => record.id));
  }
  for (const id of recorded) assert.ok(ids.includes(id), `${id} is listed`);
});

test('a change refused (4xx) or rolled back leaves no audit record', async (t) => {
  const world = await checkoutWorld(t);
  const { api, app, merchant } = world;
  const count = async () => {
    await chainCommitted(app.deps.db);
    return Number(
      (
        await app.deps.db
          .selectFrom('audit_events')
          .select((eb) => eb.fn.countAll().as('n'))
          .where('user_id', '=', merchant.userId)
          .executeTakeFirstOrThrow()
      ).n,
    );
  };
  const before = await count();
  const refusals = [
    await api.post('/v1/requests', { bank_account_id: merchant.bankAccountId, amount: 'lots', message: 'x' }),
    await api.post('/v1/webhooks', { url: 'not a url' }),
    await api.delete('/v1/requests/request_01JD2Q8Z7M3V4K5N6P7R8S9T0V'),
    await api.patch('/v1/webhooks/webhook_01JD2Q8Z7M3V4K5N6P7R8S9T0V', { description: 'x' }),
    await api.post('/v1/test-helpers/clock/advance', { to: '2000-01-01T00:00:00.000Z' }),
  ];
  for (const reply of refusals) assert.ok(reply.status >= 400 && reply.status < 500, reply.text);
  // a refund over what was paid fails inside its transaction, after the payment was held: rolled back
  const request = await createRequest(world, { amount: '4.00 NZD' });
  const paid = await api.post(`/v1/test-helpers/requests/${request.id}/pay`, {});
  const afterPay = await count();
  const over = await api.post('/v1/refunds', { payment_id: paid.body.payment.id, amount: '5.00 NZD' });
  assert.equal(over.status, 422, over.text);
  assert.equal(await count(), afterPay, 'the refused refund left no record');
  assert.equal(afterPay, before + 2, 'only the request and the pay call were recorded');
  const requestIds = refusals.map((reply) => String(reply.headers['x-request-id']));
  const stray = await app.deps.db
    .selectFrom('audit_events')
    .select('id')
    .where('request_id', 'in', requestIds)
    .execute();
  assert.deepEqual(stray, []);
});
