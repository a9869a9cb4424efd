// The hosted page after the bank for a recurring consent or a subscription (approved, declined),
// and what the pay page shows around its form: errors tied to their radios, a donation, the
// test-mode banner in the page's header, and a subscription whose first charge is being taken.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { checkoutWorld, createRequest, payViaPage } from '../../../test/flows/checkout.fixtures.ts';
import { apiClient, buildTestApp, createTestMerchant } from '../../../test/helpers.ts';
import { authoriseDirectly, createSubscriptionRequest } from '../../../test/support/subscriptions.ts';

const form = (fields: Record<string, string>) => ({
  payload: new URLSearchParams(fields).toString(),
  headers: { 'content-type': 'application/x-www-form-urlencoded' },
});

test('declining a subscription or a recurring consent at the bank says so on the page, with a way to try again', async (t) => {
  const world = await checkoutWorld(t);
  const plans = {
    subscription: await createRequest(world, {
      message: 'Weekly flowers',
      cust_info: { email: 'ana@example.com' },
      subscription_options: { amount: '10.00 NZD', period: 'weekly' },
    }),
    recurring: await createRequest(world, {
      message: 'Veggie box',
      cust_info: { email: 'ana@example.com' },
      recurring_options: { period: 'weekly', max_per_period: '80.00 NZD' },
    }),
  };
  const headings = { subscription: 'Subscription not set up', recurring: 'Regular payments not authorised' };
  for (const [kind, request] of Object.entries(plans) as Array<[keyof typeof plans, any]>) {
    const next = await payViaPage(world, request.id, {}, 'decline');
    assert.equal(next, `/pay/${request.id}?outcome=declined`, kind);
    const page = await world.app.app.inject({ method: 'GET', url: next });
    assert.equal(page.statusCode, 200);
    assert.match(page.body, new RegExp(`<title>${headings[kind]} · `), kind);
    assert.match(page.body, new RegExp(`<h1 tabindex="-1">${headings[kind]}</h1>`), kind);
    assert.match(page.body, /You declined at your bank\. Nothing was set up and no money moved\./);
    assert.match(page.body, new RegExp(`<a class="button primary" href="/pay/${request.id}">Try again</a>`));
    assert.match(page.body, /data-page="set-up"/);
    assert.match(page.body, /data-status="cancelled"/);
    assert.match(page.body, new RegExp(`data-kind="${kind}"`));
    assert.equal((await world.api.get(`/v1/requests/${request.id}`)).body.request.status, 'active');
    // Without the outcome, the page is the form again.
    const again = await world.app.app.inject({ method: 'GET', url: `/pay/${request.id}` });
    assert.match(again.body, /<form method="post"/);
    assert.doesNotMatch(again.body, /You declined/);
  }
  // Inside the widget, "Try again" stays in the frame.
  const framed = await world.app.app.inject({
    method: 'GET',
    url: `/pay/${plans.subscription.id}?outcome=failed&embed_origin=${encodeURIComponent('https://shop.example')}`,
  });
  assert.match(framed.body, /Your bank could not set up the subscription\. Nothing was set up and no money moved\./);
  assert.match(framed.body, /href="\/pay\/request_\w+\?embed_origin=https%3A%2F%2Fshop\.example">Try again/);
  assert.match(framed.body, /data-status="failed"/);
});

test('the outcome on the page is one of a fixed list, never reflected, and not for one-off payments', async (t) => {
  const app = await buildTestApp(t);
  const merchant = await createTestMerchant(app);
  const api = apiClient(app, merchant.testKey);
  const subscription = await createSubscriptionRequest(api, merchant.bankAccountId, {
    amount: '10.00 NZD',
    period: 'weekly',
  });
  for (const outcome of ['<script>x</script>', 'DECLINED', 'declined ', 'cancelled']) {
    const res = await app.app.inject({
      method: 'GET',
      url: `/pay/${subscription.id}?outcome=${encodeURIComponent(outcome)}`,
    });
    assert.equal(res.statusCode, 200);
    assert.match(res.body, /<form method="post"/, outcome);
    assert.doesNotMatch(res.body, /not set up|<script>x|DECLINED/, outcome);
  }
  const payment = await api.post('/v1/requests', {
    bank_account_id: merchant.bankAccountId,
    amount: '5.00 NZD',
    message: 'Thing',
  });
  const res = await app.app.inject({ method: 'GET', url: `/pay/${payment.body.request.id}?outcome=declined` });
  assert.match(res.body, /<form method="post"/);
  assert.doesNotMatch(res.body, /You declined/);
});

test('approving a subscription at the bank lands on its set-up page, which reports the outcome', async (t) => {
  const world = await checkoutWorld(t);
  const request = await createRequest(world, {
    message: 'Weekly flowers',
    cust_info: { email: 'ana@example.com' },
    subscription_options: { amount: '10.00 NZD', period: 'weekly', start_date: '2031-03-03' },
  });
  const next = await payViaPage(world, request.id, {});
  assert.equal(next, `/pay/${request.id}?outcome=authorised`);
  const page = await world.app.app.inject({ method: 'GET', url: next });
  assert.equal(page.statusCode, 200);
  assert.match(page.body, /<h1 tabindex="-1">Subscription set up<\/h1>/);
  assert.match(page.body, /data-page="set-up"/);
  assert.match(page.body, /data-status="successful"/);
  assert.match(page.body, /First charge: .*2031/);
  assert.match(page.body, /No money has moved yet\./);
  // A later visit shows the same page, without reporting an outcome again.
  const later = await world.app.app.inject({ method: 'GET', url: `/pay/${request.id}` });
  assert.match(later.body, /Subscription set up/);
  assert.match(later.body, /data-page="status"/);
  assert.match(later.body, /data-status=""/);
});

test('a plan starting on approval: its page says the first charge is being taken, not that no money moved', async (t) => {
  const app = await buildTestApp(t);
  const merchant = await createTestMerchant(app);
  const api = apiClient(app, merchant.testKey);
  const request = await createSubscriptionRequest(api, merchant.bankAccountId, {
    amount: '12.00 NZD',
    period: 'weekly',
  });
  await authoriseDirectly(app, request.id);
  await app.deps.db.updateTable('requests').set({ status: 'paid' }).where('id', '=', request.id).execute();
  const page = await app.app.inject({ method: 'GET', url: `/pay/${request.id}` });
  assert.equal(page.statusCode, 200);
  assert.match(page.body, /Your first charge of \$12\.00 is being taken now; you will get a receipt\./);
  assert.doesNotMatch(page.body, /No money has moved yet/);
  assert.doesNotMatch(page.body, /First charge:/);
});

test('bank and one-tap amount errors are tied to their radios; the summary links to the first radio; the title says Error', async (t) => {
  const app = await buildTestApp(t);
  const merchant = await createTestMerchant(app);
  const api = apiClient(app, merchant.testKey);
  const created = await api.post('/v1/requests', {
    bank_account_id: merchant.bankAccountId,
    message: 'Koha',
    allow_dynamic_amount: true,
    suggested_amounts: '10.00,25.00',
    maximum_payment_amount: 10000,
  });
  const id = created.body.request.id;
  const fresh = await app.app.inject({ method: 'GET', url: `/pay/${id}` });
  assert.match(fresh.body, /<title>Koha · /);
  assert.doesNotMatch(fresh.body, /aria-invalid/);
  const res = await app.app.inject({ method: 'POST', url: `/pay/${id}`, ...form({}) });
  assert.equal(res.statusCode, 400);
  assert.match(res.body, /<title>Error: Koha · /);
  assert.match(res.body, /<a href="#amount_choice">Choose or enter an amount<\/a>/);
  assert.match(res.body, /<a href="#bank">/);
  assert.match(res.body, /<fieldset class="field has-error" aria-describedby="amount-bounds amount_choice-error">/);
  assert.match(res.body, /<fieldset class="field banks has-error" aria-describedby="bank-error">/);
  const radios = [...res.body.matchAll(/<input type="radio" name="(\w+)"([^>]*)>/g)];
  assert.ok(radios.length >= 3);
  for (const [, , attrs] of radios) assert.match(attrs, /aria-invalid="true"/);
  // The summary's targets are the first radio of each group: focusable, and the only elements with those ids.
  assert.match(radios.find((r) => r[1] === 'amount_choice')![2], /^ id="amount_choice" value="10\.00"/);
  assert.match(radios.find((r) => r[1] === 'bank')![2], /^ id="bank" value=/);
  assert.equal(res.body.match(/id="bank"/g)!.length, 1);
  assert.equal(res.body.match(/id="amount_choice"/g)!.length, 1);
});

test('a donation reads as one; the test-mode banner is inside the page header', async (t) => {
  const app = await buildTestApp(t);
  const merchant = await createTestMerchant(app, 'Kōwhai Trust');
  const api = apiClient(app, merchant.testKey);
  const make = async (extra: Record<string, unknown>) =>
    (
      await api.post('/v1/requests', {
        bank_account_id: merchant.bankAccountId,
        amount: '20.00 NZD',
        message: 'Tree planting',
        ...extra,
      })
    ).body.request.id;
  const donation = await app.app.inject({ method: 'GET', url: `/pay/${await make({ is_donation: true })}` });
  assert.match(
    donation.body,
    /<p class="kind-label">Donation to Kōwhai Trust<\/p>\s*<h1 class="message">Tree planting<\/h1>/,
  );
  assert.match(donation.body, /<button type="submit" class="primary">Donate<\/button>/);
  assert.match(donation.body, /\$20\.00/);
  const sale = await app.app.inject({ method: 'GET', url: `/pay/${await make({})}` });
  assert.doesNotMatch(sale.body, /Donation to|>Donate</);
  assert.match(sale.body, />Continue to your bank<\/button>/);
  assert.match(sale.body, /<header class="page-header">\s*<div class="test-banner" role="note">/);
  assert.equal(sale.body.match(/<header/g)!.length, 1);
});
