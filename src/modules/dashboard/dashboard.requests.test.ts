import { test } from 'node:test';
import assert from 'node:assert/strict';
import { Browser } from '../../../test/payer.ts';
import { clockOnNzMorningOfUtcYesterday, dashWorld, logIn, textOf } from '../../../test/dashboard.ts';
import { localIsoWithOffset } from '../../shared/zone.ts';

// Requests and payments in the dashboard over HTTP, on SQLite and PostgreSQL: the same service
// calls and events as the API, filters and search, CSV export equal to the API's list.
const form = (page: string) => Browser.csrfOf(page);

test('a request created with the form is the one the API creates, with its event; bad input is refused with the API message and creates nothing', async (t) => {
  const world = await dashWorld(t, { workers: false });
  const [kowhai] = world.merchants;
  const browser = await logIn(world, kowhai);
  const chooser = await browser.request('/dashboard/test/requests/new');
  assert.equal(chooser.status, 200);
  assert.match(textOf(chooser.text), /What does the payer agree to\?/);
  assert.ok(!chooser.text.includes('name="amount"'), 'no fields before the kind is chosen');
  const fieldsOfKind = {
    fixed: ['Amount (NZD)'],
    'payer-chosen': ['Suggested amounts', 'Lowest amount (NZD)'],
    recurring: ['Most each period (NZD)'],
    subscription: ['Amount each period (NZD)', 'First charge on'],
  };
  for (const [kind, labels] of Object.entries(fieldsOfKind)) {
    const page = await browser.request(`/dashboard/test/requests/new?kind=${kind}`);
    assert.equal(page.status, 200);
    for (const label of ['Message to the payer', 'Payer email', 'Expires in', 'Statement reference', ...labels])
      assert.ok(textOf(page.text).includes(label), `${kind}: ${label}`);
    for (const [other, otherLabels] of Object.entries(fieldsOfKind))
      if (other !== kind)
        for (const label of otherLabels.filter((l) => !labels.includes(l)))
          assert.ok(!textOf(page.text).includes(label), `${kind} hides ${label}`);
  }
  assert.equal((await browser.request('/dashboard/test/requests/new?kind=loan')).status, 400);
  const blank = await browser.request('/dashboard/test/requests/new?kind=fixed');

  const bad = await browser.request('/dashboard/test/requests/new', {
    form: {
      csrf: form(blank.text),
      message: 'Flat white',
      amount: '12.345',
      kind: 'fixed',
      bank_account_id: kowhai.bankAccountId,
    },
  });
  assert.equal(bad.status, 400);
  assert.match(
    textOf(bad.text),
    /“Amount \(NZD\)” must be a positive amount with at most two decimals\. Enter dollars and cents, such as 25\.00\./,
  );
  assert.ok(!/\bamount must be\b/.test(textOf(bad.text)), "in the form's words, not the API field name");
  assert.doesNotMatch(textOf(bad.text), /<decimal>|NZD with two decimals/, "not the API's amount form");
  assert.match(bad.text, /id="amount" name="amount" value="12.345"[^>]*aria-invalid="true"/);
  const negative = await browser.request('/dashboard/test/requests/new', {
    form: {
      csrf: form(blank.text),
      message: 'Refund?',
      amount: '-5',
      kind: 'fixed',
      bank_account_id: kowhai.bankAccountId,
    },
  });
  assert.equal(negative.status, 400);
  assert.match(textOf(negative.text), /“Amount \(NZD\)” must be a positive amount with at most two decimals\./);
  assert.doesNotMatch(textOf(negative.text), /<decimal>|NZD with two decimals/);
  const tooMuch = await browser.request('/dashboard/test/requests/new', {
    form: {
      csrf: form(blank.text),
      message: 'Car',
      amount: '9000',
      kind: 'fixed',
      bank_account_id: kowhai.bankAccountId,
    },
  });
  assert.equal(tooMuch.status, 400);
  const recurringNoEmail = await browser.request('/dashboard/test/requests/new', {
    form: {
      csrf: form(blank.text),
      message: 'Top-ups',
      kind: 'recurring',
      recurring_period: 'weekly',
      recurring_max_per_period: '100',
      bank_account_id: kowhai.bankAccountId,
    },
  });
  assert.equal(recurringNoEmail.status, 400);
  assert.match(textOf(recurringNoEmail.text), /“Payer email” is required\. Enter the payer’s email address/);
  assert.ok(!textOf(recurringNoEmail.text).includes('cust_info'), 'no API field names on the page');
  assert.match(recurringNoEmail.text, /id="payer_email"[^>]*aria-invalid="true"/);
  // a value for another kind's field is refused, not dropped (the form only shows the chosen kind's)
  const stray = await browser.request('/dashboard/test/requests/new', {
    form: {
      csrf: form(blank.text),
      message: 'Veg box',
      kind: 'subscription',
      amount: '10.00',
      subscription_amount: '12.00',
      subscription_period: 'monthly',
      payer_email: 'pat@example.com',
      bank_account_id: kowhai.bankAccountId,
    },
  });
  assert.equal(stray.status, 400);
  assert.match(textOf(stray.text), /“Amount \(NZD\)” belongs to a payment of an amount you set, not to a subscription/);
  const noKind = await browser.request('/dashboard/test/requests/new', {
    form: { csrf: form(blank.text), message: 'Veg box', amount: '10.00', bank_account_id: kowhai.bankAccountId },
  });
  assert.equal(noKind.status, 400);
  assert.match(textOf(noKind.text), /Choose what the payer agrees to/);
  assert.equal((await kowhai.test.get('/v1/requests')).body.requests.length, 0, 'nothing created');

  const created = await browser.request('/dashboard/test/requests/new', {
    form: {
      csrf: form(blank.text),
      message: 'Flat <white>',
      amount: '4.50',
      kind: 'fixed',
      type: 'single',
      bank_account_id: kowhai.bankAccountId,
      reference: 'INV-77',
      merchant_identifier: 'order-77',
      expires_in: '7d',
      payer_email: 'pat@example.com',
      require_customer_phone: 'on',
    },
  });
  assert.equal(created.status, 303, created.text);
  const location = created.headers.get('location')!;
  const id = /requests\/(request_[0-9A-Z]{26})\?done=created$/.exec(location)![1];
  const api = (await kowhai.test.get(`/v1/requests/${id}`)).body.request;
  assert.deepEqual(
    [
      api.message,
      api.amount.value,
      api.pcr.reference,
      api.merchant_identifier,
      api.require_customer_phone,
      api.is_test_mode,
    ],
    ['Flat <white>', '4.50 NZD', 'INV-77', 'order-77', true, true],
  );
  const events = (await kowhai.test.get('/v1/events', { query: { object_id: id } })).body.events.map(
    (e: any) => e.type,
  );
  assert.deepEqual(events, ['request.created']);

  const detail = await browser.request(location);
  assert.equal(detail.status, 200);
  const page = textOf(detail.text);
  assert.match(page, /The request is created/);
  assert.ok(detail.text.includes('Flat &lt;white&gt;'), 'escaped');
  assert.ok(detail.text.includes(`value="${api.url}"`), 'the link');
  assert.match(detail.text, /<img src="data:image\/png;base64,[^"]+" alt="QR code of the payment link"/);
  assert.match(page, /request\.created/);

  // payer-chosen amounts, a subscription and a recurring consent, with every option
  const choices = await browser.request('/dashboard/test/requests/new', {
    form: {
      csrf: form(blank.text),
      message: 'Koha',
      kind: 'payer-chosen',
      type: 'multi',
      suggested_amounts: '5.00, 10.00',
      minimum_amount: '2',
      maximum_amount: '100',
      bank_account_id: kowhai.bankAccountId,
      is_donation: 'on',
    },
  });
  assert.equal(choices.status, 303, choices.text);
  const sub = await browser.request('/dashboard/test/requests/new', {
    form: {
      csrf: form(blank.text),
      message: 'Beans',
      kind: 'subscription',
      subscription_amount: '15',
      subscription_period: 'fortnightly',
      subscription_total_count: '6',
      payer_email: 'pat@example.com',
      bank_account_id: kowhai.bankAccountId,
    },
  });
  assert.equal(sub.status, 303, sub.text);
  const rec = await browser.request('/dashboard/test/requests/new', {
    form: {
      csrf: form(blank.text),
      message: 'Top-ups',
      kind: 'recurring',
      recurring_period: 'weekly',
      recurring_max_per_period: '100',
      recurring_max_per_payment: '50',
      recurring_end_date: '2099-01-31',
      payer_email: 'pat@example.com',
      bank_account_id: kowhai.bankAccountId,
    },
  });
  assert.equal(rec.status, 303, rec.text);
  const recurringForm = await browser.request('/dashboard/test/requests/new?kind=recurring');
  for (const period of ['daily', 'weekly', 'fortnightly', 'monthly', 'yearly'])
    assert.match(recurringForm.text, new RegExp(`<option[^>]*>${period}</option>`), `the form offers ${period}`);
  const fortnightly = await browser.request('/dashboard/test/requests/new', {
    form: {
      csrf: form(blank.text),
      message: 'Pay-day top-ups',
      kind: 'recurring',
      recurring_period: 'fortnightly',
      recurring_max_per_period: '200',
      payer_email: 'pat@example.com',
      bank_account_id: kowhai.bankAccountId,
    },
  });
  assert.equal(fortnightly.status, 303, fortnightly.text);
  const all = (await kowhai.test.get('/v1/requests')).body.requests;
  const byMessage = Object.fromEntries(all.map((r: any) => [r.message, r]));
  assert.deepEqual(
    [
      byMessage.Koha.type,
      byMessage.Koha.allow_dynamic_amount,
      byMessage.Koha.suggested_amounts,
      byMessage.Koha.min_payment_amount,
      byMessage.Koha.max_payment_amount,
      byMessage.Koha.is_donation,
    ],
    ['multi', true, '5.00,10.00', 200, 10000, true],
  );
  assert.deepEqual(
    [
      byMessage.Beans.subscription_options.amount,
      byMessage.Beans.subscription_options.period,
      byMessage.Beans.subscription_options.total_count,
    ],
    ['15.00 NZD', 'fortnightly', 6],
  );
  assert.deepEqual(
    [byMessage['Top-ups'].recurring_options.max_per_period, byMessage['Top-ups'].recurring_options.max_per_payment],
    ['100.00 NZD', '50.00 NZD'],
  );
  assert.deepEqual(byMessage['Pay-day top-ups'].recurring_options, {
    period: 'fortnightly',
    max_per_period: '200.00 NZD',
  });
});

test('the request list filters by status, type and dates, searches id, reference, identifier and particulars, and pages', async (t) => {
  const world = await dashWorld(t, { workers: false });
  const [kowhai] = world.merchants;
  const made: string[] = [];
  for (let i = 0; i < 30; i++) {
    const reply = await kowhai.test.post('/v1/requests', {
      bank_account_id: kowhai.bankAccountId,
      message: `Order ${i}`,
      amount: '1.00 NZD',
      reference: `REF-${i}`,
      merchant_identifier: `ord_${i}`,
      ...(i % 2 ? { type: 'multi' } : {}),
    });
    made.push(reply.body.request.id);
  }
  await kowhai.test.delete(`/v1/requests/${made[3]}`);
  const paid = await kowhai.test.post(`/v1/test-helpers/requests/${made[5]}/pay`, {});
  assert.equal(paid.status, 200, paid.text);
  const particulars = paid.body.payment.pcr.particulars;
  const browser = await logIn(world, kowhai);
  const ids = (html: string) => [...new Set([...html.matchAll(/requests\/(request_[0-9A-Z]{26})"/g)].map((m) => m[1]))];

  const first = await browser.request('/dashboard/test/requests');
  assert.equal(ids(first.text).length, 25);
  const next = /href="([^"]+)" rel="next"/.exec(first.text)![1].replace(/&amp;/g, '&');
  const second = await browser.request(next);
  assert.equal(ids(second.text).length, 5);
  assert.deepEqual([...ids(first.text), ...ids(second.text)], [...made].reverse());

  assert.deepEqual(ids((await browser.request('/dashboard/test/requests?status=deleted')).text), [made[3]]);
  const paidByApi = (await kowhai.test.get('/v1/requests', { query: { status: 'paid' } })).body.requests.map(
    (r: any) => r.id,
  );
  assert.deepEqual(ids((await browser.request('/dashboard/test/requests?status=paid')).text), paidByApi);
  assert.equal(ids((await browser.request('/dashboard/test/requests?type=multi')).text).length, 15);
  assert.deepEqual(ids((await browser.request('/dashboard/test/requests?q=ref-12')).text), [made[12]]);
  assert.deepEqual(ids((await browser.request('/dashboard/test/requests?q=ord_17')).text), [made[17]]);
  assert.deepEqual(ids((await browser.request(`/dashboard/test/requests?q=${made[8]}`)).text), [made[8]]);
  assert.deepEqual(ids((await browser.request(`/dashboard/test/requests?q=${encodeURIComponent(particulars)}`)).text), [
    made[5],
  ]);
  assert.deepEqual(
    ids((await browser.request('/dashboard/test/requests?q=%25')).text),
    [],
    'a % is searched as itself',
  );
  assert.equal(ids((await browser.request('/dashboard/test/requests?from=2000-01-01&to=2000-01-02')).text).length, 0);
  assert.equal(ids((await browser.request('/dashboard/test/requests?from=2000-01-01')).text).length, 25);
  // a date that is no day is said, and the list is shown without it
  const badDate = await browser.request('/dashboard/test/requests?from=2026-13-45&status=deleted');
  assert.equal(badDate.status, 200);
  assert.match(
    textOf(badDate.text),
    /“Created from” \(2026-13-45\) is not a date we understand, so the page is shown without it\. Enter dates as year-month-day, such as 2026-12-01\./,
  );
  assert.match(badDate.text, /id="from" name="from"[^>]*aria-invalid="true"/);
  assert.deepEqual(ids(badDate.text), [made[3]], 'the other filters still apply');
  const bothBad = textOf((await browser.request('/dashboard/test/requests?from=soon&to=2026-02-30')).text);
  assert.match(bothBad, /“Created from” \(soon\) and “Created to” \(2026-02-30\) are not dates we understand/);
  assert.doesNotMatch(
    textOf((await browser.request('/dashboard/test/requests?from=2026-02-28')).text),
    /not a date we understand/,
  );
  // the live list is another world
  assert.equal(ids((await browser.request('/dashboard/live/requests')).text).length, 0);
});

test('delete asks first, then deletes through the service with its event; deleting again changes nothing', async (t) => {
  const world = await dashWorld(t, { workers: false });
  const [kowhai] = world.merchants;
  const id = (
    await kowhai.live.post('/v1/requests', {
      bank_account_id: kowhai.bankAccountId,
      message: 'Tea',
      amount: '3.00 NZD',
    })
  ).body.request.id;
  const browser = await logIn(world, kowhai);
  const confirm = await browser.request(`/dashboard/live/requests/${id}/delete`);
  assert.equal(confirm.status, 200);
  assert.match(textOf(confirm.text), /Delete request “Tea”\? Its link stops taking payments at once/);
  assert.equal((await kowhai.live.get(`/v1/requests/${id}`)).body.request.status, 'active', 'asking changes nothing');
  const done = await browser.request(`/dashboard/live/requests/${id}/delete`, { form: { csrf: form(confirm.text) } });
  assert.equal(done.status, 303);
  assert.equal((await kowhai.live.get(`/v1/requests/${id}`)).body.request.status, 'deleted');
  const types = (await kowhai.live.get('/v1/events', { query: { object_id: id } })).body.events.map((e: any) => e.type);
  assert.deepEqual(types.sort(), ['request.created', 'request.status_updated']);
  // a repeated delete (a double submit, a retry) changes nothing and writes no event
  const again = await browser.request(`/dashboard/live/requests/${id}/delete`, { form: { csrf: form(confirm.text) } });
  assert.equal(again.status, 303);
  const after = (await kowhai.live.get('/v1/events', { query: { object_id: id } })).body.events;
  assert.equal(after.length, 2);
});

test('payments: filters, search by particulars, reference, request and payer email; detail with statement lines and history; CSV export equal to the API', async (t) => {
  const world = await dashWorld(t, { workers: true });
  const [kowhai] = world.merchants;
  const payments: any[] = [];
  for (let i = 0; i < 4; i++) {
    const request = (
      await kowhai.test.post('/v1/requests', {
        bank_account_id: kowhai.bankAccountId,
        message: `Cup ${i}`,
        amount: `${i + 1}.50 NZD`,
        reference: `R-${i}`,
        merchant_identifier: i === 2 ? '=HYPERLINK("x")' : `m${i}`,
      })
    ).body.request;
    const paid = await kowhai.test.post(`/v1/test-helpers/requests/${request.id}/pay`, {
      outcome: i === 3 ? 'decline' : 'approve',
      cust_info: { email: `payer${i}@example.com`, first_name: 'Pat' },
    });
    assert.equal(paid.status, 200, paid.text);
    payments.push(paid.body.payment);
  }
  const browser = await logIn(world, kowhai);
  const ids = (html: string) => [...new Set([...html.matchAll(/payments\/(payment_[0-9A-Z]{26})"/g)].map((m) => m[1]))];
  const list = await browser.request('/dashboard/test/payments');
  assert.equal(ids(list.text).length, 4);
  assert.deepEqual(ids((await browser.request('/dashboard/test/payments?q=payer2%40example')).text), [payments[2].id]);
  assert.deepEqual(ids((await browser.request(`/dashboard/test/payments?q=${payments[1].pcr.particulars}`)).text), [
    payments[1].id,
  ]);
  assert.deepEqual(ids((await browser.request(`/dashboard/test/payments?q=${payments[0].request_id}`)).text), [
    payments[0].id,
  ]);
  assert.deepEqual(ids((await browser.request('/dashboard/test/payments?q=R-1')).text), [payments[1].id]);
  const failedByApi = (await kowhai.test.get('/v1/payments', { query: { status: 'failed' } })).body.payments.map(
    (p: any) => p.id,
  );
  assert.deepEqual(ids((await browser.request('/dashboard/test/payments?status=failed')).text), failedByApi);
  assert.equal(ids((await browser.request('/dashboard/live/payments')).text).length, 0, 'live is apart');
  const badDate = await browser.request('/dashboard/test/payments?to=2026-13-45');
  assert.equal(badDate.status, 200);
  assert.match(textOf(badDate.text), /“Created to” \(2026-13-45\) is not a date we understand/);
  assert.match(badDate.text, /id="to" name="to"[^>]*aria-invalid="true"/);
  assert.equal(ids(badDate.text).length, 4, 'the list is shown without it');

  const detail = await browser.request(`/dashboard/test/payments/${payments[0].id}`);
  assert.equal(detail.status, 200);
  const page = textOf(detail.text);
  assert.ok(page.includes(`${payments[0].pcr.particulars} ${payments[0].pcr.code} R-0`), 'statement line');
  assert.match(page, /Status history .*awaiting-consent .*successful/);
  assert.match(page, /payment\.created/);

  // the export: every filtered payment, the API's values, formulas defused
  const csv = await browser.request('/dashboard/test/payments/export.csv?status=successful');
  assert.equal(csv.status, 200);
  assert.match(csv.headers.get('content-type')!, /^text\/csv/);
  assert.match(
    csv.headers.get('content-disposition')!,
    /^attachment; filename="tono-test-payments-\d{4}-\d{2}-\d{2}\.csv"$/,
  );
  const { parse } = await import('csv-parse/sync');
  const rows: string[][] = parse(csv.text);
  assert.deepEqual(rows[0], [
    'id',
    'date',
    'amount',
    'requested_amount',
    'status',
    'particulars',
    'code',
    'reference',
    'request',
    'merchant_identifier',
    'payer_email',
  ]);
  const api = (await kowhai.test.get('/v1/payments', { query: { status: 'successful' } })).body.payments;
  assert.deepEqual(
    rows.slice(1),
    api.map((p: any) => [
      p.id,
      localIsoWithOffset(Date.parse(p.created_at), 'Pacific/Auckland'),
      p.amount.value.replace(' NZD', ''),
      p.requested_amount.value.replace(' NZD', ''),
      p.status,
      p.pcr.particulars,
      p.pcr.code,
      p.pcr.reference,
      p.request_id,
      p.merchant_identifier?.startsWith('=') ? `'${p.merchant_identifier}` : (p.merchant_identifier ?? ''),
      p.cust_info?.email ?? '',
    ]),
  );
  assert.equal(rows.length - 1, 3);
  assert.ok(
    rows.some((row) => row[9] === `'=HYPERLINK("x")`),
    'a formula is written as text',
  );
});

test("the payments CSV's file name has the merchant's day, not UTC's", async (t) => {
  const world = await dashWorld(t, { workers: false });
  const [kowhai] = world.merchants;
  const browser = await logIn(world, kowhai);
  // 9 am on 2 January in New Zealand is still 1 January in UTC
  const day = await clockOnNzMorningOfUtcYesterday(kowhai);
  const csv = await browser.request('/dashboard/test/payments/export.csv');
  assert.equal(csv.status, 200);
  assert.equal(csv.headers.get('content-disposition'), `attachment; filename="tono-test-payments-${day}.csv"`);
});

test('with no live bank connected, live pages say so before the merchant tries, and the new-request page offers test mode instead', async (t) => {
  const world = await dashWorld(t, { workers: false, banksFile: null });
  const [kowhai] = world.merchants;
  const browser = await logIn(world, kowhai);
  for (const path of ['/dashboard/live', '/dashboard/live/requests']) {
    assert.match(
      textOf((await browser.request(path)).text),
      /No live bank is connected\. Live requests cannot be created until the operator of this service connects one \(the BANKS_FILE setting\)/,
    );
  }
  assert.ok(!textOf((await browser.request('/dashboard/test')).text).includes('No live bank'), 'test mode is not told');
  const page = await browser.request('/dashboard/live/requests/new');
  assert.ok(!page.text.includes('name="kind"'), 'no form to fill in vain');
  assert.match(page.text, /href="\/dashboard\/test\/requests\/new">create a test request</);
  const posted = await browser.request('/dashboard/live/requests/new', {
    form: {
      csrf: form(page.text),
      kind: 'fixed',
      message: 'Tea',
      amount: '4.00',
      bank_account_id: kowhai.bankAccountId,
    },
  });
  assert.equal(posted.status, 400);
  assert.match(textOf(posted.text), /has not connected a live bank/);
  assert.equal((await kowhai.live.get('/v1/requests')).body.requests.length, 0);
});
