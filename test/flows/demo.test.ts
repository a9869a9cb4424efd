import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { processStore, startService, stop } from '../process.ts';

// First start on an empty database (SQLite, or PostgreSQL when TEST_ENGINE=postgres).

test('first start prints the demo merchant once, and its curl example works', async (t) => {
  const store = await processStore(t);
  const first = await startService(t, store);
  const out = first.stdout();
  const demo = {
    password: /login\s+email demo@tono\.example\s+password (\S+)/.exec(out)?.[1],
    live: /live key\s+(sk_live_\S+)/.exec(out)?.[1],
    test: /test key\s+(sk_test_\S+)/.exec(out)?.[1],
    bankAccount: /bank account\s+(bankaccount_\S+)/.exec(out)?.[1],
  };
  assert.ok(demo.password && demo.live && demo.test && demo.bankAccount, out);

  // the printed example, run as printed
  const curl = out.slice(out.indexOf('curl -s'), out.indexOf('\n\n', out.indexOf('curl -s'))).trim();
  assert.match(curl, /^curl -s .*\/v1\/requests/);
  const ran = spawnSync('sh', ['-c', curl], { encoding: 'utf8', timeout: 30_000 });
  assert.equal(ran.status, 0, ran.stderr);
  const request = JSON.parse(ran.stdout).request;
  assert.equal(request.status, 'active');
  assert.equal(request.is_test_mode, true);
  assert.equal(request.bank_account_id, demo.bankAccount);
  assert.equal(request.url, `${first.baseUrl}/pay/${request.id}`);

  for (const [key, mode] of [[demo.live, false], [demo.test, true]] as const) {
    const listed = await fetch(`${first.baseUrl}/v1/requests`, { headers: { authorization: `Bearer ${key}` } });
    const body = (await listed.json()) as { requests: Array<{ id: string }> };
    assert.equal(listed.status, 200);
    assert.deepEqual(body.requests.map((r) => r.id), mode ? [request.id] : []);
  }
  assert.equal(await stop(first), 0);

  const second = await startService(t, store);
  assert.doesNotMatch(second.stdout(), /Demo merchant|sk_live_|sk_test_/);
  assert.match(second.stdout(), /Tono is running at/);
  assert.equal(await stop(second), 0);
});

test('DEMO_MERCHANT=false prints no demo merchant', async (t) => {
  const store = await processStore(t);
  const service = await startService(t, store, { DEMO_MERCHANT: 'false' });
  assert.doesNotMatch(service.stdout(), /Demo merchant|sk_/);
  assert.equal(await stop(service), 0);
});
