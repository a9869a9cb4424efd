import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import fs from 'node:fs';
import net from 'node:net';
import path from 'node:path';
import { childEnv, processStore, runMain, startService, stop } from '../process.ts';

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

  for (const [key, mode] of [
    [demo.live, false],
    [demo.test, true],
  ] as const) {
    const listed = await fetch(`${first.baseUrl}/v1/requests`, { headers: { authorization: `Bearer ${key}` } });
    const body = (await listed.json()) as { requests: Array<{ id: string }> };
    assert.equal(listed.status, 200);
    assert.deepEqual(
      body.requests.map((r) => r.id),
      mode ? [request.id] : [],
    );
  }
  assert.equal(await stop(first), 0, first.stderr());

  const second = await startService(t, store);
  assert.doesNotMatch(second.stdout(), /sk_live_|sk_test_/);
  // and says how to get new keys, with a command that works as printed
  const again =
    /New keys: (npm run --silent cli -- keys create --merchant demo@tono\.example --mode test --name "Shop server")\n/.exec(
      second.stdout(),
    );
  assert.ok(again, second.stdout());
  const keys = spawnSync('sh', ['-c', `${again[1]} --json`], {
    encoding: 'utf8',
    timeout: 60_000,
    env: childEnv(store.env),
  });
  assert.equal(keys.status, 0, keys.stderr);
  assert.match(JSON.parse(keys.stdout).key, /^sk_test_/);
  assert.match(second.stdout(), /Tono is running at/);
  // on loopback, as the README's start is: the outbound policy in force, in one line
  assert.match(
    second.stdout(),
    /\nWebhooks and merchant images reach: live public addresses only; test public addresses and this machine\n/,
  );
  assert.equal(await stop(second), 0, second.stderr());
});

test('DEMO_MERCHANT=false prints no demo merchant', async (t) => {
  const store = await processStore(t);
  const service = await startService(t, store, { DEMO_MERCHANT: 'false' });
  // Only the banner and keys: a logged stack trace would match a bare "sk_" (node:internal/process/task_queues).
  assert.doesNotMatch(service.stdout(), /Demo merchant|sk_(live|test)_/);
  assert.equal(await stop(service), 0, `${service.stdout()}\n${service.stderr()}`);
});

test('a busy port fails the start at once, naming PORT, and creates nothing', async (t) => {
  const store = await processStore(t);
  const squatter = net.createServer();
  await new Promise<void>((resolve) => squatter.listen(0, '127.0.0.1', resolve));
  t.after(() => squatter.close());
  const port = (squatter.address() as net.AddressInfo).port;
  const result = runMain({ ...store.env, PORT: String(port), HOST: '127.0.0.1' });
  assert.equal(result.status, 1);
  assert.equal(result.stdout, '');
  assert.equal(
    result.stderr,
    `tono: port ${port} on 127.0.0.1 is already in use: stop what is using it, or start on another port with PORT (e.g. PORT=${port + 1} npm start)\n`,
  );
  assert.deepEqual(fs.readdirSync(store.dataDir), []);
  if (store.engine === 'sqlite') assert.equal(fs.existsSync(path.join(store.dataDir, 'tono.db')), false);
});
