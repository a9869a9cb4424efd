import { test } from 'node:test';
import assert from 'node:assert/strict';
import { payerWorld, signIn } from '../../../test/payer.ts';
import type { Worker } from '../../jobs/worker.ts';
import type { RefundRow } from '../refunds/refunds.service.ts';
import { payerRefundLine, refundedStatus } from './payer.refunds.ts';

// Refunds as the payer dashboard shows them, under the payments they pay back, on SQLite and
// PostgreSQL (TEST_ENGINE=postgres): made through the API with the merchant's test key and carried
// out by the sandbox bank. Only the signed-in payer's own payments show theirs.

const text = (html: string) =>
  html
    .replace(/<[^>]+>/g, ' ')
    .replace(/&#39;/g, "'")
    .replace(/&amp;/g, '&')
    .replace(/\s+/g, ' ');

const RUNNABLE = new Set(['payment.payer_account', 'refund.execute']);

/** Runs the due payer-account and refund jobs, as src/modules/refunds/refunds.test.ts does. */
async function runRefundJobs(worker: Worker): Promise<void> {
  for (let round = 0; round < 10; round += 1) {
    const due = (await worker.claim(200)).filter((job) => RUNNABLE.has(job.kind));
    if (due.length === 0) break;
    for (const job of due) await worker.run(job);
  }
}

/** What the payer reads for a refund in this status. */
const refundWords: Record<string, string> = {
  pending: 'On its way',
  requires_action: 'On its way',
  successful: 'Refunded',
  failed: 'Refund did not go through',
};

/** An account number, with or without dashes: never on the payer's pages. */
const ACCOUNT_NUMBER = /\b\d{2}-?\d{4}-?\d{7}-?\d{2,3}\b/;

test('a payer sees the refunds under their payments: partly and fully refunded, the refund’s status, date and statement; another payer sees none of it', async (t) => {
  const world = await payerWorld(t);
  const [{ api }] = world.merchants;
  const { worker } = world.app.deps;
  const pat = await signIn(world, 'pat@example.com');
  const consent = world.consents['pat@example.com'][0];
  const charged = await api.post('/v1/payments', {
    token: consent.token,
    amount: '12.50 NZD',
    idempotency_key: 'charge-refund-1',
    reference: 'INV-7',
  });
  assert.equal(charged.status, 201, charged.text);
  const payment = charged.body.payment;
  assert.equal(payment.status, 'successful');
  const subscription = world.subscriptions['pat@example.com'][0];
  const listed = await api.get(`/v1/subscriptions/${subscription}/payments`);
  assert.equal(listed.status, 200, listed.text);
  const charge = listed.body.payments.find((p: { status: string }) => p.status === 'successful');
  assert.ok(charge, 'the subscription’s first charge');

  const pages = {
    consent: `/customer/recurring-consents/${consent.id}`,
    subscription: `/customer/subscriptions/${subscription}`,
  };
  const read = async (path: string) => {
    const reply = await pat.request(path);
    assert.equal(reply.status, 200, reply.text);
    assert.doesNotMatch(text(reply.text), ACCOUNT_NUMBER, `no account number on ${path}`);
    return { html: reply.text, page: text(reply.text) };
  };
  const refundLine = (amount: string, words: string, statement: string) =>
    new RegExp(`\\d{4} at \\d{1,2}:\\d{2}[ap]m Refund of \\$${amount.replace('.', '\\.')} ${words} ${statement}`);
  const consentStatement = `Refund ${payment.pcr.particulars} INV-7`;
  const chargeStatement = `Refund ${charge.pcr.particulars}`;

  // Before the bank has them (the background workers paused): on their way, and counted.
  await worker.stop();
  const refund = async (paymentId: string, amount: string) => {
    const created = await api.post('/v1/refunds', { payment_id: paymentId, amount });
    assert.equal(created.status, 201, created.text);
    assert.equal(created.body.refund.status, 'pending');
    return created.body.refund.id as string;
  };
  const partId = await refund(payment.id, '5.00 NZD');
  const fullId = await refund(charge.id, '15.00 NZD');
  const partly = await read(pages.consent);
  assert.match(partly.page, /\$12\.50 Partly refunded \(\$5\.00 of \$12\.50\) V-/);
  assert.match(partly.page, refundLine('5.00', 'On its way', consentStatement));
  assert.match(partly.html, /<tr class="refund">/);
  const full = await read(pages.subscription);
  assert.match(full.page, /\$15\.00 Refunded V-/);
  assert.match(full.page, refundLine('15.00', 'On its way', chargeStatement));

  // Carried out at the sandbox bank: the words follow where each got to (one still pending is on
  // its way; one that failed gives its amount back, and the payment reads paid again).
  await runRefundJobs(worker);
  for (const [id, path, amount, statement, refunded, paid] of [
    [
      partId,
      pages.consent,
      '5.00',
      consentStatement,
      /\$12\.50 Partly refunded \(\$5\.00 of \$12\.50\) V-/,
      /\$12\.50 Paid V-/,
    ],
    [fullId, pages.subscription, '15.00', chargeStatement, /\$15\.00 Refunded V-/, /\$15\.00 Paid V-/],
  ] as const) {
    const status = (await api.get(`/v1/refunds/${id}`)).body.refund.status as string;
    const { page } = await read(path);
    assert.match(page, refundLine(amount, refundWords[status], statement), status);
    assert.match(page, status === 'failed' ? paid : refunded);
    t.diagnostic(`refund of ${amount}: ${status}`);
  }
  worker.start();

  // Another payer: pat's pages are a 404, and their own show no refund.
  const other = await signIn(world, 'other@example.com');
  for (const path of Object.values(pages)) {
    const refused = await other.request(path);
    assert.equal(refused.status, 404);
    assert.ok(!refused.text.includes(payment.pcr.particulars) && !refused.text.includes(charge.pcr.particulars));
  }
  for (const own of [
    `/customer/recurring-consents/${world.consents['other@example.com'][0].id}`,
    `/customer/subscriptions/${world.subscriptions['other@example.com'][0]}`,
  ]) {
    const reply = await other.request(own);
    assert.equal(reply.status, 200);
    assert.doesNotMatch(text(reply.text), /Refund|refunded/, own);
    assert.ok(!reply.text.includes(payment.pcr.particulars) && !reply.text.includes(charge.pcr.particulars), own);
  }
});

test('the words for a refund and for a refunded payment', () => {
  const row = {
    id: 'refund_01JD2Q8Z7M3V4K5N6P7R8S9T0V',
    amount_cents: 500,
    particulars: 'Refund',
    code: 'V-ABC123',
    reference: '',
    created_at: Date.UTC(2027, 2, 3, 1, 0),
    sent_at: null,
    completed_at: null,
  } as unknown as RefundRow;
  const zone = 'Pacific/Auckland';
  const words = (status: string, completed: number | null = null) =>
    payerRefundLine({ ...row, status, completed_at: completed }, zone);
  assert.deepEqual(words('pending'), {
    id: row.id,
    when: 'Wednesday 3 March 2027 at 2:00pm',
    amount: '$5.00',
    status: 'On its way',
    statement: 'Refund V-ABC123',
  });
  assert.equal(words('requires_action').status, 'On its way');
  const done = words('successful', Date.UTC(2027, 2, 4, 1, 0));
  assert.deepEqual([done.status, done.when], ['Refunded', 'Thursday 4 March 2027 at 2:00pm']);
  assert.equal(words('failed', Date.UTC(2027, 2, 4, 1, 0)).status, 'Refund did not go through');

  const payment = { status: 'successful', amount_cents: 1250, refunded_cents: 0 };
  assert.equal(refundedStatus('Paid', payment), 'Paid');
  assert.equal(refundedStatus('Paid', { ...payment, refunded_cents: 500 }), 'Partly refunded ($5.00 of $12.50)');
  assert.equal(refundedStatus('Paid', { ...payment, refunded_cents: 1250 }), 'Refunded');
  assert.equal(refundedStatus('Failed', { ...payment, status: 'failed', refunded_cents: 500 }), 'Failed');
});
