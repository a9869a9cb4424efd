import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import path from 'node:path';
import fc from 'fast-check';
import { ulid } from 'ulid';
import { childEnv, merchantByCli, processStore, runCli, type Service, startService, type Store } from '../../test/process.ts';
import { startReceiver } from '../modules/webhooks/receiver.test-support.ts';
import { verifyStandardWebhook, verifyWebhookSignature } from '../modules/webhooks/verify.js';
import { eventIdFloor, eventIdTime, LOOKBACK_MS, SeenEvents } from './commands/listen.ts';
import { TRIGGERABLE, triggerEvent } from './commands/trigger.ts';
import { createTonoClient } from '@tono/client';

// `listen` and `trigger` as a developer runs them: real CLI processes against a service on a real
// port, forwarding to a real receiver.

const root = path.resolve(import.meta.dirname, '../..');

test('event id floors sort with real ids and keep their time', () => {
  fc.assert(fc.property(fc.integer({ min: 1, max: 2 ** 48 - 10_001 }), fc.integer({ min: 1, max: 10_000 }), (at, later) => {
    const floor = eventIdFloor(at);
    assert.match(floor, /^event_[0-9A-HJKMNP-TV-Z]{26}$/);
    assert.equal(eventIdTime(floor), at);
    const real = `event_${ulid(at)}`;
    assert.ok(floor <= real && eventIdTime(real) === at);
    assert.ok(eventIdFloor(at + later) > real, 'a later floor sorts after every id of an earlier moment');
  }));
});

test('listen remembers what it forwarded and looks back a little, never before its start', () => {
  const seen = new SeenEvents();
  const start = `event_${ulid(1_000_000)}`;
  assert.equal(seen.cursor(start), start);
  const id = `event_${ulid(2_000_000)}`;
  assert.equal(seen.add(id), true);
  assert.equal(seen.add(id), false);
  assert.equal(seen.cursor(start), eventIdFloor(2_000_000 - LOOKBACK_MS));
  const late = `event_${ulid(1_000_100)}`;
  assert.equal(new SeenEvents().cursor(late), late);
  const early = new SeenEvents();
  early.add(`event_${ulid(1_000_200)}`);
  assert.equal(early.cursor(late), late, 'never before the start');
});

function startListen(store: Store, args: string[]) {
  const child = spawn(process.execPath, ['src/cli/main.ts', 'listen', ...args], { cwd: root, env: childEnv(store.env), stdio: ['ignore', 'pipe', 'pipe'] });
  let stdout = '';
  let stderr = '';
  child.stdout.setEncoding('utf8').on('data', (chunk) => (stdout += chunk));
  child.stderr.setEncoding('utf8').on('data', (chunk) => (stderr += chunk));
  const exited = new Promise<number | null>((resolve) => child.once('exit', (code) => resolve(code)));
  const until = async (pattern: RegExp) => {
    const deadline = Date.now() + 30_000;
    while (!pattern.test(stdout)) {
      if (Date.now() > deadline || child.exitCode !== null) throw new Error(`listen printed ${JSON.stringify(stdout)} ${stderr}`);
      await new Promise((resolve) => setTimeout(resolve, 20));
    }
    return stdout.match(pattern)!;
  };
  return { child, exited, until, stdout: () => stdout, stderr: () => stderr };
}

async function serviceWithMerchant(t: Parameters<typeof processStore>[0]): Promise<{ store: Store; service: Service; key: string; liveKey: string }> {
  const store = await processStore(t);
  const service = await startService(t, store);
  const merchant = await merchantByCli(store, 'Laptop Shop', 'dev@laptop.example');
  return { store, service, key: merchant.test_key, liveKey: merchant.live_key };
}

test('listen forwards the chosen test events, re-signed with the secret it prints, one line each', async (t) => {
  const { store, service, key } = await serviceWithMerchant(t);
  // an event from before listen starts is not forwarded
  assert.equal((await runCli(store, ['trigger', 'request.created', '--api-key', key, '--base-url', service.baseUrl])).status, 0);
  const receiver = await startReceiver((_request, index) => ({ status: index === 0 ? 204 : 500 }));
  t.after(() => receiver.close());
  const listen = startListen(store, ['--forward-to', receiver.url, '--api-key', key, '--base-url', service.baseUrl, '--events', 'request.created,payment.status_updated']);
  t.after(() => listen.child.kill('SIGKILL'));
  const [, secret] = await listen.until(/Webhook signing secret for this session: (\S+)/);

  const triggered = await runCli(store, ['trigger', 'payment.status_updated', '--api-key', key, '--base-url', service.baseUrl]);
  assert.equal(triggered.status, 0, triggered.stderr);
  assert.match(triggered.stdout, /created request request_\w+\npaid it at the sandbox bank: payment payment_\w+ successful\nTriggered payment.status_updated.\n$/);

  const received = await receiver.waitFor(2);
  assert.deepEqual(received.map((r) => r.body.type), ['request.created', 'payment.status_updated']);
  for (const delivery of received) {
    assert.equal(verifyWebhookSignature(delivery.raw, delivery.headers['x-service-signature'] as string, secret!), true);
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
    [['listen', '--forward-to', 'http://localhost:4242/hooks', '--api-key', liveKey, '--base-url', service.baseUrl], /^error: --api-key must be a test key \(sk_test_…\)/],
    [['listen', '--api-key', key, '--base-url', service.baseUrl], /^error: listen needs --forward-to URL/],
    [['listen', '--forward-to', 'http://localhost:4242', '--api-key', key, '--events', 'payment.teleported', '--base-url', service.baseUrl], /^error: --events must be comma-separated event types; "payment.teleported" is not one/],
    [['listen', '--forward-to', 'http://localhost:4242', '--api-key', 'sk_test_nope', '--base-url', service.baseUrl], /^error: http:\/\/127\.0\.0\.1:\d+ refused the key: /],
    [['trigger', 'payment.teleported', '--api-key', key, '--base-url', service.baseUrl], /^error: cannot trigger "payment.teleported"; these can be: request.created/],
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

test('each event type trigger offers happens through the API calls it makes', async (t) => {
  // in this process, against a service on a real port: the CLI around it is tested above
  const { service, key } = await serviceWithMerchant(t);
  const tono = createTonoClient({ apiKey: key, baseUrl: service.baseUrl });
  for (const type of TRIGGERABLE) {
    const steps = await triggerEvent(tono, type);
    assert.ok(steps.length > 0, type);
    const found = await fetch(`${service.baseUrl}/v1/events?type=${type}&limit=1`, { headers: { authorization: `Bearer ${key}` } }).then((r) => r.json()) as { events: unknown[] };
    assert.equal(found.events.length, 1, `${type} happened`);
  }
});
