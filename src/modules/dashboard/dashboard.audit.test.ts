import { test } from 'node:test';
import assert from 'node:assert/strict';
import { parse } from 'csv-parse/sync';
import { Browser } from '../../../test/payer.ts';
import { clockOnNzMorningOfUtcYesterday, dashWorld, logIn, objectsOf, textOf } from '../../../test/dashboard.ts';

// The audit log in the dashboard over HTTP, on SQLite and PostgreSQL: a member's change recorded
// with the member as actor, filters, pages, the CSV, each object's history, escaping, and another
// merchant's records never shown.

test('the audit log: member changes, filters, pages, CSV, object histories; escaped; own records only', async (t) => {
  const world = await dashWorld(t);
  const [kowhai, tui] = world.merchants;
  const objects = await objectsOf(world, kowhai);
  const theirs = (
    await tui.test.post('/v1/requests', { bank_account_id: tui.bankAccountId, message: 'Theirs', amount: '2.00 NZD' })
  ).body.request;
  const hostile = '<script>alert("x")</script>';
  const hook = await kowhai.test.patch(`/v1/webhooks/${objects.webhook.id}`, { description: hostile });
  assert.equal(hook.status, 200, hook.text);

  const browser = await logIn(world, kowhai);
  // a change made in the dashboard: a new API key, by the member
  const keys = await browser.request('/dashboard/test/api-keys');
  const made = await browser.request('/dashboard/test/api-keys', {
    form: { csrf: Browser.csrfOf(keys.text), name: 'Shop server', access: 'full' },
  });
  assert.equal(made.status, 303, made.text);
  const keyId = /api-keys\/(key_[0-9A-Z]{26})\/created/.exec(made.headers.get('location')!)![1]!;

  const log = await browser.request('/dashboard/test/audit');
  assert.equal(log.status, 200, log.text);
  const page = textOf(log.text);
  assert.match(page, /Audit log/);
  assert.match(log.text, /href="\/dashboard\/test\/audit"[^>]*>Audit log</, 'the section is in the navigation');
  assert.match(page, new RegExp(`api_key\\.create member: ${kowhai.email}.*${keyId}`));
  assert.match(page, new RegExp(`request\\.create api_key: ${objects.key}.*${objects.request.id}`));
  assert.match(page, /webhook_endpoint\.update/);
  assert.ok(!log.text.includes(hostile), 'what a caller wrote is escaped');
  assert.ok(log.text.includes('&lt;script&gt;'), log.text);
  assert.ok(!log.text.includes(theirs.id), "another merchant's records are not shown");
  assert.ok(!log.text.includes(tui.userId));

  // filters
  const byAction = textOf((await browser.request('/dashboard/test/audit?action=request.create')).text);
  assert.match(byAction, new RegExp(objects.request.id));
  assert.doesNotMatch(byAction, /webhook_endpoint\.update/);
  const byObject = textOf((await browser.request(`/dashboard/test/audit?object=${objects.webhook.id}`)).text);
  assert.match(byObject, /webhook_endpoint\.create/);
  assert.doesNotMatch(byObject, /request\.create api_key/);
  const byActor = textOf((await browser.request('/dashboard/test/audit?actor_kind=member')).text);
  assert.match(byActor, /api_key\.create/);
  assert.doesNotMatch(byActor, /request\.create api_key/);
  const future = textOf((await browser.request('/dashboard/test/audit?from=2999-01-01')).text);
  assert.match(future, /No records match/);
  // a date that is no day is said, and the log is shown without it
  const badDate = await browser.request('/dashboard/test/audit?from=2026-13-45');
  assert.equal(badDate.status, 200);
  assert.match(
    textOf(badDate.text),
    /“From” \(2026-13-45\) is not a date we understand, so the page is shown without it/,
  );
  assert.match(badDate.text, /id="from" name="from"[^>]*aria-invalid="true"/);
  assert.match(textOf(badDate.text), /api_key\.create/);
  // another merchant's object named in the filter: nothing
  const foreign = textOf((await browser.request(`/dashboard/test/audit?object=${theirs.id}`)).text);
  assert.match(foreign, /No records match/);
  // nonsense in the filters is dropped, not an error
  const junk = await browser.request('/dashboard/test/audit?action=%3Cb%3E&after=nope&actor_kind=robot');
  assert.equal(junk.status, 200);

  // pages of 50
  for (let i = 0; i < 50; i++)
    await kowhai.test.post('/v1/requests', {
      bank_account_id: kowhai.bankAccountId,
      message: `n${i}`,
      amount: '1.00 NZD',
    });
  const first = await browser.request('/dashboard/test/audit');
  const next = /href="([^"]+)" rel="next"/.exec(first.text)![1]!.replace(/&amp;/g, '&');
  const second = await browser.request(next);
  assert.equal(second.status, 200);
  assert.match(textOf(second.text), /merchant\.create/, 'the oldest record is on the second page');
  assert.doesNotMatch(textOf(first.text), /merchant\.create/);

  // CSV of the filtered log
  const csv = await browser.request('/dashboard/test/audit/export.csv?action=request.create');
  assert.equal(csv.status, 200);
  assert.match(csv.headers.get('content-type')!, /^text\/csv/);
  const rows = parse(csv.text, { columns: true }) as Array<Record<string, string>>;
  assert.equal(rows.length, 53, 'the three requests of objectsOf, and fifty');
  assert.ok(rows.every((row) => row.action === 'request.create' && row.actor_kind === 'api_key'));
  assert.ok(rows.some((row) => row.object_id === objects.request.id));
  assert.match(rows[0]!.hash!, /^[0-9a-f]{64}$/);
  const all = parse((await browser.request('/dashboard/test/audit/export.csv')).text, { columns: true }) as Array<
    Record<string, string>
  >;
  const hostileRow = all.find((row) => row.action === 'webhook_endpoint.update')!;
  assert.equal(JSON.parse(hostileRow.summary!).description.to, hostile, 'the CSV holds the value as written');
  assert.ok(!all.some((row) => row.object_id === theirs.id));

  // each object's page shows its history
  const histories: Array<[string, string]> = [
    [`requests/${objects.request.id}`, 'request.create'],
    [`payments/${objects.payment.id}`, ''],
    [`subscriptions/${objects.subscription.id}`, ''],
    [`recurring-consents/${objects.consent.id}`, ''],
    [`webhooks/${objects.webhook.id}`, 'webhook_endpoint.update'],
    [`customers/${objects.customer.id}`, ''],
  ];
  for (const [path, action] of histories) {
    const shown = await browser.request(`/dashboard/test/${path}`);
    assert.equal(shown.status, 200, path);
    assert.match(textOf(shown.text), /History/, path);
    if (action) assert.match(textOf(shown.text), new RegExp(action.replace('.', '\\.')), path);
  }
  // a change made on the page shows in its history at once
  const subscriptionPage = await browser.request(`/dashboard/test/subscriptions/${objects.subscription.id}`);
  const paused = await browser.request(`/dashboard/test/subscriptions/${objects.subscription.id}/pause`, {
    form: { csrf: Browser.csrfOf(subscriptionPage.text) },
  });
  assert.equal(paused.status, 303, paused.text);
  assert.match(
    textOf((await browser.request(`/dashboard/test/subscriptions/${objects.subscription.id}`)).text),
    new RegExp(`subscription\\.pause member: ${kowhai.email}`),
  );
  // another merchant's object is a 404, its history with it
  assert.equal((await browser.request(`/dashboard/test/requests/${theirs.id}`)).status, 404);
  // signed out: no log
  const stranger = new Browser(world.baseUrl);
  const away = await stranger.request('/dashboard/test/audit');
  assert.equal(away.status, 303);
});

test("the CSV's file name has the merchant's day, not UTC's", async (t) => {
  const world = await dashWorld(t, { workers: false });
  const [kowhai] = world.merchants;
  const browser = await logIn(world, kowhai);
  // 9 am on 2 January in New Zealand is still 1 January in UTC
  const day = await clockOnNzMorningOfUtcYesterday(kowhai);
  const csv = await browser.request('/dashboard/test/audit/export.csv');
  assert.equal(csv.status, 200);
  assert.equal(csv.headers.get('content-disposition'), `attachment; filename="tono-test-audit-${day}.csv"`);
});
