import { test } from 'node:test';
import assert from 'node:assert/strict';
import fc from 'fast-check';
import { parseEmbedOrigin } from './checkout.views.ts';

// The embed origin goes into the page's CSP (`frame-ancestors`) and is the target of the result's
// postMessage, so only one exact, canonical origin of one named host may pass.

test('an embed origin is an https origin of a DNS host name, with an optional port', () => {
  for (const good of [
    'https://shop.example',
    'https://shop.example:8443',
    'https://www.my-shop.co.nz',
    'https://xn--kwhai-coffee-z7b.nz',
    'https://192.168.1.20:8443',
  ])
    assert.equal(parseEmbedOrigin(good), good, good);
});

test('plain http only for a page on this computer', () => {
  for (const local of ['http://localhost', 'http://localhost:5173', 'http://127.0.0.1:3000'])
    assert.equal(parseEmbedOrigin(local), local, local);
  for (const remote of ['http://shop.example', 'http://shop.example:8080', 'http://192.168.1.20'])
    assert.equal(parseEmbedOrigin(remote), null, remote);
});

test('the service itself may frame its page (the embed demo), whatever its own origin', () => {
  for (const own of ['http://tono.lan:3000', 'http://0.0.0.0:3000', 'http://[::1]:3000']) {
    assert.equal(parseEmbedOrigin(own, own), own, own);
    assert.equal(parseEmbedOrigin(own), null, own);
  }
  assert.equal(parseEmbedOrigin('https://*.com', 'https://pay.example'), null);
});

test('wildcards, CSP punctuation and anything not one canonical origin are refused', () => {
  for (const bad of [
    'https://*.com',
    'https://*',
    'https://a;b.com',
    "https://a'b.com",
    'https://a"b.com',
    'https://a,b.com',
    'https://a_b.com',
    'https://-shop.example',
    'https://shop-.example',
    'https://shop..example',
    'https://shop.example.',
    'https://[::1]:8443',
    'https://SHOP.example',
    'https://shop.example:443',
    'https://shop.example/',
    'https://shop.example/path',
    'https://user@shop.example',
    'ftp://shop.example',
    'javascript:alert(1)',
    "https://a.example 'unsafe-inline'",
    'null',
    '',
    `https://${'a'.repeat(64)}.example`,
    undefined,
    42,
    ['https://shop.example'],
  ])
    assert.equal(parseEmbedOrigin(bad), null, String(bad));
});

test('whatever is accepted is one CSP source of letters, digits, hyphens and dots', () => {
  const afterScheme = fc.stringMatching(/^[a-zA-Z0-9.*;'", _@:/[\]%-]{0,24}$/);
  fc.assert(
    fc.property(fc.constantFrom('https://', 'http://'), afterScheme, (scheme, rest) => {
      const origin = parseEmbedOrigin(scheme + rest);
      if (origin !== null) assert.match(origin, /^https?:\/\/[a-z0-9.-]+(:[0-9]{1,5})?$/);
    }),
  );
});
