import { test } from 'node:test';
import assert from 'node:assert/strict';
import { Browser } from '../../../test/payer.ts';
import { dashWorld, detailPaths, logIn, objectsOf, textOf } from '../../../test/dashboard.ts';
import { localAt } from '../../shared/zone.ts';
import { VALID_ACCOUNT } from '../../../test/helpers.ts';
import { newId } from '../../shared/ids.ts';

// Home, customers, subscriptions, recurring consents, bank accounts and the test clock over HTTP,
// on SQLite and PostgreSQL; and every detail route is 404 for another merchant and the other mode.
test('every detail route is 404 for another merchant and in the other mode; posts to them change nothing', async (t) => {
  const world = await dashWorld(t);
  const [kowhai, tui] = world.merchants;
  const mine = await objectsOf(world, kowhai);
  const owner = await logIn(world, kowhai);
  const stranger = await logIn(world, tui);
  const strangerCsrf = Browser.csrfOf((await stranger.request('/dashboard/test')).text);
  for (const path of detailPaths(mine)) {
    assert.equal((await owner.request(`/dashboard/test/${path}`)).status, 200, `the owner sees ${path}`);
    const other = await stranger.request(`/dashboard/test/${path}`);
    assert.equal(other.status, 404, `another merchant: ${path}`);
    assert.match(textOf(other.text), /There is nothing with that address in test mode/);
    assert.equal((await owner.request(`/dashboard/live/${path}`)).status, 404, `the other mode: ${path}`);
  }
  for (const path of [
    `requests/${mine.request.id}/delete`,
    `subscriptions/${mine.subscription.id}/cancel`,
    `recurring-consents/${mine.consent.id}/revoke`,
    `webhooks/${mine.webhook.id}/delete`,
    `api-keys/${mine.key}/revoke`,
    `api-keys/${mine.key}/roll`,
    `events/${mine.event.id}/resend`,
  ]) {
    assert.equal(
      (await stranger.request(`/dashboard/test/${path}`, { form: { csrf: strangerCsrf } })).status,
      404,
      `post as another merchant: ${path}`,
    );
  }
  assert.equal(
    (
      await stranger.request(`/dashboard/test/events/${mine.event.id}/resend`, {
        form: { csrf: strangerCsrf, webhook_id: mine.webhook.id },
      })
    ).status,
    404,
  );
  assert.equal((await kowhai.test.get(`/v1/requests/${mine.request.id}`)).body.request.status, 'paid');
  assert.equal((await kowhai.test.get(`/v1/subscriptions/${mine.subscription.id}`)).body.subscription.status, 'active');
  assert.equal(
    (await kowhai.test.get(`/v1/recurring-consents/${mine.consent.id}`)).body.recurring_consent.status,
    'active',
  );
  assert.equal((await kowhai.test.get('/v1/webhooks')).body.webhooks.length, 1);
  assert.equal((await kowhai.test.get('/v1/requests')).status, 200, 'the key still works');
  // the unknown mode and the clock in live mode are 404 too
  assert.equal((await owner.request('/dashboard/staging/requests')).status, 404);
  assert.equal((await owner.request('/dashboard/live/clock')).status, 404);
});

test('live and test are kept apart: lists, home numbers and the test-mode marking', async (t) => {
  const world = await dashWorld(t);
  const [kowhai] = world.merchants;
  await objectsOf(world, kowhai);
  const browser = await logIn(world, kowhai);
  const test = await browser.request('/dashboard/test');
  const live = await browser.request('/dashboard/live');
  assert.match(test.text, /class="test-mode"/);
  assert.match(textOf(test.text), /Test mode\. You are looking at test data: no real money moves\./);
  assert.ok(!/Test mode\./.test(textOf(live.text)));
  assert.match(live.text, /<a href="\/dashboard\/live" aria-current="page">Live<\/a>/);
  assert.match(live.text, /<a href="\/dashboard\/test">Test<\/a>/);
  assert.ok(!live.text.includes('/dashboard/live/clock'), 'no clock in live mode');
  assert.ok(test.text.includes('/dashboard/test/clock'));
  for (const section of [
    'requests',
    'payments',
    'customers',
    'subscriptions',
    'recurring-consents',
    'webhooks',
    'events',
  ]) {
    const testPage = await browser.request(`/dashboard/test/${section}`);
    const livePage = await browser.request(`/dashboard/live/${section}`);
    assert.equal(testPage.status, 200, section);
    assert.equal(livePage.status, 200, section);
    assert.ok(
      /_[0-9A-Z]{26}/.test(testPage.text.replace(/name="csrf" value="[^"]+"/, '')),
      `test ${section} lists objects`,
    );
    assert.ok(
      !/(request|payment|customer|subscription|recurring|webhook|event)_[0-9A-Z]{26}/.test(livePage.text),
      `live ${section} lists none`,
    );
  }
  // home: the test numbers
  const home = textOf(test.text);
  const received = (await kowhai.test.get('/v1/payments', { query: { status: 'successful' } })).body.payments.reduce(
    (sum: number, p: any) => sum + Math.round(Number(p.requested_amount.value.replace(' NZD', '')) * 100),
    0,
  );
  assert.ok(home.includes(`Received $${(received / 100).toFixed(2)}`), `received ${received}`);
  assert.match(home, /Active subscriptions 1/);
  assert.match(home, /Active recurring consents 1/);
  assert.match(
    test.text,
    /<svg class="columns" viewBox="0 0 600 240" role="img" aria-label="Money received per day from /,
  );
  assert.match(home, /Show the days as a table/, 'the days in a table, behind a summary');
  assert.match(
    home,
    /Payments by status Status Payments awaiting-consent \d+ successful 2 failed/,
    'one table, each row with its bar and count: the one-off payment and the first subscription charge',
  );
  assert.equal((test.text.match(/Payments by status/g) ?? []).length, 1, 'not repeated');
  assert.match(textOf(live.text), /Received \$0\.00/);
});

test('customers, subscriptions (pause, resume, cancel after confirming), recurring consents (revoke after confirming), with their events', async (t) => {
  const world = await dashWorld(t);
  const [kowhai] = world.merchants;
  const o = await objectsOf(world, kowhai);
  const browser = await logIn(world, kowhai);
  assert.ok((await browser.request('/dashboard/test/customers?q=PAT@')).text.includes(o.customer.id));
  assert.ok(!(await browser.request('/dashboard/test/customers?q=nobody')).text.includes(o.customer.id));
  const customer = textOf((await browser.request(`/dashboard/test/customers/${o.customer.id}`)).text);
  assert.match(customer, /pat@example\.com/);
  assert.ok(customer.includes(o.payment.id) || customer.includes('$4.00'));
  assert.match(customer, /\$15\.00 fortnightly/);
  assert.match(customer, /\$100\.00 weekly/);

  const detail = textOf((await browser.request(`/dashboard/test/subscriptions/${o.subscription.id}`)).text);
  assert.match(detail, /^ Beans \(subscription of pat@example\.com\)/, 'the title is what it is, the payer beside it');
  assert.match(detail, /Beans active Subscription of pat@example\.com/);
  assert.match(detail, /Plan \$15\.00 fortnightly/);
  assert.match(
    textOf((await browser.request('/dashboard/test/subscriptions')).text),
    /Beans pat@example\.com \$15\.00 fortnightly/,
  );
  assert.match(
    textOf((await browser.request('/dashboard/test/recurring-consents')).text),
    /Top-ups pat@example\.com \$100\.00 weekly/,
  );
  assert.match(detail, /Next charge \S+/);
  assert.match(detail, /Charges and retries .* successful 1/);
  for (const [verb, status, event] of [
    ['pause', 'paused', 'subscription.paused'],
    ['resume', 'active', 'subscription.resumed'],
    ['cancel', 'cancelled', 'subscription.cancelled'],
  ]) {
    const confirm = await browser.request(`/dashboard/test/subscriptions/${o.subscription.id}/${verb}`);
    assert.equal(confirm.status, 200);
    assert.equal(
      (await kowhai.test.get(`/v1/subscriptions/${o.subscription.id}`)).body.subscription.status,
      verb === 'resume' ? 'paused' : verb === 'cancel' ? 'active' : 'active',
      'asking changes nothing',
    );
    const done = await browser.request(`/dashboard/test/subscriptions/${o.subscription.id}/${verb}`, {
      form: { csrf: Browser.csrfOf(confirm.text) },
    });
    assert.equal(done.status, 303, `${verb}: ${done.text}`);
    assert.equal((await kowhai.test.get(`/v1/subscriptions/${o.subscription.id}`)).body.subscription.status, status);
    const types = (await kowhai.test.get('/v1/events', { query: { object_id: o.subscription.id } })).body.events.map(
      (e: any) => e.type,
    );
    assert.ok(types.includes(event), event);
  }
  const cancelledBy = (await kowhai.test.get(`/v1/subscriptions/${o.subscription.id}`)).body.subscription.cancelled_by;
  assert.equal(cancelledBy, 'merchant');
  const again = await browser.request(`/dashboard/test/subscriptions/${o.subscription.id}/pause`, {
    form: { csrf: Browser.csrfOf((await browser.request('/dashboard/test')).text) },
  });
  assert.equal(again.status, 409);

  const consent = textOf((await browser.request(`/dashboard/test/recurring-consents/${o.consent.id}`)).text);
  assert.match(consent, /Each week up to \$100\.00/);
  assert.match(consent, /Each payment up to \$50\.00/);
  assert.match(consent, /Left \$100\.00/);
  const confirm = await browser.request(`/dashboard/test/recurring-consents/${o.consent.id}/revoke`);
  assert.match(textOf(confirm.text), /Revoke “Top-ups”, the recurring consent of pat@example\.com\?/);
  const revoked = await browser.request(`/dashboard/test/recurring-consents/${o.consent.id}/revoke`, {
    form: { csrf: Browser.csrfOf(confirm.text) },
  });
  assert.equal(revoked.status, 303);
  assert.equal(
    (await kowhai.test.get(`/v1/recurring-consents/${o.consent.id}`)).body.recurring_consent.status,
    'revoked',
  );
  // as through the API: a merchant's own revocation sends no event (only a payer's or a bank's does)
  const revokedEvents = (
    await kowhai.test.get('/v1/events', { query: { type: 'recurring_payment.revoked' } })
  ).body.events.filter((e: any) => e.data.id === o.consent.id);
  assert.equal(revokedEvents.length, 0);
  const refused = await kowhai.test.post('/v1/payments', {
    token: 'rct_x',
    amount: '1.00 NZD',
    idempotency_key: 'after',
  });
  assert.notEqual(refused.status, 201);
});

test('bank accounts are added with the check-digit validator; the test clock advances by a period or to a date and shows what ran', async (t) => {
  const world = await dashWorld(t);
  const [kowhai] = world.merchants;
  const o = await objectsOf(world, kowhai);
  const browser = await logIn(world, kowhai);
  const accounts = await browser.request('/dashboard/live/bank-accounts');
  assert.ok(accounts.text.includes(VALID_ACCOUNT), 'the account number as it was typed, in the one form');
  const wrong = await browser.request('/dashboard/live/bank-accounts', {
    form: { csrf: Browser.csrfOf(accounts.text), account_number: '12-3456-7890139-00' },
  });
  assert.equal(wrong.status, 400);
  assert.match(textOf(wrong.text), /not a valid New Zealand bank account number/);
  assert.match(wrong.text, /id="account_number"[^>]*aria-invalid="true"/);
  // each other failure is said as what it is, and a long name is refused, not saved cut short
  const noNumber = await browser.request('/dashboard/live/bank-accounts', {
    form: { csrf: Browser.csrfOf(accounts.text), account_number: '', name: 'Savings' },
  });
  assert.equal(noNumber.status, 400);
  assert.match(textOf(noNumber.text), /Enter the account number, as /);
  const longName = 'Savings for the new espresso machine '.repeat(3);
  const tooLong = await browser.request('/dashboard/live/bank-accounts', {
    form: { csrf: Browser.csrfOf(accounts.text), account_number: VALID_ACCOUNT, name: longName },
  });
  assert.equal(tooLong.status, 400);
  assert.match(textOf(tooLong.text), /“Name” can be at most 100 characters: shorten it\. Nothing was added\./);
  assert.doesNotMatch(textOf(tooLong.text), /not a valid New Zealand bank account number/);
  assert.match(tooLong.text, new RegExp(`id="name" name="name" value="${longName.trim()}" aria-invalid="true"`));
  assert.doesNotMatch(tooLong.text, /id="account_number"[^>]*aria-invalid/, 'the number was fine');
  assert.equal((await kowhai.live.get('/v1/bank-accounts')).body.bank_accounts.length, 1, 'nothing was added');
  const added = await browser.request('/dashboard/live/bank-accounts', {
    form: { csrf: Browser.csrfOf(accounts.text), account_number: VALID_ACCOUNT, name: 'Savings' },
  });
  assert.equal(added.status, 303);
  assert.equal((await kowhai.live.get('/v1/bank-accounts')).body.bank_accounts.length, 2);

  const clock = await browser.request('/dashboard/test/clock');
  assert.equal(clock.status, 200);
  assert.match(textOf(clock.text), /Now, on the test clock/);
  const before = (await kowhai.test.get('/v1/test-helpers/clock')).body.clock.now;
  const moved = await browser.request('/dashboard/test/clock', {
    form: { csrf: Browser.csrfOf(clock.text), step: 'fortnight' },
  });
  assert.equal(moved.status, 303);
  const after = (await kowhai.test.get('/v1/test-helpers/clock')).body.clock.now;
  assert.ok(Date.parse(after) - Date.parse(before) >= 14 * 86_400_000);
  const ran = await browser.request(moved.headers.get('location')!);
  assert.match(
    textOf(ran.text),
    /What ran .*payment\.created .*payment\.status_updated/,
    'the second subscription charge ran',
  );
  assert.equal(
    (await kowhai.test.get(`/v1/subscriptions/${o.subscription.id}`)).body.subscription.successful_charges,
    2,
  );
  const backwards = await browser.request('/dashboard/test/clock', {
    form: { csrf: Browser.csrfOf(clock.text), to: '2001-01-01T10:00' },
  });
  assert.equal(backwards.status, 400);
  assert.match(
    textOf(backwards.text),
    /Choose a time after \d{1,2} \w{3} \d{4}, \d{1,2}:\d{2} [ap]m, the time on the test clock now: it only moves forward\. The clock did not move\./,
  );
  assert.doesNotMatch(textOf(backwards.text), /\bto must\b/, "in the form's words, not the API field name");
  const target = localAt(after, 'Pacific/Auckland')
    .plus({ days: 40 })
    .set({ hour: 10, minute: 0, second: 0, millisecond: 0 });
  const toDate = await browser.request('/dashboard/test/clock', {
    form: { csrf: Browser.csrfOf(clock.text), to: target.toFormat("yyyy-LL-dd'T'HH:mm") },
  });
  assert.equal(toDate.status, 303, toDate.text);
  // the clock keeps running from where it was set, so it reads that time plus the moments since
  const reached = Date.parse((await kowhai.test.get('/v1/test-helpers/clock')).body.clock.now) - target.toMillis();
  assert.ok(reached >= 0 && reached < 60_000, `set to the time given (${reached} ms on)`);
});

test("another merchant's payers cannot crowd a merchant's own payments out of its customer page or its payment search", async (t) => {
  const world = await dashWorld(t, { workers: false });
  const [kowhai, tui] = world.merchants;
  const pay = async (merchant: typeof kowhai) => {
    const request = (
      await merchant.test.post('/v1/requests', {
        bank_account_id: merchant.bankAccountId,
        message: 'Cup',
        amount: '4.00 NZD',
      })
    ).body.request;
    return (
      await merchant.test.post(`/v1/test-helpers/requests/${request.id}/pay`, {
        cust_info: { email: 'pat@example.com' },
      })
    ).body.payment;
  };
  const own = await pay(kowhai);
  const customer = (await kowhai.test.get('/v1/customers')).body.customers[0];
  // Tui's payers give the same email 2,100 times after it: one payment through the pay helper, then
  // copies of its rows with later ids, as 2,100 more pay-helper calls would leave them
  const theirs = await pay(tui);
  const { db } = world.app.deps;
  const payment = await db.selectFrom('payments').selectAll().where('id', '=', theirs.id).executeTakeFirstOrThrow();
  const details = await db
    .selectFrom('cust_infos')
    .selectAll()
    .where('payment_id', '=', theirs.id)
    .executeTakeFirstOrThrow();
  for (let batch = 0; batch < 21; batch++) {
    const copies = Array.from({ length: 100 }, (_, i) => ({
      ...payment,
      id: newId('payment'),
      particulars: `V-Z${(batch * 100 + i).toString(36).toUpperCase().padStart(5, '0')}`,
      auth_state: null,
    }));
    await db.insertInto('payments').values(copies).execute();
    await db
      .insertInto('cust_infos')
      .values(copies.map((copy) => ({ ...details, id: newId('custInfo'), payment_id: copy.id })))
      .execute();
  }

  const browser = await logIn(world, kowhai);
  assert.ok(
    (await browser.request(`/dashboard/test/customers/${customer.id}`)).text.includes(own.id),
    'on the customer page',
  );
  assert.ok(
    (await browser.request('/dashboard/test/payments?q=pat%40example.com')).text.includes(own.id),
    'in the payment search',
  );
});
