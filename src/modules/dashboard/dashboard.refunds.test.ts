import { test } from 'node:test';
import assert from 'node:assert/strict';
import { parse } from 'csv-parse/sync';
import { Browser } from '../../../test/payer.ts';
import { dashWorld, logIn, textOf, type DashMerchant } from '../../../test/dashboard.ts';
import { runPayerAccountJobs } from '../../../test/support/jobs.ts';
import { authoriseAtBank } from '../test-helpers/pay.bank-driver.ts';

// Refunds in the dashboard, over HTTP on SQLite and PostgreSQL: a refund made from the payment's
// page after a confirmation (one refund per confirmation), the service's refusals in words, the
// list with its filters and CSV, the refunds to pay by hand (the batch file, marked as paid with
// who and when, or cancelled), and the refund authority turned off and on again at Sandbox Bank.
// Refunds here are never carried out at the bank: the tests run no refund jobs.

const keyOf = (html: string) => /name="idempotency_key" value="([^"]+)"/.exec(html)![1];

/** A successful test payment of `amount` with reference INV-7, paid at the sandbox bank. */
async function paidPayment(merchant: DashMerchant, amount = '12.50 NZD') {
  const request = (
    await merchant.test.post('/v1/requests', {
      bank_account_id: merchant.bankAccountId,
      message: 'Flat whites',
      amount,
      reference: 'INV-7',
    })
  ).body.request;
  const paid = await merchant.test.post(`/v1/test-helpers/requests/${request.id}/pay`, {
    cust_info: { email: 'aroha@example.com' },
  });
  assert.equal(paid.status, 200, paid.text);
  assert.equal(paid.body.payment.status, 'successful');
  return paid.body.payment as { id: string; pcr: { particulars: string } };
}

const refundedOf = async (merchant: DashMerchant, paymentId: string) =>
  (await merchant.test.get(`/v1/payments/${paymentId}`)).body.payment.amount_refunded.value as string;

const refundsOf = async (merchant: DashMerchant, paymentId: string) =>
  (await merchant.test.get('/v1/refunds', { query: { payment_id: paymentId } })).body.refunds as any[];

const csrfOf = async (browser: Browser) => Browser.csrfOf((await browser.request('/dashboard/test/refunds')).text);

test('a payment is refunded from its page: review, confirm, one refund however often it is confirmed, the refusals in words', async (t) => {
  const world = await dashWorld(t, { workers: false });
  const [kowhai] = world.merchants;
  const payment = await paidPayment(kowhai);
  const browser = await logIn(world, kowhai);
  const base = `/dashboard/test/payments/${payment.id}`;

  const before = await browser.request(base);
  assert.match(before.text, new RegExp(`href="${base}/refund">Refund<`), 'the payment page offers Refund');
  assert.ok(!/Refunded \$/.test(textOf(before.text)), 'nothing refunded yet');
  for (const [name, value] of [
    ['x-content-type-options', /^nosniff$/],
    ['content-security-policy', /default-src 'none'.*form-action 'self'.*frame-ancestors 'none'/],
    ['cache-control', /^no-store$/],
    ['referrer-policy', /^no-referrer$/],
  ] as const)
    assert.match(String(before.headers.get(name)), value, name);

  const form = await browser.request(`${base}/refund`);
  assert.equal(form.status, 200);
  assert.match(form.text, /name="amount" inputmode="decimal" value="12\.50"/, 'the amount is what remains');
  assert.match(textOf(form.text), /Refunded so far \$0\.00 Remains to refund \$12\.50/);
  const csrf = Browser.csrfOf(form.text);
  const review = (amount: string, reason = '') => browser.request(`${base}/refund`, { form: { csrf, amount, reason } });

  // what is typed is checked before any confirmation
  const notMoney = await review('ten');
  assert.equal(notMoney.status, 400);
  assert.match(textOf(notMoney.text), /“Amount \(NZD\)” must be an amount of money more than \$0\.00/);
  // more than $0.00, but with part of a cent: said as such, not as an amount too small
  const partCents = await review('0.105');
  assert.equal(partCents.status, 400);
  assert.match(
    textOf(partCents.text),
    /“Amount \(NZD\)” can have at most two decimals \(whole cents\), and 0\.105 has more\. Enter dollars and cents, such as 5\.00\./,
  );
  assert.ok(!/more than \$0\.00/.test(textOf(partCents.text)), 'not told the amount is too small');
  const tooMuch = await review('13');
  assert.equal(tooMuch.status, 422);
  assert.match(textOf(tooMuch.text), /You can refund at most \$12\.50 of this payment\. Nothing was refunded\./);
  const longReason = await review('5', 'x'.repeat(61));
  assert.equal(longReason.status, 400);
  assert.match(textOf(longReason.text), /“Reason” can be at most 60 characters/);
  const noCsrf = await browser.request(`${base}/refund/confirm`, {
    form: { amount: '5', reason: '', idempotency_key: 'dashboard-00000000-0000-4000-8000-000000000000' },
  });
  assert.equal(noCsrf.status, 403);

  // the confirmation: the amount, the payer's statement, what remains after; it refunds nothing
  const confirmPage = await review('5', 'Cup <b>cracked</b>');
  assert.equal(confirmPage.status, 200);
  assert.ok(confirmPage.text.includes('Cup &lt;b&gt;cracked&lt;/b&gt;'), 'what was typed is escaped');
  assert.ok(!confirmPage.text.includes('<b>cracked'), 'never as markup');
  assert.match(
    textOf(confirmPage.text),
    new RegExp(
      `Refund \\$5\\.00 of the payment of \\$12\\.50\\? Amount \\$5\\.00 \\(test mode moves 1 cent at the bank\\) Reason Cup <b>cracked</b> On the payer’s statement Refund / ${payment.pcr.particulars} / INV-7 Remains to refund after it \\$7\\.50 How it is paid Tono pays it from your account`,
    ),
  );
  assert.equal(await refundedOf(kowhai, payment.id), '0.00 NZD', 'the review refunds nothing');

  // a double submit (two tabs, a reload) is one refund
  const confirm = { csrf, amount: '5', reason: 'Cup <b>cracked</b>', idempotency_key: keyOf(confirmPage.text) };
  const [first, second] = await Promise.all([
    browser.request(`${base}/refund/confirm`, { form: confirm }),
    browser.request(`${base}/refund/confirm`, { form: confirm }),
  ]);
  assert.equal(first.status, 303, first.text);
  assert.equal(second.status, 303, second.text);
  assert.equal(first.headers.get('location'), second.headers.get('location'));
  const refundId = /\/dashboard\/test\/refunds\/(refund_[0-9A-Z]{26})\?done=created$/.exec(
    first.headers.get('location')!,
  )![1];
  const made = await refundsOf(kowhai, payment.id);
  assert.deepEqual(
    made.map((r) => [r.id, r.amount.value, r.status, r.reason]),
    [[refundId, '5.00 NZD', 'pending', 'Cup <b>cracked</b>']],
  );
  assert.equal(await refundedOf(kowhai, payment.id), '5.00 NZD');

  const refundPage = textOf((await browser.request(first.headers.get('location')!)).text);
  assert.match(refundPage, /The refund of \$5\.00 is made/);
  assert.match(
    refundPage,
    new RegExp(
      `Refund of \\$5\\.00 pending Id ${refundId} Payment ${payment.id} Request request_[0-9A-Z]{26} Amount \\$5\\.00 \\(test mode moves 1 cent at the bank\\) Reason Cup <b>cracked</b> Created`,
    ),
  );
  assert.match(refundPage, new RegExp(`Particulars Code Reference Refund ${payment.pcr.particulars} INV-7`));

  const after = await browser.request(base);
  assert.match(textOf(after.text), /Refunds Refunded \$5\.00 of \$12\.50/);
  assert.ok(after.text.includes(`href="/dashboard/test/refunds/${refundId}"`), 'the refund is listed on the payment');
  assert.match(
    textOf(after.text),
    /Refunds Refunds of this payment, oldest first Refund Created Amount Status Reason refund_\S+ .* \$5\.00 pending Cup/,
  );

  // a confirmation shown before the API refunded more is refused by the service, in words
  const stale = await review('7.50');
  assert.equal((await kowhai.test.post('/v1/refunds', { payment_id: payment.id, amount: '5.00 NZD' })).status, 201);
  const refused = await browser.request(`${base}/refund/confirm`, {
    form: { csrf, amount: '7.50', reason: '', idempotency_key: keyOf(stale.text) },
  });
  assert.equal(refused.status, 422);
  assert.match(textOf(refused.text), /You can refund at most \$2\.50 of this payment\. Nothing was refunded\./);
  assert.equal(await refundedOf(kowhai, payment.id), '10.00 NZD');

  // the rest, then nothing remains: no Refund action, and the form says so
  const rest = await review('2.50');
  assert.equal(
    (
      await browser.request(`${base}/refund/confirm`, {
        form: { csrf, amount: '2.50', reason: '', idempotency_key: keyOf(rest.text) },
      })
    ).status,
    303,
  );
  const full = await browser.request(base);
  assert.ok(!full.text.includes(`href="${base}/refund"`), 'no Refund action once refunded in full');
  assert.match(textOf(full.text), /Refunded \$12\.50 of \$12\.50/);
  assert.match(
    textOf((await browser.request(`${base}/refund`)).text),
    /This payment has been refunded in full: nothing remains to refund\./,
  );
  const again = await browser.request(`${base}/refund/confirm`, {
    form: { csrf, amount: '1', reason: '', idempotency_key: 'dashboard-11111111-1111-4111-8111-111111111111' },
  });
  assert.equal(again.status, 422);
  assert.match(
    textOf(again.text),
    /This payment has been refunded in full: nothing remains to refund\. Nothing was refunded\./,
  );

  // a failed payment offers no refund, and the service refuses one in words
  const unpaid = (
    await kowhai.test.post('/v1/requests', {
      bank_account_id: kowhai.bankAccountId,
      message: 'Declined',
      amount: '3.00 NZD',
    })
  ).body.request;
  const failed = (await kowhai.test.post(`/v1/test-helpers/requests/${unpaid.id}/pay`, { outcome: 'decline' })).body
    .payment;
  assert.ok(!(await browser.request(`/dashboard/test/payments/${failed.id}`)).text.includes('/refund"'));
  const notPaid = await browser.request(`/dashboard/test/payments/${failed.id}/refund/confirm`, {
    form: { csrf, amount: '1', reason: '', idempotency_key: 'dashboard-22222222-2222-4222-8222-222222222222' },
  });
  assert.equal(notPaid.status, 409);
  assert.match(textOf(notPaid.text), /Only a successful payment can be refunded; this one is cancelled\./);
});

test("another merchant's payments and refunds, and the other mode's, are 404 on every refund page and post, and change nothing", async (t) => {
  const world = await dashWorld(t, { workers: false });
  const [kowhai, tui] = world.merchants;
  const payment = await paidPayment(kowhai);
  const refund = (await kowhai.test.post('/v1/refunds', { payment_id: payment.id, amount: '1.00 NZD' })).body.refund;
  const owner = await logIn(world, kowhai);
  const ownerCsrf = await csrfOf(owner);
  // The authority to turn off, and a refund to mark as paid or cancel (another merchant's is 404 whatever its status).
  const authorityPage = await owner.request('/dashboard/test/refunds/authority');
  const authorityId = /refunds\/authority\/(refundauth_[0-9A-Z]{26})\/revoke/.exec(authorityPage.text)![1];
  const waiting = (await kowhai.test.post('/v1/refunds', { payment_id: payment.id, amount: '1.00 NZD' })).body.refund;

  const stranger = await logIn(world, tui);
  const csrf = await csrfOf(stranger);
  const key = 'dashboard-33333333-3333-4333-8333-333333333333';
  for (const path of [`payments/${payment.id}`, `payments/${payment.id}/refund`, `refunds/${refund.id}`]) {
    assert.equal((await owner.request(`/dashboard/test/${path}`)).status, 200, `the owner sees ${path}`);
    const other = await stranger.request(`/dashboard/test/${path}`);
    assert.equal(other.status, 404, `another merchant: ${path}`);
    assert.match(textOf(other.text), /There is nothing with that address in test mode/);
    assert.equal((await owner.request(`/dashboard/live/${path}`)).status, 404, `the other mode: ${path}`);
  }
  // the confirmation pages of turning refunds off, and of marking a refund as paid or cancelling it
  for (const path of [
    `refunds/authority/${authorityId}/revoke`,
    `refunds/${waiting.id}/mark-paid`,
    `refunds/${waiting.id}/cancel`,
  ]) {
    assert.notEqual((await owner.request(`/dashboard/test/${path}`)).status, 404, `the owner's own: ${path}`);
    const other = await stranger.request(`/dashboard/test/${path}`);
    assert.equal(other.status, 404, `another merchant: ${path}`);
    assert.match(textOf(other.text), /There is nothing with that address in test mode/);
    assert.equal((await owner.request(`/dashboard/live/${path}`)).status, 404, `the other mode: ${path}`);
  }
  for (const [path, form] of [
    [`payments/${payment.id}/refund`, { amount: '1', reason: '' }],
    [`payments/${payment.id}/refund/confirm`, { amount: '1', reason: '', idempotency_key: key }],
    [`refunds/${waiting.id}/mark-paid`, {}],
    [`refunds/${waiting.id}/cancel`, {}],
    [`refunds/authority/${authorityId}/revoke`, {}],
  ] as const) {
    const other = await stranger.request(`/dashboard/test/${path}`, { form: { csrf, ...form } });
    assert.equal(other.status, 404, `post as another merchant: ${path}`);
    const otherMode = await owner.request(`/dashboard/live/${path}`, { form: { csrf: ownerCsrf, ...form } });
    assert.equal(otherMode.status, 404, `post in the other mode: ${path}`);
  }
  assert.equal(await refundedOf(kowhai, payment.id), '2.00 NZD', 'no refund was made');
  assert.deepEqual(
    (await refundsOf(kowhai, payment.id)).map((r) => r.status),
    ['pending', 'pending'],
  );
  assert.match(
    textOf((await owner.request('/dashboard/test/refunds/authority')).text),
    /In force Bank Sandbox Bank/,
    'the authority is still in force',
  );
  // the stranger's own lists show none of it
  for (const path of ['refunds', 'refunds/action', 'refunds/export.csv', 'refunds/action.csv']) {
    const own = await stranger.request(`/dashboard/test/${path}`);
    assert.equal(own.status, 200, path);
    assert.ok(!own.text.includes(refund.id) && !own.text.includes(waiting.id), path);
  }
});

test('the refunds list filters by status and dates, pages, and exports what it shows as CSV', async (t) => {
  const world = await dashWorld(t, { workers: false });
  const [kowhai] = world.merchants;
  const payment = await paidPayment(kowhai, '30.00 NZD');
  const ids: string[] = [];
  for (let i = 0; i < 26; i++) {
    const made = await kowhai.test.post('/v1/refunds', {
      payment_id: payment.id,
      amount: '0.10 NZD',
      ...(i === 0 && { reason: '=HYPERLINK("https://example.com")' }),
    });
    assert.equal(made.status, 201, made.text);
    ids.push(made.body.refund.id);
  }
  const browser = await logIn(world, kowhai);
  const home = await browser.request('/dashboard/test');
  assert.match(home.text, /<a href="\/dashboard\/test\/refunds">Refunds<\/a>/, 'Refunds is in the nav');

  const list = await browser.request('/dashboard/test/refunds');
  assert.equal(list.status, 200);
  const listed = (html: string) =>
    [...html.matchAll(/<td><a href="\/dashboard\/test\/refunds\/(refund_[0-9A-Z]{26})">/g)].map((m) => m[1]);
  assert.deepEqual(listed(list.text), ids.slice(1).reverse(), 'the newest 25, newest first');
  assert.match(textOf(list.text), /Requires action 0 refunds require action/);
  assert.match(list.text, /href="\/dashboard\/test\/refunds\/action"/);
  assert.match(list.text, /href="\/dashboard\/test\/refunds\/authority"/);
  const next = /<a href="([^"]+)" rel="next">Next page<\/a>/.exec(list.text)![1].replace(/&amp;/g, '&');
  assert.deepEqual(listed((await browser.request(next)).text), [ids[0]]);

  assert.deepEqual(listed((await browser.request('/dashboard/test/refunds?status=successful')).text), []);
  assert.equal(listed((await browser.request('/dashboard/test/refunds?status=pending')).text).length, 25);
  // two days after now on the merchant's test clock, whatever the time zone
  const clockNow = Date.parse((await kowhai.test.get('/v1/test-helpers/clock')).body.clock.now);
  const tomorrow = new Date(clockNow + 2 * 86_400_000).toISOString().slice(0, 10);
  assert.deepEqual(listed((await browser.request(`/dashboard/test/refunds?from=${tomorrow}`)).text), []);
  assert.equal(listed((await browser.request(`/dashboard/test/refunds?to=${tomorrow}`)).text).length, 25);
  const badDate = await browser.request('/dashboard/test/refunds?from=2026-02-30');
  assert.equal(badDate.status, 200);
  assert.match(textOf(badDate.text), /“Created from” \(2026-02-30\) is not a date we understand/);
  assert.match(badDate.text, /id="from" name="from"[^>]*aria-invalid="true"/);
  assert.equal(listed(badDate.text).length, 25, 'the list is shown without it');

  const csv = await browser.request('/dashboard/test/refunds/export.csv?status=pending');
  assert.equal(csv.status, 200);
  assert.match(String(csv.headers.get('content-type')), /^text\/csv/);
  assert.match(
    String(csv.headers.get('content-disposition')),
    /attachment; filename="tono-test-refunds-\d{4}-\d\d-\d\d\.csv"/,
  );
  assert.equal(csv.headers.get('x-content-type-options'), 'nosniff');
  const rows: string[][] = parse(csv.text);
  assert.deepEqual(rows[0], [
    'refund_id',
    'payment_id',
    'created',
    'amount',
    'status',
    'reason',
    'failure_reason',
    'action_reason',
    'completed',
  ]);
  assert.equal(rows.length, 27, 'every refund, not one page');
  assert.deepEqual(
    rows.slice(1).map((r) => r[0]),
    [...ids].reverse(),
  );
  const oldest = rows[26];
  assert.deepEqual(
    [oldest[1], oldest[3], oldest[4], oldest[5], oldest[6], oldest[7], oldest[8]],
    [payment.id, '0.10', 'pending', `'=HYPERLINK("https://example.com")`, '', '', ''],
    'a reason a spreadsheet would run is written as text',
  );
  assert.match(oldest[2], /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(\.\d{3})?[+-]\d\d:\d\d$/, 'local time with its offset');
  assert.equal(parse((await browser.request('/dashboard/test/refunds/export.csv?status=failed')).text).length, 1);
});

test('refunds that require action: turned off on the authority page, paid by hand from the list or its batch file (who and when kept), or cancelled', async (t) => {
  const world = await dashWorld(t, { workers: false });
  const [kowhai] = world.merchants;
  const known = await paidPayment(kowhai, '12.50 NZD');
  await runPayerAccountJobs(world.app.deps.worker);
  const unknown = await paidPayment(kowhai, '8.00 NZD');
  const browser = await logIn(world, kowhai);

  // test mode has its authority from the start; turning it off asks first, on a page of its own
  const authority = await browser.request('/dashboard/test/refunds/authority');
  assert.equal(authority.status, 200);
  const shown = textOf(authority.text);
  assert.match(shown, /In test mode, refunds are on from the start: Tono made a refund authority at Sandbox Bank/);
  assert.match(
    shown,
    /In force Bank Sandbox Bank Paid from Your Sandbox Bank account, made when the first refund is paid Most for one refund \$10,000\.00 Most each period \$100,000\.00 \(each month\) Used this month \$0\.00 Left this month \$100,000\.00 \(the period starts again .+\) Since /,
  );
  const off =
    /<a class="button danger" href="(\/dashboard\/test\/refunds\/authority\/refundauth_[0-9A-Z]{26}\/revoke)">Turn off refunds<\/a>/.exec(
      authority.text,
    )![1];
  assert.ok(!authority.text.includes(`action="${off}"`), 'no form on the page turns refunds off');
  const confirmOff = await browser.request(off);
  assert.equal(confirmOff.status, 200);
  assert.match(
    textOf(confirmOff.text),
    /Turn off refunds from your account at Sandbox Bank\? Tono stops paying refunds for you and the refund authority is revoked at your bank\. .* Yes, turn off refunds Go back/,
  );
  assert.ok(confirmOff.text.includes(`<form method="post" action="${off}">`), 'only its form acts');
  assert.ok(confirmOff.text.includes('href="/dashboard/test/refunds/authority">Go back</a>'));
  assert.match(String(confirmOff.headers.get('content-security-policy')), /default-src 'none'.*form-action 'self';/);
  assert.equal(confirmOff.headers.get('cache-control'), 'no-store');
  assert.match(
    textOf((await browser.request('/dashboard/test/refunds/authority')).text),
    /In force Bank Sandbox Bank/,
    'asking changes nothing',
  );
  assert.equal((await browser.request(off, { form: { csrf: 'wrong' } })).status, 403);
  // sent twice (a double click): turned off once, and both lead to the page saying so
  for (let i = 0; i < 2; i++) {
    const turnedOff = await browser.request(off, { form: { csrf: Browser.csrfOf(confirmOff.text) } });
    assert.equal(turnedOff.status, 303);
    assert.equal(turnedOff.headers.get('location'), '/dashboard/test/refunds/authority?done=off');
  }
  const offAgain = await browser.request(off);
  assert.equal(offAgain.status, 409);
  assert.match(textOf(offAgain.text), /Refunds are off already This refund authority is not in force/);
  const offPage = textOf((await browser.request('/dashboard/test/refunds/authority?done=off')).text);
  assert.match(offPage, /Refunds are turned off: new refunds are yours to pay by hand\./);
  assert.match(offPage, /Refunds are off: none is in force\./);
  assert.match(offPage, /Past and waiting .* revoked by you Sandbox Bank/);

  // a refund made from the payment's page now requires action
  const csrf = Browser.csrfOf(authority.text);
  const refundFromPage = async (paymentId: string, amount: string) => {
    const review = await browser.request(`/dashboard/test/payments/${paymentId}/refund`, {
      form: { csrf, amount, reason: 'Wrong size' },
    });
    assert.match(textOf(review.text), /Refunds are turned off, so you pay it by hand/);
    const done = await browser.request(`/dashboard/test/payments/${paymentId}/refund/confirm`, {
      form: { csrf, amount, reason: 'Wrong size', idempotency_key: keyOf(review.text) },
    });
    assert.equal(done.status, 303, done.text);
    return { id: /(refund_[0-9A-Z]{26})/.exec(done.headers.get('location')!)![1], page: done.headers.get('location')! };
  };
  const toPay = await refundFromPage(known.id, '4.00');
  const toCancel = await refundFromPage(unknown.id, '8.00');
  const created = textOf((await browser.request(toPay.page)).text);
  assert.match(
    created,
    /The refund of \$4\.00 is recorded\. Tono cannot pay it for you: pay it by hand and mark it as paid/,
  );
  assert.match(created, /Refund of \$4\.00 requires action/);
  assert.match(created, /Why it needs you Refunds are not turned on: no refund authority at your bank/);
  for (const id of [toPay.id, toCancel.id]) {
    const refund = (await kowhai.test.get(`/v1/refunds/${id}`)).body.refund;
    assert.deepEqual([refund.status, refund.action_reason], ['requires_action', 'no_refund_authority']);
  }

  assert.match(
    textOf((await browser.request('/dashboard/test/refunds')).text),
    /Requires action 2 refunds require action/,
  );
  const action = await browser.request('/dashboard/test/refunds/action');
  assert.equal(action.status, 200);
  const actionText = textOf(action.text);
  assert.match(
    actionText,
    new RegExp(
      `${toPay.id} of ${known.id} , .+?\\. Refunds are not turned on: no refund authority at your bank\\. \\$4\\.00 \\d\\d-\\d{4}-\\d{7}-\\d\\d\\S* Sandbox Payer Refund ${known.pcr.particulars} INV-7 Mark as paid`,
    ),
    'the payer’s account and name, and the statement line to use',
  );
  assert.match(
    actionText,
    new RegExp(
      `${toCancel.id} of ${unknown.id} , .+?\\. \\$8\\.00 We do not know the payer’s account: contact the payer Refund ${unknown.pcr.particulars} INV-7`,
    ),
  );
  assert.match(actionText, /1 of 2 refunds, those whose payer’s account is known/);

  const batch = await browser.request('/dashboard/test/refunds/action.csv');
  assert.equal(batch.status, 200);
  assert.match(String(batch.headers.get('content-disposition')), /filename="tono-test-refunds-to-pay-/);
  const rows: string[][] = parse(batch.text);
  assert.deepEqual(rows[0], ['Payee account', 'Payee name', 'Amount', 'Particulars', 'Code', 'Reference', 'Refund id']);
  assert.equal(rows.length, 2, 'only the refund whose payer’s account is known');
  assert.match(rows[1][0], /^\d\d-\d{4}-\d{7}-\d\d/);
  assert.deepEqual(rows[1].slice(1), ['Sandbox Payer', '4.00', 'Refund', known.pcr.particulars, 'INV-7', toPay.id]);
  assert.ok(action.text.includes(rows[1][0]), 'the same account as the page shows');

  // marked as paid from the list, after confirming: the page says where the money should have gone
  const markAt = `/dashboard/test/refunds/${toPay.id}/mark-paid`;
  assert.ok(
    action.text.includes(
      `<a class="button small primary" href="${markAt}">Mark as paid<span class="visually-hidden"> ${toPay.id}</span></a>`,
    ),
  );
  assert.ok(!action.text.includes(`action="${markAt}"`), 'no form on the list marks one as paid');
  const refundPage = await browser.request(`/dashboard/test/refunds/${toPay.id}`);
  assert.ok(refundPage.text.includes(`<a class="button primary" href="${markAt}?back=refund">Mark as paid</a>`));
  assert.ok(!refundPage.text.includes(`action="${markAt}"`), 'nor on the refund’s page');
  const confirmPaid = await browser.request(markAt);
  assert.equal(confirmPaid.status, 200);
  assert.match(
    textOf(confirmPaid.text),
    new RegExp(
      `Mark the refund ${toPay.id} of \\$4\\.00 as paid\\? Mark it only once you have paid \\$4\\.00 from your bank to ${rows[1][0]} \\(Sandbox Payer\\), with particulars “Refund”, code “${known.pcr.particulars}” and reference “INV-7”\\. Tono then tells the payer, by email when it has theirs, that the refund is on its way, and records you as who paid it\\. This cannot be undone\\. Yes, I have paid it Go back`,
    ),
  );
  assert.ok(confirmPaid.text.includes(`<form method="post" action="${markAt}">`), 'only its form acts');
  assert.ok(confirmPaid.text.includes('href="/dashboard/test/refunds/action">Go back</a>'), 'back to the list');
  assert.equal(
    (await kowhai.test.get(`/v1/refunds/${toPay.id}`)).body.refund.status,
    'requires_action',
    'asking changes nothing',
  );
  assert.equal((await browser.request(markAt, { form: { csrf: 'wrong' } })).status, 403);
  // marked as paid: who and when
  const paid = await browser.request(markAt, { form: { csrf: Browser.csrfOf(confirmPaid.text) } });
  assert.equal(paid.status, 303);
  assert.equal(paid.headers.get('location'), `/dashboard/test/refunds/action?done=paid&refund=${toPay.id}`);
  assert.match(
    textOf((await browser.request(paid.headers.get('location')!)).text),
    new RegExp(`Refund ${toPay.id} is marked as paid\\.`),
  );
  const paidRefund = (await kowhai.test.get(`/v1/refunds/${toPay.id}`)).body.refund;
  assert.equal(paidRefund.status, 'successful');
  assert.ok(paidRefund.completed_at);
  const paidPage = textOf((await browser.request(`/dashboard/test/refunds/${toPay.id}`)).text);
  assert.match(paidPage, /Refund of \$4\.00 successful/);
  assert.match(
    paidPage,
    new RegExp(
      `Paid Paid by hand by ${kowhai.email.replace(/[.+]/g, '\\$&')} on \\d{1,2} \\w{3} \\d{4}, \\d{1,2}:\\d\\d`,
    ),
  );
  assert.equal(await refundedOf(kowhai, known.id), '4.00 NZD');
  const twice = await browser.request(markAt, { form: { csrf } });
  assert.equal(twice.status, 409);
  assert.match(textOf(twice.text), /only a refund that requires action can be marked as paid\. Nothing was changed\./);
  assert.equal((await browser.request(markAt)).status, 409, 'nothing left to confirm');

  // a refund whose payer's account Tono does not know: the confirmation cannot name the account
  assert.match(
    textOf((await browser.request(`/dashboard/test/refunds/${toCancel.id}/mark-paid`)).text),
    /Mark it only once you have paid \$8\.00 from your bank to the payer, with particulars “Refund”/,
  );

  // cancelled from its own page, after confirming: its amount is refundable again
  const cancelAt = `/dashboard/test/refunds/${toCancel.id}/cancel`;
  const cancelPage = await browser.request(toCancel.page);
  assert.ok(cancelPage.text.includes(`<a class="button danger" href="${cancelAt}?back=refund">Cancel the refund</a>`));
  assert.ok(!cancelPage.text.includes(`action="${cancelAt}"`), 'no form on the refund’s page cancels it');
  const listed = await browser.request('/dashboard/test/refunds/action');
  assert.ok(
    listed.text.includes(
      `<a class="button small" href="${cancelAt}">Cancel<span class="visually-hidden"> ${toCancel.id}</span></a>`,
    ),
  );
  assert.ok(!listed.text.includes(`action="${cancelAt}"`), 'no form on the list cancels one');
  const fromList = await browser.request(cancelAt);
  assert.equal(fromList.status, 200);
  assert.ok(fromList.text.includes('href="/dashboard/test/refunds/action">Go back</a>'), 'back to the list');
  assert.ok(!fromList.text.includes('name="back"'), 'and its post leads back to the list');
  const confirmCancel = await browser.request(`${cancelAt}?back=refund`);
  assert.equal(confirmCancel.status, 200);
  assert.match(
    textOf(confirmCancel.text),
    new RegExp(
      `Cancel the refund ${toCancel.id} of \\$8\\.00\\? Cancel it only if you will not pay it by hand: it is marked as failed, and its amount can be refunded again\\. This cannot be undone\\. Yes, cancel the refund Go back`,
    ),
  );
  assert.ok(confirmCancel.text.includes(`<form method="post" action="${cancelAt}">`), 'only its form acts');
  assert.ok(confirmCancel.text.includes('<input type="hidden" name="back" value="refund">'));
  assert.ok(confirmCancel.text.includes(`href="/dashboard/test/refunds/${toCancel.id}">Go back</a>`));
  assert.equal(
    (await kowhai.test.get(`/v1/refunds/${toCancel.id}`)).body.refund.status,
    'requires_action',
    'asking changes nothing',
  );
  assert.equal(await refundedOf(kowhai, unknown.id), '8.00 NZD');
  assert.equal((await browser.request(cancelAt, { form: { csrf: 'wrong', back: 'refund' } })).status, 403);
  const cancelled = await browser.request(cancelAt, {
    form: { csrf: Browser.csrfOf(confirmCancel.text), back: 'refund' },
  });
  assert.equal(cancelled.status, 303);
  assert.equal(cancelled.headers.get('location'), `/dashboard/test/refunds/${toCancel.id}?done=cancelled`);
  // sent again (a double click): nothing more changes, and the page says why
  const cancelledTwice = await browser.request(cancelAt, { form: { csrf, back: 'refund' } });
  assert.equal(cancelledTwice.status, 409);
  assert.match(
    textOf(cancelledTwice.text),
    /only a refund that requires action can be cancelled\. Nothing was changed\./,
  );
  assert.equal((await browser.request(`${cancelAt}?back=refund`)).status, 409, 'nothing left to confirm');
  const cancelledPage = textOf((await browser.request(cancelled.headers.get('location')!)).text);
  assert.match(cancelledPage, /The refund is cancelled: its amount can be refunded again\./);
  assert.match(
    cancelledPage,
    /Refund of \$8\.00 failed .* Why it failed You cancelled it instead of paying it by hand/,
  );
  assert.equal(await refundedOf(kowhai, unknown.id), '0.00 NZD');
  assert.match(
    (await browser.request(`/dashboard/test/payments/${unknown.id}`)).text,
    new RegExp(`href="/dashboard/test/payments/${unknown.id}/refund"`),
    'the payment can be refunded again',
  );

  assert.match(textOf((await browser.request('/dashboard/test/refunds/action')).text), /No refund needs you now\./);
  assert.equal(parse((await browser.request('/dashboard/test/refunds/action.csv')).text).length, 1);
  assert.match(
    textOf((await browser.request('/dashboard/test/refunds')).text),
    /Requires action 0 refunds require action/,
  );
});

test('refunds are turned on again in test mode at Sandbox Bank, signed in as the username shown; its limits then hold; a decline changes nothing', async (t) => {
  const world = await dashWorld(t, { workers: false });
  const [kowhai] = world.merchants;
  const payment = await paidPayment(kowhai, '250.00 NZD');
  const browser = await logIn(world, kowhai);
  const page = await browser.request('/dashboard/test/refunds/authority');
  const csrf = Browser.csrfOf(page.text);
  const off = /href="(\/dashboard\/test\/refunds\/authority\/refundauth_[0-9A-Z]{26}\/revoke)"/.exec(page.text)![1];
  assert.equal((await browser.request(off)).status, 200, 'asked first');
  assert.equal((await browser.request(off, { form: { csrf } })).status, 303);

  const form = await browser.request('/dashboard/test/refunds/authority');
  const username = /At Sandbox Bank, sign in as <strong>([^<]+)<\/strong> \(any password\)/.exec(form.text)![1];
  assert.match(username, /^tono-user_/);
  assert.match(form.text, /<option value="sandbox" selected>Sandbox Bank<\/option>/);
  assert.ok(form.text.includes(`<option value="${kowhai.bankAccountId}" selected>`));
  const turnOn = (fields: Record<string, string>) =>
    browser.request('/dashboard/test/refunds/authority', {
      form: {
        csrf,
        bank_id: 'sandbox',
        bank_account_id: kowhai.bankAccountId,
        period: 'weekly',
        max_per_refund: '100',
        max_per_period: '150',
        ...fields,
      },
    });

  for (const [fields, words] of [
    [{ max_per_refund: 'lots' }, /“Most for one refund” must be an amount of money more than \$0\.00/],
    [{ max_per_period: '50' }, /“Most each period” must be at least “Most for one refund”/],
    [{ bank_id: 'nowhere' }, /Choose one of the banks listed\./],
    [{ period: 'yearly' }, /Choose a period for the limit\./],
  ] as const) {
    const refused = await turnOn(fields);
    assert.equal(refused.status, 400, JSON.stringify(fields));
    assert.match(textOf(refused.text), words);
    assert.match(textOf(refused.text), /Refunds stay as they were\./);
  }
  const notMine = await turnOn({ bank_account_id: world.merchants[1].bankAccountId });
  assert.equal(notMine.status, 404, 'another merchant’s bank account');

  // declined at the bank: kept as declined, nothing in force
  const declined = await turnOn({});
  assert.equal(declined.status, 303, declined.text);
  const bankUrl = declined.headers.get('location')!;
  assert.ok(bankUrl.startsWith(`${world.baseUrl}/sandbox-bank/`), bankUrl);
  const declinedBack = await authoriseAtBank(bankUrl, 'decline', `${world.baseUrl}/pay/return`, { username });
  const declinedLanding = await browser.request(declinedBack.pathname + declinedBack.search);
  assert.equal(declinedLanding.headers.get('location'), '/dashboard/test/refunds/authority?outcome=declined');
  const afterDecline = textOf((await browser.request(declinedLanding.headers.get('location')!)).text);
  assert.match(afterDecline, /Your bank did not approve the refund authority: nothing changed\./);
  assert.match(afterDecline, /Refunds are off: none is in force\./);
  assert.match(afterDecline, /declined Sandbox Bank/);

  // approved at the bank as the username shown: in force with the limits set here
  const approved = await turnOn({});
  const back = await authoriseAtBank(approved.headers.get('location')!, 'approve', `${world.baseUrl}/pay/return`, {
    username,
  });
  const landing = await browser.request(back.pathname + back.search);
  assert.equal(landing.status, 303, landing.text);
  assert.equal(landing.headers.get('location'), '/dashboard/test/refunds/authority?outcome=approved');
  const on = await browser.request(landing.headers.get('location')!);
  assert.match(
    String(on.headers.get('content-security-policy')),
    /form-action 'self' http:\/\/127\.0\.0\.1:\d+;/,
    'the form may be answered by the bank',
  );
  const onText = textOf(on.text);
  assert.match(onText, /Your bank approved the refund authority: refunds are turned on\./);
  assert.match(
    onText,
    /In force Bank Sandbox Bank Paid from \d\d-\d{4}-\d{7}-\d\d\S* \(.+?\) Most for one refund \$100\.00 Most each period \$150\.00 \(each week\) Used this week \$0\.00 Left this week \$150\.00 \(the period starts again /,
  );

  // the limits hold when a refund is reviewed, and when one is confirmed
  const review = (amount: string) =>
    browser.request(`/dashboard/test/payments/${payment.id}/refund`, { form: { csrf, amount, reason: '' } });
  const overOne = await review('120');
  assert.equal(overOne.status, 422);
  assert.match(textOf(overOne.text), /Your refund authority allows at most \$100\.00 for one refund\./);
  const ninety = await review('90');
  assert.match(
    textOf(ninety.text),
    /How it is paid Tono pays it from your account at your bank, under your refund authority/,
  );
  const staleSeventy = await review('70');
  assert.equal(
    (
      await browser.request(`/dashboard/test/payments/${payment.id}/refund/confirm`, {
        form: { csrf, amount: '90', reason: '', idempotency_key: keyOf(ninety.text) },
      })
    ).status,
    303,
  );
  const overPeriod = await browser.request(`/dashboard/test/payments/${payment.id}/refund/confirm`, {
    form: { csrf, amount: '70', reason: '', idempotency_key: keyOf(staleSeventy.text) },
  });
  assert.equal(overPeriod.status, 422);
  assert.match(
    textOf(overPeriod.text),
    /Your refund authority has \$60\.00 left this week, of \$150\.00\. .* Nothing was refunded\./,
  );
  assert.match(
    textOf((await browser.request('/dashboard/test/refunds/authority')).text),
    /Used this week \$90\.00 Left this week \$60\.00/,
  );
});

test('the refunds files are named by the day on the merchant’s calendar (the service time zone), not by the UTC date', async (t) => {
  const world = await dashWorld(t, { workers: false });
  const [kowhai] = world.merchants;
  // 21:00 UTC on 1 December next year: the 2nd already in New Zealand, the default service time zone
  const at = `${new Date().getUTCFullYear() + 1}-12-01T21:00:00.000Z`;
  const moved = await kowhai.test.post('/v1/test-helpers/clock/advance', { to: at });
  assert.equal(moved.status, 200, moved.text);
  const zone = world.app.deps.config.serviceTimeZone;
  const day = new Intl.DateTimeFormat('en-CA', { timeZone: zone }).format(new Date(at));
  assert.notEqual(day, at.slice(0, 10), `${zone} is on another day than UTC then`);
  const browser = await logIn(world, kowhai);
  for (const [path, name] of [
    ['refunds/export.csv', 'refunds'],
    ['refunds/action.csv', 'refunds-to-pay'],
  ]) {
    const file = await browser.request(`/dashboard/test/${path}`);
    assert.equal(file.status, 200, path);
    assert.equal(file.headers.get('content-disposition'), `attachment; filename="tono-test-${name}-${day}.csv"`);
  }
});
