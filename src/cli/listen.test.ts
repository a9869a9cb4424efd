import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import fs from 'node:fs';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import path from 'node:path';
import fc from 'fast-check';
import { ulid } from 'ulid';
import {
  childEnv,
  merchantByCli,
  processStore,
  runCli,
  type Service,
  startService,
  type Store,
} from '../../test/process.ts';
import { startReceiver } from '../../test/support/webhook-receiver.ts';
import { verifyStandardWebhook, verifyWebhookSignature } from '../modules/webhooks/verify.js';
import {
  CATCH_UP_AFTER_MS,
  CATCH_UP_GAP_MS,
  eventIdFloor,
  eventIdTime,
  LOOKBACK_MS,
  retryAfterMs,
  SeenEvents,
} from './commands/listen.ts';
import { TRIGGERABLE, triggerEvent } from './commands/trigger.ts';
import { createTonoClient, unwrap } from '@tono/client';
import { EVENT_TYPES } from '../modules/events/events.builders.ts';

// `listen` and `trigger` as a developer runs them: real CLI processes against a service on a real
// port, forwarding to a real receiver.

const root = path.resolve(import.meta.dirname, '../..');

test('event id floors sort with real ids and keep their time', () => {
  fc.assert(
    fc.property(fc.integer({ min: 1, max: 2 ** 48 - 10_001 }), fc.integer({ min: 1, max: 10_000 }), (at, later) => {
      const floor = eventIdFloor(at);
      assert.match(floor, /^event_[0-9A-HJKMNP-TV-Z]{26}$/);
      assert.equal(eventIdTime(floor), at);
      const real = `event_${ulid(at)}`;
      assert.ok(floor <= real && eventIdTime(real) === at);
      assert.ok(eventIdFloor(at + later) > real, 'a later floor sorts after every id of an earlier moment');
    }),
  );
});

const ids = (events: Array<{ id: string }>) => events.map((event) => event.id);

test("listen long-polls from the feed's cursor and, after new events, re-reads the look-back a few times without waiting", () => {
  const start = `event_${ulid(1_000_000)}`;
  const seen = new SeenEvents(start);
  assert.deepEqual(
    seen.next(0),
    { after: start, wait: 25, catchUp: false, at: 0 },
    'a quiet feed: one long poll at a time',
  );
  const a = `event_${ulid(2_000_000)}`;
  const b = `event_${ulid(2_000_400)}`;
  assert.deepEqual(ids(seen.took(seen.next(0), { events: [{ id: a }, { id: b }], cursor: b }, 10_000)), [a, b]);

  // the long poll goes on from the feed's cursor, and ends by the first catch-up read
  const poll = seen.next(10_000);
  assert.deepEqual(poll, { after: b, wait: 1, catchUp: false, at: 10_000 });
  assert.deepEqual(seen.took(poll, { events: [], cursor: b }, 11_000), []);
  const catchUp = seen.next(11_000);
  assert.deepEqual(catchUp, { after: eventIdFloor(2_000_400 - LOOKBACK_MS), wait: 0, catchUp: true, at: 11_000 });
  // it finds an event that committed after b although its id is older; what was forwarded is not again
  const late = `event_${ulid(1_999_000)}`;
  assert.deepEqual(ids(seen.took(catchUp, { events: [{ id: late }, { id: a }, { id: b }], cursor: b }, 11_000)), [
    late,
  ]);
  assert.deepEqual(
    seen.next(11_500),
    { after: b, wait: 1, catchUp: false, at: 11_500 },
    'at most one catch-up read a second',
  );

  // the reads due run out: then the long poll waits its full time again
  let now = 11_500;
  let catchUps = 0;
  for (let calls = 0; calls < 20; calls++) {
    const ask = seen.next(now);
    if (ask.wait === 25) break;
    if (ask.catchUp) catchUps++;
    assert.deepEqual(
      seen.took(
        ask,
        ask.catchUp ? { events: [{ id: late }, { id: a }, { id: b }], cursor: b } : { events: [], cursor: b },
        now + ask.wait * 1000,
      ),
      [],
    );
    now += ask.wait * 1000 + 5;
  }
  assert.deepEqual(seen.next(now), { after: b, wait: 25, catchUp: false, at: now });
  assert.equal(
    catchUps,
    3,
    'the one still due for a and b, and the two the late event asked for; reads that found nothing new asked for none',
  );
  assert.ok(now < 11_000 + Math.max(...CATCH_UP_AFTER_MS) + 2 * CATCH_UP_GAP_MS);

  // a catch-up page cut off before the cursor goes on from where it stopped, at once
  const c = `event_${ulid(2_001_000)}`;
  const d = `event_${ulid(2_001_100)}`;
  assert.deepEqual(ids(seen.took(seen.next(now), { events: [{ id: c }, { id: d }], cursor: d }, now)), [c, d]);
  now += CATCH_UP_AFTER_MS[0]!;
  const cut = seen.next(now);
  assert.equal(cut.catchUp, true);
  const later = `event_${ulid(2_000_900)}`;
  assert.deepEqual(ids(seen.took(cut, { events: [{ id: late }, { id: a }], cursor: a }, now)), []);
  assert.deepEqual(seen.next(now), { after: a, wait: 0, catchUp: true, at: now });
  assert.deepEqual(
    ids(seen.took(seen.next(now), { events: [{ id: b }, { id: later }, { id: c }, { id: d }], cursor: d }, now)),
    [later],
  );
  assert.equal(seen.next(now).catchUp, false);

  // never before the start
  const recent = `event_${ulid(1_999_500)}`;
  const early = new SeenEvents(recent);
  const e = `event_${ulid(2_000_000)}`;
  early.took(early.next(0), { events: [{ id: e }], cursor: e }, 0);
  assert.deepEqual(early.next(CATCH_UP_AFTER_MS[0]!), {
    after: recent,
    wait: 0,
    catchUp: true,
    at: CATCH_UP_AFTER_MS[0],
  });
});

test('against a feed whose events commit late and out of order, listen forwards each once and never spins', () => {
  const base = 1_800_000_000_000;
  // small pages, so that catch-up reads are cut off and must go on
  const PAGE = 3;
  fc.assert(
    fc.property(
      // some events made in the same few milliseconds, to fill pages
      fc.array(
        fc.record({
          made: fc.oneof(fc.integer({ min: 1, max: 30 }), fc.integer({ min: 1, max: 20_000 })),
          delay: fc.integer({ min: 0, max: LOOKBACK_MS - 1 }),
        }),
        { maxLength: 25 },
      ),
      (specs) => {
        const events = specs.map(({ made, delay }) => ({ id: `event_${ulid(base + made)}`, committed: made + delay }));
        const seen = new SeenEvents(eventIdFloor(base));
        const forwarded: string[] = [];
        const end = Math.max(0, ...events.map((event) => event.committed)) + 2 * LOOKBACK_MS + 30_000;
        let now = 0;
        let calls = 0;
        let fullPages = 0;
        while (now < end) {
          const ask = seen.next(now);
          const visible = () =>
            events
              .filter((event) => event.id > ask.after && event.committed <= now)
              .sort((x, y) => (x.id < y.id ? -1 : 1));
          // the feed as the service answers it: what has committed after the cursor, else a wait for it
          if (visible().length === 0 && ask.wait > 0)
            now = Math.min(
              now + ask.wait * 1000,
              ...events
                .filter((event) => event.id > ask.after && event.committed > now)
                .map((event) => event.committed),
            );
          const page = visible().slice(0, PAGE);
          calls++;
          if (page.length === PAGE) fullPages++;
          now += 2;
          forwarded.push(...ids(seen.took(ask, { events: page, cursor: page.at(-1)?.id ?? ask.after }, now)));
        }
        assert.deepEqual(
          forwarded.toSorted(),
          events.map((event) => event.id).toSorted(),
          'each event forwarded, once',
        );
        // Per new event at most: the long poll that brought it, two catch-up reads, and the long polls
        // that ended on them; a page that was full brings one more; a quiet feed, one call per 25 s.
        assert.ok(
          calls - fullPages <= 5 * events.length + Math.ceil(end / 25_000) + 1,
          `${calls} calls, ${fullPages} full pages, for ${events.length} events`,
        );
      },
    ),
  );
});

test('a 429 waits as long as its Retry-After says, at least a second', () => {
  assert.equal(retryAfterMs('2', 0), 2000);
  assert.equal(retryAfterMs(' 30 ', 0), 30_000);
  assert.equal(retryAfterMs('0', 0), 1000);
  assert.equal(retryAfterMs(null, 0), 1000);
  assert.equal(retryAfterMs('soon', 0), 1000);
  const now = Date.parse('2026-11-23T10:04:12Z');
  assert.equal(retryAfterMs('Mon, 23 Nov 2026 10:04:17 GMT', now), 5000);
});

function startListen(store: Store, args: string[]) {
  const child = spawn(process.execPath, ['src/cli/main.ts', 'listen', ...args], {
    cwd: root,
    env: childEnv(store.env),
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let stdout = '';
  let stderr = '';
  child.stdout.setEncoding('utf8').on('data', (chunk) => (stdout += chunk));
  child.stderr.setEncoding('utf8').on('data', (chunk) => (stderr += chunk));
  const exited = new Promise<number | null>((resolve) => child.once('exit', (code) => resolve(code)));
  const until = async (pattern: RegExp) => {
    const deadline = Date.now() + 30_000;
    while (!pattern.test(stdout)) {
      if (Date.now() > deadline || child.exitCode !== null)
        throw new Error(`listen printed ${JSON.stringify(stdout)} ${stderr}`);
      await new Promise((resolve) => setTimeout(resolve, 20));
    }
    return stdout.match(pattern)!;
  };
  return { child, exited, until, stdout: () => stdout, stderr: () => stderr };
}

async function serviceWithMerchant(
  t: Parameters<typeof processStore>[0],
): Promise<{ store: Store; service: Service; key: string; liveKey: string }> {
  const store = await processStore(t, { migrated: true });
  const service = await startService(t, store);
  const merchant = await merchantByCli(store, 'Laptop Shop', 'dev@laptop.example');
  return { store, service, key: merchant.test_key, liveKey: merchant.live_key };
}

test('listen forwards the chosen test events, re-signed with the secret it prints, one line each', async (t) => {
  const { store, service, key } = await serviceWithMerchant(t);
  // an event from before listen starts is not forwarded
  assert.equal(
    (await runCli(store, ['trigger', 'request.created', '--api-key', key, '--base-url', service.baseUrl])).status,
    0,
  );
  const receiver = await startReceiver((_request, index) => ({ status: index === 0 ? 204 : 500 }));
  t.after(() => receiver.close());
  const listen = startListen(store, [
    '--forward-to',
    receiver.url,
    '--api-key',
    key,
    '--base-url',
    service.baseUrl,
    '--events',
    'request.created,payment.status_updated',
  ]);
  t.after(() => listen.child.kill('SIGKILL'));
  const [, secret] = await listen.until(/Webhook signing secret for this session: (\S+)/);

  const triggered = await runCli(store, [
    'trigger',
    'payment.status_updated',
    '--api-key',
    key,
    '--base-url',
    service.baseUrl,
  ]);
  assert.equal(triggered.status, 0, triggered.stderr);
  assert.match(
    triggered.stdout,
    /created request request_\w+\npaid it at the sandbox bank: payment payment_\w+ successful\nTriggered payment.status_updated.\n$/,
  );

  const received = await receiver.waitFor(2);
  assert.deepEqual(
    received.map((r) => r.body.type),
    ['request.created', 'payment.status_updated'],
  );
  for (const delivery of received) {
    assert.equal(
      verifyWebhookSignature(delivery.raw, delivery.headers['x-service-signature'] as string, secret!),
      true,
    );
    assert.equal(verifyStandardWebhook(delivery.raw, delivery.headers, secret!), true);
    assert.equal(delivery.headers['x-service-event-id'], delivery.body.id);
  }
  await listen.until(/payment\.status_updated\s+event_\w+ {2}-> 500 {2}POST /);
  assert.match(listen.stdout(), /request\.created\s+event_\w+ {2}-> 204 {2}POST http:\/\/127\.0\.0\.1:\d+/);
  // the request.created of the first trigger came before listen started
  assert.equal(received.filter((r) => r.body.type === 'request.created').length, 1);

  listen.child.kill('SIGTERM');
  assert.equal(await listen.exited, 0);
  assert.match(listen.stdout(), /Stopped after forwarding 2 events\.\n$/);
  assert.equal(receiver.received.length, 2);
});

test('listen and trigger refuse what they cannot do, with one clear line', async (t) => {
  const { store, service, key, liveKey } = await serviceWithMerchant(t);
  const cases: Array<[string[], RegExp]> = [
    [
      ['listen', '--forward-to', 'http://localhost:4242/hooks', '--api-key', liveKey, '--base-url', service.baseUrl],
      /^error: --api-key must be a test key \(sk_test_…\)/,
    ],
    [['listen', '--api-key', key, '--base-url', service.baseUrl], /^error: listen needs --forward-to URL/],
    [
      [
        'listen',
        '--forward-to',
        'http://localhost:4242',
        '--api-key',
        key,
        '--events',
        'payment.teleported',
        '--base-url',
        service.baseUrl,
      ],
      /^error: --events must be comma-separated event types; "payment.teleported" is not one/,
    ],
    [
      ['listen', '--forward-to', 'http://localhost:4242', '--api-key', 'sk_test_nope', '--base-url', service.baseUrl],
      /^error: http:\/\/127\.0\.0\.1:\d+ refused the key: /,
    ],
    [
      ['trigger', 'payment.teleported', '--api-key', key, '--base-url', service.baseUrl],
      /^error: cannot trigger "payment.teleported"; these can be: request.created/,
    ],
  ];
  for (const [args, message] of cases) {
    const result = await runCli(store, args);
    assert.equal(result.status, 1, `${args.join(' ')}: ${result.stdout}`);
    assert.match(result.stderr, message, args.join(' '));
  }
  const help = await runCli(store, ['trigger', '--help']);
  assert.equal(help.status, 0);
  for (const type of TRIGGERABLE) assert.match(help.stdout, new RegExp(`^  ${type.replace('.', '\\.')}$`, 'm'));
});

test('docs/webhooks.md says which event types trigger causes, and why it does not cause the others', () => {
  const doc = fs.readFileSync(path.join(root, 'docs/webhooks.md'), 'utf8');
  const start = doc.indexOf('`trigger` makes an event happen');
  assert.ok(start > 0, 'docs/webhooks.md describes trigger');
  const end = doc.indexOf('\n## ', start);
  const section = doc.slice(start, end < 0 ? undefined : end);
  const [, offered, all] = section.match(/It causes (\d+) of the (\d+) event types\./) ?? [];
  assert.equal(Number(offered), TRIGGERABLE.length, 'how many trigger offers');
  assert.equal(Number(all), EVENT_TYPES.length, 'how many event types there are');
  for (const type of TRIGGERABLE) assert.ok((EVENT_TYPES as readonly string[]).includes(type), type);
  const notOffered = EVENT_TYPES.filter((type) => !(TRIGGERABLE as readonly string[]).includes(type));
  const explained = [...section.matchAll(/^- `([a-z_]+\.[a-z_]+)`/gm)].map((m) => m[1]);
  assert.deepEqual(explained.sort(), [...notOffered].sort(), 'each type trigger does not offer, with its reason');
  assert.match(section, new RegExp(`${['Zero', 'One', 'Two', 'Three'][notOffered.length]} (is|are) not offered`));
});

test('each event type trigger offers happens through the API calls it makes', async (t) => {
  // in this process, against a service on a real port: the CLI around it is tested above
  const { service, key } = await serviceWithMerchant(t);
  const tono = createTonoClient({ apiKey: key, baseUrl: service.baseUrl });
  for (const type of TRIGGERABLE) {
    const steps = await triggerEvent(tono, type);
    assert.ok(steps.length > 0, type);
    const found = (await fetch(`${service.baseUrl}/v1/events?type=${type}&limit=1`, {
      headers: { authorization: `Bearer ${key}` },
    }).then((r) => r.json())) as { events: unknown[] };
    assert.equal(found.events.length, 1, `${type} happened`);
  }
});

test('trigger makes recurring_payment.expired and payment.reconciled happen to the objects it made', async (t) => {
  const { service, key } = await serviceWithMerchant(t);
  const tono = createTonoClient({ apiKey: key, baseUrl: service.baseUrl });
  type Event = { type: string; created_at: string; data: Record<string, unknown> };
  const eventsOf = async (type: string) =>
    (
      (await fetch(`${service.baseUrl}/v1/events?type=${type}`, {
        headers: { authorization: `Bearer ${key}` },
      }).then((r) => r.json())) as { events: Event[] }
    ).events;

  const expiring = await triggerEvent(tono, 'recurring_payment.expired');
  const consentId = expiring.join('\n').match(/recurring consent (recurring_\w+)/)?.[1];
  assert.ok(consentId, expiring.join('\n'));
  assert.match(expiring[0]!, /^created recurring request request_\w+, its consent ending on \d{4}-\d{2}-\d{2}$/);
  assert.equal(expiring.at(-1), 'moved the test clock 4 days on');
  const expired = await eventsOf('recurring_payment.expired');
  assert.equal(expired.length, 1);
  assert.deepEqual(expired[0]!.data, { id: consentId, merchant_identifier: null, status: 'expired' });
  const { recurring_consent: consent } = await unwrap(
    tono.GET('/v1/recurring-consents/{id}', { params: { path: { id: consentId } } }),
  );
  assert.equal(consent.status, 'expired');

  const reconciling = await triggerEvent(tono, 'payment.reconciled');
  const paymentId = reconciling[0]!.match(/payment (payment_\w+) successful$/)?.[1];
  assert.ok(paymentId, reconciling.join('\n'));
  assert.match(
    reconciling[1]!,
    /^imported a Westpac statement showing it \(particulars V-[A-Z0-9]{6}\): statement stmt_\w+, 1 line matched$/,
  );
  const reconciled = await eventsOf('payment.reconciled');
  assert.equal(reconciled.length, 1);
  assert.equal(reconciled[0]!.data.id, paymentId);
  assert.equal(reconciled[0]!.data.method, 'particulars');
  assert.match(String(reconciled[0]!.data.statement_line_id), /^stline_/);
  assert.deepEqual(reconciled[0]!.data.amount, { value: '0.01 NZD', formatted: '$0.01' });
});

/** Calls to the feed the service has answered, from its /metrics. */
async function feedCalls(service: Service): Promise<number> {
  const metrics = await fetch(`${service.baseUrl}/metrics`).then((reply) => reply.text());
  let count = 0;
  for (const [, value] of metrics.matchAll(
    /^tono_http_request_duration_seconds_count\{[^}]*route="\/v1\/events\/feed"[^}]*\} (\d+)$/gm,
  ))
    count += Number(value);
  return count;
}

async function settle(ms: number) {
  await new Promise((resolve) => setTimeout(resolve, ms));
}

type FeedCall = { at: number; query: URLSearchParams; status?: number };

/** A proxy in front of the service that notes each call to the feed and can answer one itself. */
async function startFeedProxy(
  target: string,
  answer: (index: number) => { status: number; headers: Record<string, string>; body: string } | null,
) {
  const calls: FeedCall[] = [];
  const server = http.createServer((req, res) => {
    const url = new URL(req.url!, target);
    let call: FeedCall | undefined;
    if (url.pathname === '/v1/events/feed') {
      call = { at: Date.now(), query: url.searchParams };
      const own = answer(calls.push(call) - 1);
      if (own) {
        call.status = own.status;
        res.writeHead(own.status, own.headers).end(own.body);
        return;
      }
    }
    const upstream = http.request(url, { method: req.method, headers: req.headers }, (reply) => {
      if (call) call.status = reply.statusCode;
      res.writeHead(reply.statusCode!, reply.headers);
      reply.pipe(res);
    });
    upstream.on('error', () => res.destroy());
    res.on('close', () => upstream.destroy());
    req.pipe(upstream);
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    calls,
    async close() {
      server.closeAllConnections();
      await new Promise((resolve) => server.close(resolve));
    },
  };
}

async function until(check: () => boolean, what: () => string, timeoutMs = 30_000) {
  const deadline = Date.now() + timeoutMs;
  while (!check()) {
    if (Date.now() > deadline) throw new Error(`gave up waiting: ${what()}`);
    await settle(20);
  }
}

// Each of these waits on real time, so they run side by side.
describe('listen goes easy on the service', { concurrency: true }, () => {
  test('left idle for 30 s, listen holds one long poll open at a time', async (t) => {
    const { store, service, key } = await serviceWithMerchant(t);
    const receiver = await startReceiver();
    t.after(() => receiver.close());
    const listen = startListen(store, ['--forward-to', receiver.url, '--api-key', key, '--base-url', service.baseUrl]);
    t.after(() => listen.child.kill('SIGKILL'));
    await listen.until(/Ctrl-C stops/);
    await settle(30_000);
    const calls = await feedCalls(service);
    t.diagnostic(`${calls} feed calls answered in 30 s idle`);
    // the first call, then one long poll of 25 s answered (the next is still open)
    assert.ok(calls >= 1 && calls <= 3, `${calls} feed calls`);
    assert.equal(receiver.received.length, 0);
    listen.child.kill('SIGTERM');
    assert.equal(await listen.exited, 0);
    assert.match(listen.stdout(), /Stopped after forwarding 0 events\.\n$/);
  });

  test('after a trigger, each event is forwarded exactly once, and then listen goes quiet', async (t) => {
    const { store, service, key } = await serviceWithMerchant(t);
    const receiver = await startReceiver();
    t.after(() => receiver.close());
    const listen = startListen(store, ['--forward-to', receiver.url, '--api-key', key, '--base-url', service.baseUrl]);
    t.after(() => listen.child.kill('SIGKILL'));
    await listen.until(/Ctrl-C stops/);
    const triggered = await runCli(store, [
      'trigger',
      'payment.status_updated',
      '--api-key',
      key,
      '--base-url',
      service.baseUrl,
    ]);
    assert.equal(triggered.status, 0, triggered.stderr);
    const listed = (await fetch(`${service.baseUrl}/v1/events?limit=100`, {
      headers: { authorization: `Bearer ${key}` },
    }).then((r) => r.json())) as { events: Array<{ id: string }> };
    const happened = ids(listed.events).toSorted();
    assert.ok(happened.length >= 2, JSON.stringify(happened));
    await receiver.waitFor(happened.length);
    // long enough for every catch-up read over the look-back to have been made
    await settle(LOOKBACK_MS + 2 * CATCH_UP_GAP_MS + 3_000);
    assert.deepEqual(receiver.received.map((delivery) => delivery.body.id).toSorted(), happened, 'every event, once');
    const calls = await feedCalls(service);
    t.diagnostic(`${happened.length} events forwarded with ${calls} feed calls answered`);
    // the first call, a long poll per arrival, and a few catch-up reads with the short long polls between them
    assert.ok(calls <= 3 * happened.length + 8, `${calls} feed calls for ${happened.length} events`);
    await settle(3_000);
    assert.equal(await feedCalls(service), calls, 'then one long poll, held open');
    assert.equal(receiver.received.length, happened.length);
    listen.child.kill('SIGTERM');
    assert.equal(await listen.exited, 0);
    assert.match(listen.stdout(), new RegExp(`Stopped after forwarding ${happened.length} events\\.\\n$`));
  });

  test('a 429 from the feed is waited out for its Retry-After, with one line', async (t) => {
    const { store, service, key } = await serviceWithMerchant(t);
    const limited = {
      status: 429,
      headers: { 'content-type': 'application/json', 'retry-after': '2' },
      body: JSON.stringify({
        code: 'rate_limited',
        message: 'Too many requests; retry after 2 s',
        params: { retry_after_seconds: 2 },
      }),
    };
    // the first call (where listen starts) and the first long poll after it
    const proxy = await startFeedProxy(service.baseUrl, (index) => (index === 0 || index === 2 ? limited : null));
    t.after(() => proxy.close());
    const receiver = await startReceiver();
    t.after(() => receiver.close());
    const listen = startListen(store, ['--forward-to', receiver.url, '--api-key', key, '--base-url', proxy.url]);
    t.after(() => listen.child.kill('SIGKILL'));
    await until(
      () => proxy.calls.length >= 4,
      () => `${proxy.calls.length} feed calls; listen printed ${listen.stdout()} ${listen.stderr()}`,
    );
    const [limitedStart, start, limitedPoll, poll] = proxy.calls as [FeedCall, FeedCall, FeedCall, FeedCall];
    assert.deepEqual(
      [limitedStart.status, start.status, limitedPoll.query.get('wait'), poll.query.get('wait')],
      [429, 200, '25', '25'],
    );
    // a little less than 2 s: the 429 was noted here a moment before listen read it
    assert.ok(start.at - limitedStart.at >= 1_900, `${start.at - limitedStart.at} ms after the first 429`);
    assert.ok(poll.at - limitedPoll.at >= 1_900, `${poll.at - limitedPoll.at} ms after the second 429`);
    assert.equal(poll.query.get('after'), limitedPoll.query.get('after'), 'the same call again');
    assert.equal(listen.stdout().match(/ answered 429 /g)?.length, 2, listen.stdout());
    assert.match(
      listen.stdout(),
      /^\d{4}-\d\d-\d\d \d\d:\d\d:\d\d {2}http:\/\/127\.0\.0\.1:\d+ answered 429 rate_limited; trying again in 2 s, as it asks\n/m,
    );

    // and it goes on as usual
    assert.equal(
      (await runCli(store, ['trigger', 'request.created', '--api-key', key, '--base-url', service.baseUrl])).status,
      0,
    );
    await receiver.waitFor(1);
    await listen.until(/request\.created\s+event_\w+ {2}-> 204/);
    await settle(1_000);
    assert.ok(proxy.calls.length <= 8, `${proxy.calls.length} feed calls`);
  });
});
