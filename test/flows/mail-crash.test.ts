// Email is never lost and never sent twice across a crash: the real service is spawned, the
// change that queues a message commits, the process is killed with SIGKILL before any worker could
// send it, and the restarted service sends it exactly once.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { smtpReceiver } from '../smtp.ts';
import { merchantByCli, processStore, runCli, startService } from '../process.ts';

test('a message queued before SIGKILL is sent once after the restart', async (t) => {
  const smtp = await smtpReceiver(t);
  const store = await processStore(t, { migrated: true });
  assert.equal((await runCli(store, ['migrate'])).status, 0);
  const merchant = await merchantByCli(store, 'Crash Cafe', 'owner@crash.example');
  const env = { DEMO_MERCHANT: 'false', SMTP_URL: smtp.url };

  // No workers: the message is committed with its job, and nothing sends it.
  const first = await startService(t, store, { ...env, WORKERS: 'false' });
  const headers = { authorization: `Bearer ${merchant.test_key}`, 'content-type': 'application/json' };
  const created = await fetch(`${first.baseUrl}/v1/requests`, {
    method: 'POST',
    headers,
    body: JSON.stringify({
      bank_account_id: merchant.bank_account_id,
      message: 'Weekly beans',
      subscription_options: { amount: '4.00 NZD', period: 'weekly', start_date: '2031-01-01' },
      // Test mode emails only the merchant's own people (docs/email.md, Transport).
      cust_info: { email: 'owner@crash.example' },
    }),
  }).then((r) => r.json() as Promise<any>);
  const paid = await fetch(`${first.baseUrl}/v1/test-helpers/requests/${created.request.id}/pay`, {
    method: 'POST',
    headers,
    body: '{}',
  });
  assert.equal(paid.status, 200, await paid.text());
  first.child.kill('SIGKILL');
  await first.exited;
  assert.equal(smtp.messages.length, 0);

  await startService(t, store, env);
  const mail = await smtp.waitFor((m) => /Your subscription “Weekly beans” with Crash Cafe is set up/.test(m.subject));
  assert.equal(mail.to, 'owner@crash.example');
  assert.match(mail.text, /First charge: Wednesday 1 January 2031 at 10:00am/);
  await new Promise((resolve) => setTimeout(resolve, 1_500));
  assert.equal(smtp.messages.filter((m) => m.messageId === mail.messageId).length, 1, 'sent once');
  assert.equal(smtp.messages.length, 1);
});
