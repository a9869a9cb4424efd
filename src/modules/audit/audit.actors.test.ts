import { test } from 'node:test';
import assert from 'node:assert/strict';
import { Browser, payerWorld, signIn } from '../../../test/payer.ts';
import { chainCommitted } from './audit.service.ts';

// Who the audit trail names where no API key acted: the payer on the payer dashboard (by email,
// with the browser's address and the request id), and the service's own charge job.

test('a payer cancelling and revoking in the payer dashboard is recorded as the payer; a subscription charge as the service', async (t) => {
  const world = await payerWorld(t);
  const [{ merchant }] = world.merchants;
  const db = world.app.deps.db;
  const browser = await signIn(world, 'pat@example.com');
  const subscription = world.subscriptions['pat@example.com']![0]!;
  const consent = world.consents['pat@example.com']![0]!;

  const confirm = await browser.request(`/customer/subscriptions/${subscription}/cancel`);
  const cancelled = await browser.request(`/customer/subscriptions/${subscription}/cancel`, {
    form: { csrf: Browser.csrfOf(confirm.text) },
  });
  assert.equal(cancelled.status, 303);
  const revokeConfirm = await browser.request(`/customer/recurring-consents/${consent.id}/revoke`);
  const revoked = await browser.request(`/customer/recurring-consents/${consent.id}/revoke`, {
    form: { csrf: Browser.csrfOf(revokeConfirm.text) },
  });
  assert.equal(revoked.status, 303);

  await chainCommitted(db);
  const byPayer = await db
    .selectFrom('audit_events')
    .selectAll()
    .where('actor_kind', '=', 'payer')
    .orderBy('seq')
    .execute();
  assert.deepEqual(
    byPayer.map((row) => [row.user_id, row.action, row.object_id, row.actor_id, row.mode]),
    [
      [merchant.userId, 'subscription.cancel', subscription, 'pat@example.com', 'test'],
      [merchant.userId, 'consent.revoke', consent.id, 'pat@example.com', 'test'],
    ],
  );
  for (const row of byPayer) {
    assert.equal(row.ip, '127.0.0.1');
    assert.ok(row.request_id);
    assert.deepEqual(JSON.parse(row.summary).status.to, row.action === 'consent.revoke' ? 'revoked' : 'cancelled');
  }

  // the first charges ran in the worker, as the service
  const until = Date.now() + 15_000;
  let charges: Array<{ actor_id: string; summary: string }> = [];
  while (Date.now() < until) {
    await chainCommitted(db);
    charges = await db
      .selectFrom('audit_events')
      .select(['actor_id', 'summary'])
      .where('user_id', '=', merchant.userId)
      .where('action', '=', 'subscription.charge')
      .where('actor_kind', '=', 'service')
      .execute();
    if (charges.length > 0) break;
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
  assert.ok(charges.length > 0, 'a subscription charge is recorded');
  assert.equal(charges[0]!.actor_id, 'subscription.charge');
  assert.match(JSON.parse(charges[0]!.summary).payment_id, /^payment_/);
});
