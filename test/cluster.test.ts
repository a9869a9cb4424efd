// `npm start` with WEB_CONCURRENCY: several processes sharing the port (node:cluster) on
// PostgreSQL, one process with a notice on SQLite. Which process served a call is read from the
// service's own JSON log lines (pino's pid), so nothing about the processes shows in replies.
import { test, type TestContext } from 'node:test';
import assert from 'node:assert/strict';
import http from 'node:http';
import { engine } from './helpers.ts';
import { apiCall, childrenOf, processStore, startService, stop, type Service } from './process.ts';

const postgresOnly = {
  skip: engine !== 'postgres' ? 'several processes need PostgreSQL (TEST_ENGINE=postgres)' : false,
};

function isAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
}

async function until<T>(what: string, check: () => T | Promise<T>, timeoutMs = 30_000): Promise<NonNullable<T>> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const value = await check();
    if (value) return value;
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
}

/**
 * One call on a connection of its own: the primary hands each new connection to the next process,
 * where fetch would keep one connection (and one process) for every call.
 */
const call = (baseUrl: string, key: string, method: 'GET' | 'POST', path: string, body?: unknown) =>
  apiCall(baseUrl, key, method, path, body);

type LogLine = { pid: number; msg: string; req?: { method: string; url: string }; [key: string]: unknown };

function logLines(service: Service): LogLine[] {
  return service
    .stdout()
    .split('\n')
    .filter((line) => line.startsWith('{'))
    .map((line) => JSON.parse(line) as LogLine);
}

/** The pids that logged an answered call to `method url`. */
function servedBy(service: Service, method: string, url: string): Set<number> {
  return new Set(
    logLines(service)
      .filter((l) => l.msg === 'request completed' && l.req?.method === method && l.req.url === url)
      .map((l) => l.pid),
  );
}

/** A cluster of two on a fresh schema, with the demo merchant's test key and bank account. */
async function twoProcesses(t: TestContext, extra: Record<string, string> = {}) {
  const store = await processStore(t);
  const service = await startService(t, store, { WEB_CONCURRENCY: '2', LOG_LEVEL: 'info', ...extra });
  const out = service.stdout();
  const key = /test key\s+(sk_test_\S+)/.exec(out)?.[1];
  const bankAccount = /bank account\s+(bankaccount_\S+)/.exec(out)?.[1];
  assert.ok(key && bankAccount, out);
  const processes = await until('two service processes', () => {
    const pids = childrenOf(service.child.pid!);
    return pids.length === 2 ? pids : null;
  });
  return {
    service,
    key,
    bankAccount,
    processes,
    api: (method: 'GET' | 'POST', path: string, body?: unknown) => call(service.baseUrl, key, method, path, body),
  };
}

test(
  'WEB_CONCURRENCY=2 on PostgreSQL: two processes share the port and the database; SIGTERM stops both, exit 0',
  postgresOnly,
  async (t) => {
    const { service, bankAccount, processes, api } = await twoProcesses(t);
    const out = service.stdout();
    assert.equal(out.match(/Tono is running at/g)?.length, 1, out);
    assert.match(
      out,
      /Tono is running at http:\/\/127\.0\.0\.1:\d+ \(API reference http:\/\/127\.0\.0\.1:\d+\/docs\) \(2 processes\)\n/,
    );
    assert.equal(out.match(/Demo merchant created/g)?.length, 1, 'the demo merchant is made once, by the primary');

    const ids: string[] = [];
    for (let i = 0; i < 10; i += 1) {
      const created = await api('POST', '/v1/requests', {
        bank_account_id: bankAccount,
        amount: '12.50 NZD',
        message: `Coffee ${i}`,
      });
      assert.equal(created.status, 201, JSON.stringify(created.body));
      ids.push(created.body.request.id);
    }
    // Each request read twice in a row, on two new connections: once by each process.
    for (const [i, id] of ids.entries()) {
      for (let read = 0; read < 2; read += 1) {
        const got = await api('GET', `/v1/requests/${id}`);
        assert.equal(got.status, 200);
        assert.equal(got.body.request.message, `Coffee ${i}`);
      }
    }
    // A call's access line is written once it has been answered: wait for the last read's.
    await until(
      'the access line of the last read',
      () => servedBy(service, 'GET', `/v1/requests/${ids.at(-1)}`).size === 2,
      5_000,
    );
    const creators = new Set(
      logLines(service)
        .filter((l) => l.msg === 'request completed' && l.req?.method === 'POST')
        .map((l) => l.pid),
    );
    assert.deepEqual([...creators].sort(), processes, 'both processes created requests');
    for (const id of ids)
      assert.deepEqual(
        [...servedBy(service, 'GET', `/v1/requests/${id}`)].sort(),
        processes,
        `${id} was read by both processes`,
      );

    assert.equal(await stop(service), 0);
    assert.deepEqual(processes.filter(isAlive), [], 'no service process is left');
    assert.doesNotMatch(service.stderr(), /.+/);
  },
);

test(
  '16 concurrent refunds of 2.00 on a 12.50 payment across two processes: 6 taken, 10 refused',
  postgresOnly,
  async (t) => {
    const { service, bankAccount, processes, api } = await twoProcesses(t);
    const created = await api('POST', '/v1/requests', {
      bank_account_id: bankAccount,
      amount: '12.50 NZD',
      message: 'Refunds',
    });
    const paid = await api('POST', `/v1/test-helpers/requests/${created.body.request.id}/pay`, {});
    assert.equal(paid.body.payment.status, 'successful', JSON.stringify(paid.body));
    const paymentId = paid.body.payment.id as string;
    const answers = await Promise.all(
      Array.from({ length: 16 }, () => api('POST', '/v1/refunds', { payment_id: paymentId, amount: '2.00 NZD' })),
    );
    assert.deepEqual(
      answers.map((answer) => answer.status).sort(),
      [...Array(6).fill(201), ...Array(10).fill(422)],
      JSON.stringify(answers.map((answer) => answer.body)),
    );
    const shown = await api('GET', `/v1/payments/${paymentId}`);
    assert.equal(shown.body.payment.amount_refunded.value, '12.00 NZD');
    await until(
      'the two processes both answered refunds',
      () => {
        const pids = new Set(
          logLines(service)
            .filter((l) => l.msg === 'request completed' && l.req?.url === '/v1/refunds')
            .map((l) => l.pid),
        );
        return pids.size === processes.length || null;
      },
      5_000,
    );
  },
);

test('a service process that dies is replaced, and the service goes on', postgresOnly, async (t) => {
  const { service, bankAccount, processes, api } = await twoProcesses(t);
  const created = await api('POST', '/v1/requests', {
    bank_account_id: bankAccount,
    amount: '3.00 NZD',
    message: 'Before',
  });
  assert.equal(created.status, 201);

  const [killed, survivor] = processes;
  process.kill(killed, 'SIGKILL');
  const replaced = await until('a replacement process', () => {
    const pids = childrenOf(service.child.pid!);
    return pids.length === 2 && !pids.includes(killed) ? pids : null;
  });
  assert.ok(replaced.includes(survivor));
  const [replacement] = replaced.filter((pid) => pid !== survivor);
  // The primary's log line travels through a pipe of its own: the replacement may be seen first.
  const restartLine = await until(
    'the restart to be logged',
    () => logLines(service).find((l) => l.msg === 'a service process exited; starting another') ?? null,
  );
  assert.equal(restartLine?.pid, service.child.pid);
  assert.equal(restartLine?.service_pid, killed);
  assert.equal(restartLine?.signal, 'SIGKILL');

  // Calls go on while the replacement starts, and it serves its share once it listens.
  await until('the replacement to serve a call', async () => {
    const got = await api('GET', `/v1/requests/${created.body.request.id}`);
    assert.equal(got.status, 200);
    assert.equal(got.body.request.message, 'Before');
    return servedBy(service, 'GET', `/v1/requests/${created.body.request.id}`).has(replacement);
  });
  const after = await api('POST', '/v1/requests', {
    bank_account_id: bankAccount,
    amount: '4.00 NZD',
    message: 'After',
  });
  assert.equal(after.status, 201);
  assert.doesNotMatch(
    service.stdout(),
    /Tono is running at[\s\S]*Tono is running at/,
    'the banner is not printed again',
  );

  assert.equal(await stop(service), 0);
  assert.deepEqual(replaced.filter(isAlive), []);
});

test('service processes whose primary is killed stop themselves', postgresOnly, async (t) => {
  const { service, processes } = await twoProcesses(t, { LOG_LEVEL: 'warn' });
  process.kill(service.child.pid!, 'SIGKILL');
  await service.exited;
  await until('the service processes to stop', () => processes.filter(isAlive).length === 0);
});

test(
  'processes that keep dying as they start make the primary give up, exit 1, and leave none behind',
  postgresOnly,
  async (t) => {
    const { service, processes } = await twoProcesses(t, { LOG_LEVEL: 'warn' });
    const seen = new Set(processes);
    for (const pid of processes) process.kill(pid, 'SIGKILL');
    // Every replacement is killed as soon as it appears, until the primary stops starting them.
    const killer = setInterval(() => {
      for (const pid of childrenOf(service.child.pid!)) {
        seen.add(pid);
        try {
          process.kill(pid, 'SIGKILL');
        } catch {
          // gone already
        }
      }
    }, 20);
    t.after(() => clearInterval(killer));
    assert.equal(await service.exited, 1);
    clearInterval(killer);
    assert.match(
      service.stderr(),
      /^tono: service processes keep exiting within 10 s of starting \(\d+ in a row\); stopping\n$/,
    );
    assert.deepEqual([...seen].filter(isAlive), []);
  },
);

test(
  'two processes running workers: each subscription charge and each webhook delivery happens once',
  postgresOnly,
  async (t) => {
    // A receiver that counts every delivery it gets, by event id.
    const received = new Map<string, number>();
    const receiver = http.createServer((request, response) => {
      let body = '';
      request
        .setEncoding('utf8')
        .on('data', (chunk) => (body += chunk))
        .on('end', () => {
          const id = (JSON.parse(body) as { id: string }).id;
          received.set(id, (received.get(id) ?? 0) + 1);
          response.end();
        });
    });
    await new Promise<void>((resolve) => receiver.listen(0, '127.0.0.1', resolve));
    t.after(() => receiver.close());
    const { service, bankAccount, api } = await twoProcesses(t, { LOG_LEVEL: 'warn' });
    const hook = await api('POST', '/v1/webhooks', {
      url: `http://127.0.0.1:${(receiver.address() as { port: number }).port}/hooks`,
    });
    assert.equal(hook.status, 201, JSON.stringify(hook.body));

    // Weekly, three charges: the first is due at once, the other two when the test clock moves.
    const subscriptions: string[] = [];
    for (let i = 0; i < 6; i += 1) {
      const request = await api('POST', '/v1/requests', {
        bank_account_id: bankAccount,
        message: `Plan ${i}`,
        subscription_options: { amount: '15.00 NZD', period: 'weekly', total_count: 3 },
        cust_info: { email: `payer${i}@example.com`, first_name: 'Pat', last_name: 'Payer' },
      });
      assert.equal(request.status, 201, JSON.stringify(request.body));
      const paid = await api('POST', `/v1/test-helpers/requests/${request.body.request.id}/pay`, {});
      assert.equal(paid.status, 200, JSON.stringify(paid.body));
      subscriptions.push(paid.body.subscription.id);
    }
    // The advance runs the clock's jobs in the process that takes it, while both processes' workers
    // claim the same jobs as they come due.
    const advanced = await api('POST', '/v1/test-helpers/clock/advance', { seconds: 15 * 86_400 });
    assert.equal(advanced.status, 200, JSON.stringify(advanced.body));

    const paymentIds = new Set<string>();
    for (const id of subscriptions) {
      const subscription = await until(`subscription ${id} completed`, async () => {
        const got = (await api('GET', `/v1/subscriptions/${id}`)).body.subscription;
        return got.status === 'completed' ? got : null;
      });
      assert.equal(subscription.successful_charges, 3);
      const payments = (await api('GET', `/v1/subscriptions/${id}/payments`)).body.payments as Array<{
        id: string;
        status: string;
      }>;
      assert.equal(payments.length, 3, `${id}: ${JSON.stringify(payments)}`);
      assert.ok(payments.every((p) => p.status === 'successful'));
      for (const p of payments) paymentIds.add(p.id);
    }
    assert.equal(paymentIds.size, 3 * subscriptions.length);

    // Every event has one delivery, and each was sent once: its delivery is settled (no job left to
    // send it again) with a single attempt, and the receiver got it once.
    const events = (await api('GET', '/v1/events?limit=100')).body.events as Array<{ id: string }>;
    assert.ok(events.length >= 6 * 4, `${events.length} events`);
    for (const event of events) {
      const deliveries = await until(`the delivery of ${event.id}`, async () => {
        const got = (await api('GET', `/v1/events/${event.id}`)).body.deliveries as Array<{
          status: string;
          attempt_count: number;
          attempts: unknown[];
        }>;
        return got.length === 1 && got[0].status === 'succeeded' ? got : null;
      });
      assert.equal(deliveries[0].attempt_count, 1, JSON.stringify(deliveries));
      assert.equal(deliveries[0].attempts.length, 1, JSON.stringify(deliveries));
      assert.equal(received.get(event.id), 1, event.id);
    }
    assert.equal(await stop(service), 0);
  },
);

test('WEB_CONCURRENCY=2 on SQLite: one process, and a notice saying why', {
  skip: engine !== 'sqlite' ? 'the SQLite notice' : false,
}, async (t) => {
  const store = await processStore(t);
  const service = await startService(t, store, { WEB_CONCURRENCY: '2' });
  assert.equal(
    service.stderr(),
    'tono: WEB_CONCURRENCY=2 is ignored: SQLite runs in a single process; set DATABASE_URL (PostgreSQL) to run several\n',
  );
  assert.match(
    service.stdout(),
    /Tono is running at http:\/\/127\.0\.0\.1:\d+ \(API reference http:\/\/127\.0\.0\.1:\d+\/docs\)\n/,
  );
  assert.doesNotMatch(service.stdout(), /processes\)/);
  assert.deepEqual(childrenOf(service.child.pid!), []);
  const key = /test key\s+(sk_test_\S+)/.exec(service.stdout())![1];
  const bankAccount = /bank account\s+(bankaccount_\S+)/.exec(service.stdout())![1];
  const created = await call(service.baseUrl, key, 'POST', '/v1/requests', {
    bank_account_id: bankAccount,
    amount: '12.50 NZD',
    message: 'Coffee',
  });
  assert.equal(created.status, 201);
  assert.equal((await call(service.baseUrl, key, 'GET', `/v1/requests/${created.body.request.id}`)).status, 200);
  assert.equal(await stop(service), 0);
});
