import { test } from 'node:test';
import assert from 'node:assert/strict';
import { Browser } from '../../../test/payer.ts';
import { dashWorld, logIn, objectsOf, textOf } from '../../../test/dashboard.ts';

// Charging a recurring consent from the dashboard, over HTTP on SQLite and PostgreSQL: the limits
// checked before the confirmation and again by the execution, one payment per confirmation however
// often it is submitted, the same payment and events as POST /v1/payments.

const keyOf = (html: string) => /name="idempotency_key" value="([^"]+)"/.exec(html)![1];

test('a merchant charges a recurring consent from its page: limits shown and enforced, one payment per confirmation, the same events as the API', async (t) => {
  const world = await dashWorld(t, { workers: false });
  const [kowhai, tui] = world.merchants;
  const { consent } = await objectsOf(world, kowhai);
  const browser = await logIn(world, kowhai);
  const base = `/dashboard/test/recurring-consents/${consent.id}`;
  const detail = await browser.request(base);
  assert.match(detail.text, new RegExp(`href="${base}/charge">Charge</a>`), 'the consent page offers Charge');

  const page = await browser.request(`${base}/charge`);
  assert.equal(page.status, 200);
  assert.match(textOf(page.text), /Left this week \$100\.00 Each payment up to \$50\.00/);
  const csrf = Browser.csrfOf(page.text);

  const notMoney = await browser.request(`${base}/charge`, { form: { csrf, amount: 'ten', reference: '' } });
  assert.equal(notMoney.status, 400);
  assert.match(textOf(notMoney.text), /“Amount \(NZD\)” must be an amount of money/);
  const overPayment = await browser.request(`${base}/charge`, { form: { csrf, amount: '60', reference: '' } });
  assert.equal(overPayment.status, 422);
  assert.match(
    textOf(overPayment.text),
    /\$60\.00 is more than the consent allows for one payment \(\$50\.00\)\. Nothing was charged/,
    'amounts as the dashboard shows money',
  );
  assert.doesNotMatch(textOf(overPayment.text), /\d NZD/);
  // refused again by the execution itself, when the confirmation is posted without the review
  const overAtConfirm = await browser.request(`${base}/charge/confirm`, {
    form: { csrf, amount: '60', reference: '', idempotency_key: keyOf(page.text) },
  });
  assert.equal(overAtConfirm.status, 422);
  assert.match(textOf(overAtConfirm.text), /\$60\.00 is more than the consent allows for one payment \(\$50\.00\)/);
  assert.doesNotMatch(textOf(overAtConfirm.text), /\d NZD/);

  const review = await browser.request(`${base}/charge`, { form: { csrf, amount: '30', reference: 'INV-9' } });
  assert.equal(review.status, 200);
  assert.match(
    textOf(review.text),
    /Charge \$30\.00 to pat@example\.com for “Top-ups”\? After it, the consent leaves \$70\.00 this week\./,
  );
  const key = keyOf(review.text);
  const confirm = { csrf, amount: '30', reference: 'INV-9', idempotency_key: key };
  assert.equal(
    (await kowhai.test.get(`/v1/recurring-consents/${consent.id}`)).body.recurring_consent.usage.total.count,
    0,
    'the review charges nothing',
  );

  // another merchant's confirmation is a 404 and charges nothing
  const stranger = await logIn(world, tui);
  const strangerCsrf = Browser.csrfOf((await stranger.request('/dashboard/test')).text);
  const foreign = await stranger.request(`/dashboard/test/recurring-consents/${consent.id}/charge/confirm`, {
    form: { ...confirm, csrf: strangerCsrf },
  });
  assert.equal(foreign.status, 404);

  // a double submit (two tabs, a reload) is one payment
  const [first, second] = await Promise.all([
    browser.request(`${base}/charge/confirm`, { form: confirm }),
    browser.request(`${base}/charge/confirm`, { form: confirm }),
  ]);
  assert.equal(first.status, 303);
  assert.equal(first.headers.get('location'), second.headers.get('location'));
  const paymentId = /payments\/(payment_[0-9A-Z]{26})\?done=charged$/.exec(first.headers.get('location')!)![1];
  const payment = (await kowhai.test.get(`/v1/payments/${paymentId}`)).body.payment;
  assert.deepEqual(
    [payment.status, payment.requested_amount.value, payment.pcr.reference, payment.recurring_consent_id],
    ['successful', '30.00 NZD', 'INV-9', consent.id],
  );
  const usage = (await kowhai.test.get(`/v1/recurring-consents/${consent.id}`)).body.recurring_consent.usage;
  assert.deepEqual([usage.total.count, usage.period.remaining.value], [1, '70.00 NZD']);
  const events = (await kowhai.test.get('/v1/events', { query: { object_id: paymentId } })).body.events;
  assert.deepEqual(
    events.map((e: any) => [e.type, e.data.status]).reverse(),
    [
      ['payment.created', 'awaiting-consent'],
      ['payment.status_updated', 'successful'],
    ],
    'the same event as POST /v1/payments sends',
  );
  const shown = await browser.request(first.headers.get('location')!);
  assert.match(textOf(shown.text), /Charged: the payment was successful\./);

  // the limits as they now are: $70 left, at most $50 a payment
  const fifty = await browser.request(`${base}/charge`, { form: { csrf, amount: '50', reference: '' } });
  await browser.request(`${base}/charge/confirm`, {
    form: { csrf, amount: '50', reference: '', idempotency_key: keyOf(fifty.text) },
  });
  const overPeriod = await browser.request(`${base}/charge`, { form: { csrf, amount: '30', reference: '' } });
  assert.equal(overPeriod.status, 422);
  assert.match(textOf(overPeriod.text), /Nothing was charged/);
  // a confirmation shown before the limits were used up is refused by the execution itself
  const stale = await browser.request(`${base}/charge/confirm`, {
    form: {
      csrf,
      amount: '30',
      reference: '',
      idempotency_key: keyOf(review.text).replace(/.$/, (c) => (c === '0' ? '1' : '0')),
    },
  });
  assert.equal(stale.status, 422);
  assert.match(textOf(stale.text), /Nothing was charged/);
  assert.equal(
    (await kowhai.test.get(`/v1/recurring-consents/${consent.id}`)).body.recurring_consent.usage.total.count,
    2,
  );

  // a revoked consent cannot be charged
  assert.equal((await kowhai.test.put(`/v1/recurring-consents/${consent.id}/revoke`, {})).status, 200);
  assert.match(
    textOf((await browser.request(`${base}/charge`)).text),
    /This consent is revoked: no payments can be taken/,
  );
  const late = await browser.request(`${base}/charge`, { form: { csrf, amount: '1', reference: '' } });
  assert.equal(late.status, 422);
  assert.match(textOf(late.text), /The recurring consent has been revoked; .* Nothing was charged\./);
});
