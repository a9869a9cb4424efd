import { test } from 'node:test';
import assert from 'node:assert/strict';
import { Browser } from '../../../test/payer.ts';
import { dashWorld, logIn, objectsOf, textOf } from '../../../test/dashboard.ts';

// Refund and charge confirmations sent again, on SQLite and PostgreSQL: the idempotency key is made
// by the form's page (the GET) and carried through the review to the confirmation, so Back from the
// result (which posts the review again) and "Yes" again answers with the first refund or payment.

const keyOf = (html: string) => /name="idempotency_key" value="(dashboard-[0-9a-f-]{36})"/.exec(html)?.[1] ?? null;
const backOf = (html: string) => /<a class="button" href="([^"]+)">Go back<\/a>/.exec(html)![1]!.replace(/&amp;/g, '&');

test('Refund: Back to the confirmation (the review posted again) and Yes again answers with the first refund', async (t) => {
  const world = await dashWorld(t, { workers: false });
  const [kowhai] = world.merchants;
  const request = (
    await kowhai.test.post('/v1/requests', {
      bank_account_id: kowhai.bankAccountId,
      message: 'x',
      amount: '12.50 NZD',
      reference: 'INV-7',
    })
  ).body.request;
  const payment = (await kowhai.test.post(`/v1/test-helpers/requests/${request.id}/pay`, {})).body.payment;
  const browser = await logIn(world, kowhai);
  const base = `/dashboard/test/payments/${payment.id}`;
  const page = await browser.request(`${base}/refund`);
  const key = keyOf(page.text);
  assert.ok(key, 'the form page makes the key');
  const review = { csrf: Browser.csrfOf(page.text), amount: '5.00', reason: 'cracked', idempotency_key: key };

  const shown = await browser.request(`${base}/refund`, { form: review });
  assert.equal(shown.status, 200);
  assert.equal(keyOf(shown.text), key, 'the confirmation carries the form’s key');
  const done = await browser.request(`${base}/refund/confirm`, {
    form: { ...review, idempotency_key: keyOf(shown.text)! },
  });
  assert.equal(done.status, 303);

  // Back: the browser posts the review again, and the confirmation is shown again, with the same key.
  const shownAgain = await browser.request(`${base}/refund`, { form: review });
  assert.equal(keyOf(shownAgain.text), key);
  const doneAgain = await browser.request(`${base}/refund/confirm`, {
    form: { ...review, idempotency_key: keyOf(shownAgain.text)! },
  });
  assert.equal(doneAgain.status, 303);
  assert.equal(doneAgain.headers.get('location'), done.headers.get('location'), 'the first refund’s page');
  const refunds = (await kowhai.test.get('/v1/refunds', { query: { payment_id: payment.id } })).body.refunds;
  assert.deepEqual(
    refunds.map((r: { amount: { value: string } }) => r.amount.value),
    ['5.00 NZD'],
    'one refund',
  );

  // Go back from the confirmation keeps the key; changed values with it refund nothing more.
  const back = await browser.request(backOf(shownAgain.text));
  assert.equal(keyOf(back.text), key);
  const changed = { ...review, amount: '2.00' };
  const reviewed = await browser.request(`${base}/refund`, { form: changed });
  const refused = await browser.request(`${base}/refund/confirm`, {
    form: { ...changed, idempotency_key: keyOf(reviewed.text)! },
  });
  assert.equal(refused.status, 409);
  assert.match(textOf(refused.text), /This form was sent before with other values/);
  const fresh = keyOf(refused.text);
  assert.ok(fresh && fresh !== key, 'shown again with a new key');
  assert.equal(
    (await kowhai.test.get('/v1/refunds', { query: { payment_id: payment.id } })).body.refunds.length,
    1,
    'nothing more refunded',
  );
  // A new form page is a new refund.
  const another = await browser.request(`${base}/refund`);
  assert.notEqual(keyOf(another.text), key);
});

test('Charge: Back to the confirmation (the review posted again) and Yes again makes one payment', async (t) => {
  const world = await dashWorld(t, { workers: false });
  const [kowhai] = world.merchants;
  const { consent } = await objectsOf(world, kowhai);
  const browser = await logIn(world, kowhai);
  const base = `/dashboard/test/recurring-consents/${consent.id}`;
  const page = await browser.request(`${base}/charge`);
  const key = keyOf(page.text);
  assert.ok(key, 'the form page makes the key');
  const review = { csrf: Browser.csrfOf(page.text), amount: '20.00', reference: '', idempotency_key: key };

  const shown = await browser.request(`${base}/charge`, { form: review });
  assert.equal(shown.status, 200, textOf(shown.text));
  assert.equal(keyOf(shown.text), key, 'the confirmation carries the form’s key');
  const done = await browser.request(`${base}/charge/confirm`, {
    form: { ...review, idempotency_key: keyOf(shown.text)! },
  });
  assert.equal(done.status, 303, textOf(done.text));

  const shownAgain = await browser.request(`${base}/charge`, { form: review });
  assert.equal(keyOf(shownAgain.text), key);
  const doneAgain = await browser.request(`${base}/charge/confirm`, {
    form: { ...review, idempotency_key: keyOf(shownAgain.text)! },
  });
  assert.equal(doneAgain.status, 303);
  assert.equal(doneAgain.headers.get('location'), done.headers.get('location'), 'the first payment’s page');
  const usage = (await kowhai.test.get(`/v1/recurring-consents/${consent.id}`)).body.recurring_consent.usage;
  assert.deepEqual([usage.total.count, usage.period.remaining.value], [1, '80.00 NZD'], 'one payment');

  const back = await browser.request(backOf(shownAgain.text));
  assert.equal(keyOf(back.text), key, 'Go back keeps the key');
  assert.match(back.text, /name="amount"[^>]*value="20.00"/, 'and what was typed');
});
