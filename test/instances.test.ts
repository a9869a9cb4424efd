// Several instances of the service on one PostgreSQL database, each a process of its own on a port
// of its own, as machines behind a load balancer are: work queued through any of them runs once,
// a job one of them cannot take starts on another at once (LISTEN/NOTIFY), and a key's rate limit
// and an address's failed keys count across them. What happened is read from the database, the
// receivers and the instances' own log lines and metrics.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import http from 'node:http';
import { sql } from 'kysely';
import { engine } from './helpers.ts';
import { apiCall, openStoreDb, processStore, startService, type Service } from './process.ts';
import { smtpReceiver } from './smtp.ts';
import { DEMO_EMAIL } from '../src/modules/merchants/demo.ts';
import { startReceiver } from './support/webhook-receiver.ts';

const postgresOnly = {
  skip: engine !== 'postgres' ? 'instances share a PostgreSQL database (TEST_ENGINE=postgres)' : false,
};

const agents = new Map<string, http.Agent>();

/** One API call, from `localAddress` (a loopback address of its own stands for another client). */
function call(
  service: Service,
  key: string,
  method: 'GET' | 'POST',
  path: string,
  body?: unknown,
  localAddress = '127.0.0.1',
): Promise<{ status: number; body: any }> {
  const agentKey = `${service.baseUrl} ${localAddress}`;
  let agent = agents.get(agentKey);
  if (!agent) agents.set(agentKey, (agent = new http.Agent({ keepAlive: true, localAddress })));
  return apiCall(service.baseUrl, key, method, path, body, agent);
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

function demoKeys(service: Service): { test: string; live: string; bankAccount: string } {
  const out = service.stdout();
  const test = /test key\s+(sk_test_\S+)/.exec(out)?.[1];
  const live = /live key\s+(sk_live_\S+)/.exec(out)?.[1];
  const bankAccount = /bank account\s+(bankaccount_\S+)/.exec(out)?.[1];
  assert.ok(test && live && bankAccount, out);
  return { test, live, bankAccount };
}

/** The service's JSON log lines with this message. */
function logged(service: Service, msg: string): Array<Record<string, any>> {
  return service
    .stdout()
    .split('\n')
    .filter((line) => line.startsWith('{') && line.includes(msg))
    .map((line) => JSON.parse(line) as Record<string, any>)
    .filter((line) => line.msg === msg);
}

async function notificationsHeard(service: Service): Promise<number> {
  const text = await (await fetch(`${service.baseUrl}/metrics`)).text();
  return Number(/^tono_job_notifications_heard_total (\d+)$/m.exec(text)?.[1] ?? Number.NaN);
}

function percentile(values: number[], p: number): number {
  const sorted = [...values].sort((x, y) => x - y);
  return sorted[Math.min(sorted.length - 1, Math.ceil((p / 100) * sorted.length) - 1)]!;
}

test(
  'two instances on one database run each job, charge, webhook and email once; a job queued through an instance that cannot take it starts on another at once',
  postgresOnly,
  async (t) => {
    const smtp = await smtpReceiver(t);
    const receiver = await startReceiver();
    t.after(() => receiver.close());
    const store = await processStore(t, { migrated: true });
    const db = openStoreDb(store);
    t.after(() => db.destroy());
    const env = { SMTP_URL: smtp.url, LOG_LEVEL: 'debug' };
    const a = await startService(t, store, env);
    const b = await startService(t, store, env);
    // Runs no workers: every job queued through it is for the others to start.
    const c = await startService(t, store, { ...env, WORKERS: 'false', LOG_LEVEL: 'warn' });
    const keys = demoKeys(a);
    const api = (service: Service, method: 'GET' | 'POST', path: string, body?: unknown) =>
      call(service, keys.test, method, path, body);
    const both = [a, b];
    const hook = await api(c, 'POST', '/v1/webhooks', { url: receiver.url });
    assert.equal(hook.status, 201, JSON.stringify(hook.body));

    // (a) A burst of work, each piece asked for through one instance and paid through the other.
    const payments = await Promise.all(
      Array.from({ length: 8 }, async (_, i) => {
        const created = await api(both[i % 2]!, 'POST', '/v1/requests', {
          bank_account_id: keys.bankAccount,
          amount: '12.50 NZD',
          message: `Coffee ${i}`,
        });
        assert.equal(created.status, 201, JSON.stringify(created.body));
        const paid = await api(
          both[(i + 1) % 2]!,
          'POST',
          `/v1/test-helpers/requests/${created.body.request.id}/pay`,
          {},
        );
        assert.equal(paid.body.payment?.status, 'successful', JSON.stringify(paid.body));
        return paid.body.payment.id as string;
      }),
    );
    const subscriptions = await Promise.all(
      Array.from({ length: 4 }, async (_, i) => {
        const created = await api(both[i % 2]!, 'POST', '/v1/requests', {
          bank_account_id: keys.bankAccount,
          message: `Plan ${i}`,
          subscription_options: { amount: '15.00 NZD', period: 'weekly', total_count: 3 },
          // The merchant's own address: test-mode mail reaches SMTP only there (docs/email.md).
          cust_info: { email: DEMO_EMAIL, first_name: 'Pat', last_name: `Payer ${i}` },
        });
        assert.equal(created.status, 201, JSON.stringify(created.body));
        const paid = await api(
          both[(i + 1) % 2]!,
          'POST',
          `/v1/test-helpers/requests/${created.body.request.id}/pay`,
          {},
        );
        assert.equal(paid.status, 200, JSON.stringify(paid.body));
        return paid.body.subscription.id as string;
      }),
    );
    // The advance runs the clock's jobs in the instance that takes it, while both instances'
    // workers claim the same jobs as they come due.
    const advanced = await api(b, 'POST', '/v1/test-helpers/clock/advance', { seconds: 15 * 86_400 });
    assert.equal(advanced.status, 200, JSON.stringify(advanced.body));
    for (const id of subscriptions) {
      const subscription = await until(`subscription ${id} completed`, async () => {
        const got = (await api(a, 'GET', `/v1/subscriptions/${id}`)).body.subscription;
        return got.status === 'completed' ? got : null;
      });
      assert.equal(subscription.successful_charges, 3);
      const charged = (await api(b, 'GET', `/v1/subscriptions/${id}/payments`)).body.payments as Array<{
        id: string;
        status: string;
      }>;
      assert.deepEqual(
        charged.map((p) => p.status),
        ['successful', 'successful', 'successful'],
      );
      payments.push(...charged.map((p) => p.id));
    }
    assert.equal(new Set(payments).size, 8 + 4 * 3, 'each charge a payment of its own');
    const paymentRows = await db
      .selectFrom('payments')
      .select((eb) => eb.fn.countAll<number>().as('n'))
      .executeTakeFirst();
    assert.equal(Number(paymentRows?.n), 8 + 4 * 3, 'and no other payment');

    const settled = async () => {
      const open = await sql<{ n: number }>`
        select (select count(*) from webhook_deliveries where status <> 'succeeded')
             + (select count(*) from mail_messages where status <> 'sent')
             + (select count(*) from jobs where run_at <= ${Date.now()} and failed_at is null) as n`.execute(db);
      return Number(open.rows[0]!.n) === 0;
    };
    await until('every delivery and message sent, and no job due', settled);
    // A second send of anything would arrive within this.
    await new Promise((resolve) => setTimeout(resolve, 1_000));

    const deliveries = await db.selectFrom('webhook_deliveries').select(['event_id', 'attempts']).execute();
    assert.ok(deliveries.length >= 8 * 3 + 4 * 6, `${deliveries.length} deliveries`);
    assert.deepEqual(
      deliveries.filter((d) => Number(d.attempts) !== 1),
      [],
      'each delivery attempted once',
    );
    const received = new Map<string, number>();
    for (const request of receiver.received) received.set(request.body.id, (received.get(request.body.id) ?? 0) + 1);
    assert.equal(receiver.received.length, deliveries.length, 'the receiver got each delivery once');
    for (const d of deliveries) assert.equal(received.get(d.event_id), 1, d.event_id);

    const mails = await db.selectFrom('mail_messages').select(['id', 'status']).execute();
    assert.ok(mails.length >= 4 * 4, `${mails.length} messages`);
    assert.equal(smtp.messages.length, mails.length, 'each message sent once');
    assert.equal(new Set(smtp.messages.map((m) => m.messageId)).size, mails.length);

    // Every claim of a job counts an attempt: a job two instances both ran would show one attempt twice.
    const runs = both.flatMap((service) =>
      logged(service, 'job ran').map((line) => ({ pid: line.pid, run: `${line.job_id} ${line.attempts}` })),
    );
    const seen = new Set<string>();
    for (const { run } of runs) {
      assert.ok(!seen.has(run), `job run twice: ${run}`);
      seen.add(run);
    }
    assert.equal(new Set(runs.map((r) => r.pid)).size, 2, 'both instances ran jobs');

    // (b) Requests made through the instance without workers: each queues a webhook delivery that
    // the other two are told of at its commit. Measured from the delivery's row, written in the
    // queueing transaction, to the start of its attempt.
    const heardBefore = (await notificationsHeard(a)) + (await notificationsHeard(b));
    const since = Date.now();
    const samples = 100;
    for (let i = 0; i < samples; i++) {
      const created = await api(c, 'POST', '/v1/requests', {
        bank_account_id: keys.bankAccount,
        amount: '3.00 NZD',
        message: `Wake ${i}`,
      });
      assert.equal(created.status, 201);
      await new Promise((resolve) => setTimeout(resolve, 10));
    }
    const started = await until('the deliveries queued through the instance without workers', async () => {
      const rows = await db
        .selectFrom('webhook_deliveries')
        .select(['created_at', 'first_attempt_at'])
        .where('created_at', '>=', since)
        .execute();
      return rows.length === samples && rows.every((row) => row.first_attempt_at !== null) ? rows : null;
    });
    const latencies = started.map((row) => Number(row.first_attempt_at) - Number(row.created_at));
    const heard = (await notificationsHeard(a)) + (await notificationsHeard(b)) - heardBefore;
    const p50 = percentile(latencies, 50);
    const p99 = percentile(latencies, 99);
    t.diagnostic(
      `queued through the instance without workers → started on another: p50 ${p50} ms, p99 ${p99} ms, max ${Math.max(...latencies)} ms over ${samples}; notifications heard ${heard}`,
    );
    assert.ok(heard >= samples, `the other instances were told of each job (${heard} notifications heard)`);
    // Generous: the poll's fallback alone would take up to 100 ms, a lease in the way seconds.
    assert.ok(p99 < 1_000, `p99 ${p99} ms`);

    // The instance that queued a job is killed as soon as it has answered: the job was announced
    // at its commit, and starts on another all the same.
    const before = Date.now();
    const last = await api(c, 'POST', '/v1/requests', {
      bank_account_id: keys.bankAccount,
      amount: '3.00 NZD',
      message: 'Gone',
    });
    c.child.kill('SIGKILL');
    assert.equal(last.status, 201);
    const orphan = await until('the delivery queued just before its instance was killed', () =>
      db
        .selectFrom('webhook_deliveries')
        .select(['created_at', 'first_attempt_at'])
        .where('created_at', '>=', before)
        .where('first_attempt_at', 'is not', null)
        .executeTakeFirst(),
    );
    const orphanLatency = Number(orphan.first_attempt_at) - Number(orphan.created_at);
    t.diagnostic(`queued through an instance killed right after its answer → started on another: ${orphanLatency} ms`);
    assert.ok(orphanLatency < 1_000, `${orphanLatency} ms`);
  },
);

test(
  "two instances on one database limit a key's calls, and an address's failed keys, as one",
  postgresOnly,
  async (t) => {
    const store = await processStore(t, { migrated: true });
    const env = { RATE_LIMIT_PER_SECOND: '20', AUTH_FAILURES_PER_MINUTE: '6', WORKERS: 'false', LOG_LEVEL: 'error' };
    const a = await startService(t, store, env);
    const b = await startService(t, store, env);
    const both = [a, b];
    const keys = demoKeys(a);

    // (d) Unknown keys from one address, one after another, taking turns between the instances.
    const guesser = '127.0.0.2';
    const statuses: number[] = [];
    for (let i = 0; i < 12; i++) {
      const unknown = `sk_test_${randomBytes(24).toString('base64url')}`;
      statuses.push((await call(both[i % 2]!, unknown, 'GET', '/v1/requests', undefined, guesser)).status);
    }
    const lookedUp = statuses.filter((status) => status === 401).length;
    t.diagnostic(
      `failed keys across two instances, limit 6 a minute: ${lookedUp} looked up, then ${statuses.join(' ')}`,
    );
    // Each instance knows the count as of its own last failure: one more gets through per other instance.
    assert.ok(lookedUp >= 6 && lookedUp <= 6 + 1, statuses.join(' '));
    assert.deepEqual(statuses.slice(lookedUp), Array(12 - lookedUp).fill(429));
    for (const service of both) {
      const locked = await call(service, keys.test, 'GET', '/v1/requests', undefined, guesser);
      assert.equal(locked.status, 429, 'the address is refused by every instance, whatever key it sends');
      assert.match(locked.body.message, /failed authentications/);
    }

    // (c) One key's calls, eight at a time, taking turns between the instances, for 2.5 s.
    const perSecond = 20;
    const ok = new Map<Service, number>([
      [a, 0],
      [b, 0],
    ]);
    let calls = 0;
    const start = performance.now();
    await Promise.all(
      Array.from({ length: 8 }, async () => {
        while (performance.now() - start < 2_500) {
          const service = both[calls++ % 2]!;
          const answer = await call(service, keys.live, 'GET', '/v1/requests?limit=1');
          if (answer.status === 200) ok.set(service, ok.get(service)! + 1);
          else assert.equal(answer.status, 429);
        }
      }),
    );
    const seconds = (performance.now() - start) / 1000;
    const allowed = ok.get(a)! + ok.get(b)!;
    const bucket = 2 * perSecond + perSecond * seconds;
    // docs/security.md, "Limits": at most 2 × (instances − 1) shares of rate × 50 ms over the bucket.
    const bound = bucket + 2 * (2 - 1) * Math.ceil(perSecond * 0.05);
    t.diagnostic(
      `one key at ${perSecond}/s over two instances for ${seconds.toFixed(2)} s: ${allowed} of ${calls} let through (${ok.get(a)} + ${ok.get(b)}); the bucket allows ${bucket.toFixed(1)}, the bound ${bound.toFixed(1)}`,
    );
    assert.ok(allowed <= bound + 1, `${allowed} let through, at most ${bound} allowed`);
    assert.ok(allowed >= 2 * perSecond + perSecond * seconds * 0.5, `${allowed} let through: the rate is used`);
    assert.ok(ok.get(a)! > 0 && ok.get(b)! > 0, 'both instances let calls through');
  },
);
