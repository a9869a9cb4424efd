import { test } from 'node:test';
import assert from 'node:assert/strict';
import http from 'node:http';
import type { LookupAddress } from 'node:dns';
import fc from 'fast-check';
import ipaddr from 'ipaddr.js';
import { fetch } from 'undici';
import { isGlobalUnicast } from '../../shared/network.ts';
import { globalOnlyLookup, outboundAgent, type Lookup } from '../../shared/outbound.ts';
import { validateWebhookUrl } from './url-policy.ts';
import { createUndiciSender } from './webhooks.sender.ts';

const publicResolver = async () => ['93.184.216.34'];
const privateResolver = async () => ['93.184.216.34', '10.1.2.3'];

test('only globally routable unicast addresses pass, whatever form they are written in', () => {
  const refused = [
    '127.0.0.1',
    '10.0.0.1',
    '10.0.0.5',
    '172.20.1.1',
    '192.168.1.1',
    '169.254.169.254',
    '0.0.0.0',
    '100.64.1.1',
    '255.255.255.255',
    '224.0.0.1',
    '192.0.2.1',
    '198.51.100.7',
    '203.0.113.9',
    '198.18.0.1',
    '192.0.0.8',
    '240.0.0.1',
    '::1',
    '::',
    'fe80::1',
    'fd00::1',
    'fc00::1',
    'ff02::1',
    '::ffff:127.0.0.1',
    '::ffff:8.8.8.8',
    '::7f00:1',
    '::a00:1',
    '64:ff9b::7f00:1',
    '64:ff9b::808:808',
    '64:ff9b:1::1',
    '2002:7f00:1::',
    '2002:808:808::1',
    '2001::1',
    '2001:db8::1',
    '2001:2::1',
    '100::1',
    'fec0::1',
    '3fff::1',
    '5f00::1',
    'not-an-ip',
    '',
    '1.2.3',
    '[::1]',
  ];
  for (const address of refused) assert.equal(isGlobalUnicast(address), false, address);
  for (const address of [
    '93.184.216.34',
    '8.8.8.8',
    '1.1.1.1',
    '2606:4700::1',
    '2606:4700::1111',
    '2404:6800:4006:80b::200e',
    '[2606:4700::1111]',
  ]) {
    assert.equal(isGlobalUnicast(address), true, address);
  }
  // Any IPv4 address in an IPv6 wrapping (mapped, compatible, NAT64, 6to4) is refused, whatever the IPv4 address.
  fc.assert(
    fc.property(fc.ipV4(), (v4) => {
      const [a, b, c, d] = v4.split('.').map(Number);
      const hex = (x: number, y: number) => ((x << 8) | y).toString(16);
      return [
        `::ffff:${v4}`,
        `::${hex(a, b)}:${hex(c, d)}`,
        `64:ff9b::${hex(a, b)}:${hex(c, d)}`,
        `2002:${hex(a, b)}:${hex(c, d)}::1`,
      ].every((v6) => !isGlobalUnicast(v6));
    }),
  );
  // Any IPv6 address that passes is ordinary unicast inside 2000::/3, never one of the special ranges within it.
  const inGlobalBlock = fc
    .tuple(
      fc.oneof(fc.integer({ min: 0x2000, max: 0x3fff }), fc.constantFrom(0x2001, 0x2002)),
      fc.oneof(fc.integer({ min: 0, max: 0xffff }), fc.constantFrom(0, 0x2, 0xdb8, 0x20)),
      fc.array(fc.integer({ min: 0, max: 0xffff }), { minLength: 6, maxLength: 6 }),
    )
    .map(([first, second, rest]) => [first, second, ...rest].map((part) => part.toString(16)).join(':'));
  fc.assert(
    fc.property(fc.oneof(fc.ipV6(), inGlobalBlock), (v6) => {
      if (!isGlobalUnicast(v6)) return true;
      const parsed = ipaddr.IPv6.parse(v6);
      return (
        parsed.range() === 'unicast' &&
        parsed.match(ipaddr.IPv6.parse('2000::'), 3) &&
        !parsed.match(ipaddr.IPv6.parse('2002::'), 16) &&
        !parsed.match(ipaddr.IPv6.parse('2001::'), 23)
      );
    }),
    { numRuns: 2000 },
  );
});

test('webhook URLs: https anywhere public; http only to this machine with a test key, and only where its reach allows this machine', async () => {
  const strict = { reach: 'global' as const, resolve: publicResolver };
  const laptop = { reach: 'loopback' as const, resolve: publicResolver };
  for (const mode of ['test', 'live'] as const) {
    assert.equal(await validateWebhookUrl('https://example.com/hook', mode, strict), 'https://example.com/hook');
    await assert.rejects(
      validateWebhookUrl('https://internal.example/hook', mode, { reach: 'global', resolve: privateResolver }),
      {
        code: 'bad_request.invalid_param.url',
        params: { field: 'url', host: 'internal.example' },
      },
    );
    for (const url of [
      'https://169.254.169.254/latest',
      'https://127.0.0.1/x',
      'https://[fd00::1]/x',
      'https://[::ffff:127.0.0.1]/x',
      'https://[::7f00:1]/x',
      'https://192.0.2.1/x',
      'https://localhost/x',
    ]) {
      await assert.rejects(
        validateWebhookUrl(url, mode, strict),
        { code: 'bad_request.invalid_param.url' },
        `${mode} ${url}`,
      );
    }
    await assert.rejects(validateWebhookUrl('ftp://example.com/hook', mode, strict), {
      code: 'bad_request.invalid_param.url',
    });
    await assert.rejects(validateWebhookUrl('not a url', mode, strict), { code: 'bad_request.invalid_param.url' });
    await assert.rejects(validateWebhookUrl('https://user:pw@example.com/', mode, strict), {
      code: 'bad_request.invalid_param.url',
    });
    await assert.rejects(
      validateWebhookUrl('https://nowhere.invalid/hook', mode, {
        reach: 'global',
        resolve: async () => {
          throw new Error('ENOTFOUND');
        },
      }),
      { code: 'bad_request.invalid_param.url', message: "url's host nowhere.invalid does not resolve" },
    );
  }
  assert.equal(await validateWebhookUrl('http://127.0.0.1:4000/hook', 'test', laptop), 'http://127.0.0.1:4000/hook');
  assert.equal(await validateWebhookUrl('http://localhost:4000/hook', 'test', laptop), 'http://localhost:4000/hook');
  assert.equal(await validateWebhookUrl('http://[::1]:4000/hook', 'test', laptop), 'http://[::1]:4000/hook');
  await assert.rejects(validateWebhookUrl('http://127.0.0.1:4000/hook', 'test', strict), {
    code: 'bad_request.invalid_param.url',
  });
  await assert.rejects(validateWebhookUrl('http://example.com/hook', 'test', laptop), {
    code: 'bad_request.invalid_param.url',
  });
  await assert.rejects(validateWebhookUrl('http://localhost:4000/hook', 'live', laptop), {
    code: 'bad_request.invalid_param.url',
  });
  // this machine's loopback is not the rest of its network
  await assert.rejects(
    validateWebhookUrl('https://internal.example/hook', 'test', { reach: 'loopback', resolve: privateResolver }),
    { code: 'bad_request.invalid_param.url' },
  );
  for (const url of [
    'https://10.0.0.8/x',
    'https://169.254.169.254/latest',
    'https://[fd00::1]/x',
    'https://192.168.1.1/x',
  ]) {
    await assert.rejects(validateWebhookUrl(url, 'test', laptop), { code: 'bad_request.invalid_param.url' }, url);
  }
  assert.equal(
    await validateWebhookUrl('https://internal.example/hook', 'live', { reach: 'any', resolve: privateResolver }),
    'https://internal.example/hook',
  );
});

test('the address actually connected to is checked: a name that resolves to this machine, and an IP literal, are refused at send time', async (t) => {
  let hits = 0;
  const server = http.createServer((_req, res) => {
    hits++;
    res.end('ok');
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  t.after(() => server.close());
  const port = (server.address() as { port: number }).port;
  const sender = createUndiciSender({ reach: { live: 'global', test: 'global' }, connectionsPerOrigin: 2 });
  t.after(() => sender.close());
  for (const url of [
    `http://localhost:${port}/hook`,
    `http://127.0.0.1:${port}/hook`,
    `http://[::ffff:127.0.0.1]:${port}/hook`,
  ]) {
    for (const live of [true, false]) {
      const result = await sender.send({ url, live }, '{}', { 'content-type': 'application/json' }, 2_000);
      assert.equal(result.statusCode, null, url);
      assert.match(result.error ?? '', /not a globally routable address/, url);
    }
  }
  assert.equal(hits, 0, 'nothing reached the private server');
  const open = createUndiciSender({ reach: { live: 'any', test: 'any' }, connectionsPerOrigin: 2 });
  t.after(() => open.close());
  assert.equal(
    (await open.send({ url: `http://localhost:${port}/hook`, live: false }, '{}', {}, 2_000)).statusCode,
    200,
  );
  await new Promise<void>((resolve, reject) =>
    globalOnlyLookup('localhost', {}, (err) =>
      err && /not a globally routable/.test(err.message) ? resolve() : reject(new Error('lookup passed')),
    ),
  );
});

test('DNS rebinding: a name that was public when checked and points at this machine when connected to is refused, for webhooks and images', async (t) => {
  let hits = 0;
  const server = http.createServer((_req, res) => {
    hits++;
    res.end('ok');
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  t.after(() => server.close());
  const port = (server.address() as { port: number }).port;
  const name = 'hooks.rebind.test';

  // When the endpoint is created, the name resolves to a public address, so it is accepted.
  for (const mode of ['test', 'live'] as const) {
    assert.equal(
      await validateWebhookUrl(`https://${name}/hook`, mode, { reach: 'global', resolve: publicResolver }),
      `https://${name}/hook`,
    );
  }
  // When a connection is made, the same name answers with this machine: alone, after a public
  // address, or written as IPv4-mapped IPv6.
  const answers: LookupAddress[][] = [
    [{ address: '127.0.0.1', family: 4 }],
    [
      { address: '93.184.216.34', family: 4 },
      { address: '127.0.0.1', family: 4 },
    ],
    [{ address: '::ffff:127.0.0.1', family: 6 }],
  ];
  for (const answer of answers) {
    const asked: string[] = [];
    const rebound: Lookup = (hostname, options, callback) => {
      asked.push(hostname);
      if (options.all) callback(null, answer);
      else callback(null, answer[0].address, answer[0].family);
    };
    const sender = createUndiciSender({
      reach: { live: 'global', test: 'global' },
      connectionsPerOrigin: 2,
      lookup: rebound,
    });
    t.after(() => sender.close());
    for (const live of [true, false]) {
      const result = await sender.send(
        { url: `http://${name}:${port}/hook`, live },
        '{}',
        { 'content-type': 'application/json' },
        2_000,
      );
      assert.equal(result.statusCode, null, JSON.stringify(answer));
      assert.match(
        result.error ?? '',
        /hooks\.rebind\.test is (127\.0\.0\.1|::ffff:127\.0\.0\.1), which is not a globally routable address/,
        JSON.stringify(answer),
      );
    }
    // The agent that fetches merchant images connects the same way.
    const agent = outboundAgent({ reach: 'global', lookup: rebound });
    t.after(() => agent.close());
    await assert.rejects(fetch(`http://${name}:${port}/logo.png`, { dispatcher: agent }), (error: any) =>
      /not a globally routable address/.test(error?.cause?.message),
    );
    assert.ok(asked.length >= 3, "the check ran on the answer of the connection's own lookup");
  }
  assert.equal(hits, 0, 'nothing reached this machine');

  // The same name and answer reach the server where non-global targets are allowed: the policy, not the name, refused it.
  const toHere: Lookup = (_hostname, options, callback) =>
    options.all ? callback(null, [{ address: '127.0.0.1', family: 4 }]) : callback(null, '127.0.0.1', 4);
  const open = createUndiciSender({ reach: { live: 'any', test: 'any' }, connectionsPerOrigin: 2, lookup: toHere });
  t.after(() => open.close());
  assert.equal((await open.send({ url: `http://${name}:${port}/hook`, live: true }, '{}', {}, 2_000)).statusCode, 200);
  assert.equal(hits, 1);
});
