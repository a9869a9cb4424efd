import { test } from 'node:test';
import assert from 'node:assert/strict';
import { dashWorld } from '../../../test/dashboard.ts';

// The hosted page's form posted twice, on SQLite and PostgreSQL: each rendering carries a nonce,
// and a repeat of it (a double click on Pay, a reload of the post) starts no second payment and
// leads to the first payment's bank page.

const nonceOf = (html: string) => /name="nonce" value="([A-Za-z0-9_-]+)"/.exec(html)?.[1] ?? null;

test('Pay posted twice at once, and again: one payment, every post leads to its bank page', async (t) => {
  const world = await dashWorld(t, { workers: false });
  const [kowhai] = world.merchants;
  const api = kowhai.test;
  const request = (
    await api.post('/v1/requests', { bank_account_id: kowhai.bankAccountId, message: 'Cup', amount: '4.00 NZD' })
  ).body.request;
  const page = await fetch(`${world.baseUrl}/pay/${request.id}`);
  const nonce = nonceOf(await page.text());
  assert.ok(nonce, 'the form carries a nonce');
  const other = nonceOf(await (await fetch(`${world.baseUrl}/pay/${request.id}`)).text());
  assert.ok(other && other !== nonce, 'one per rendering');

  const post = (accept?: string) =>
    fetch(`${world.baseUrl}/pay/${request.id}`, {
      method: 'POST',
      redirect: 'manual',
      body: new URLSearchParams({ bank: 'sandbox', nonce }).toString(),
      headers: { 'content-type': 'application/x-www-form-urlencoded', ...(accept ? { accept } : {}) },
    });
  const twice = await Promise.all([post(), post()]);
  const posts = [...twice, await post()];
  assert.deepEqual(
    posts.map((p) => p.status),
    [303, 303, 303],
  );
  const location = posts[0]!.headers.get('location');
  assert.ok(location);
  assert.deepEqual(
    posts.map((p) => p.headers.get('location')),
    [location, location, location],
  );
  const payments = (await api.get(`/v1/requests/${request.id}/payments`)).body.payments;
  assert.equal(payments.length, 1, 'one payment');

  // The widget posts for JSON: the same answer.
  const asJson = (await (await post('application/json')).json()) as { redirect_url: string; payment_id: string };
  assert.deepEqual(asJson, { redirect_url: location, payment_id: payments[0].id });
  assert.equal((await api.get(`/v1/requests/${request.id}/payments`)).body.payments.length, 1);
});
