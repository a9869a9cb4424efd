import { test } from 'node:test';
import assert from 'node:assert/strict';
import fc from 'fast-check';
import { withoutPorts } from './forwarded-for.ts';

test('a port a proxy appended is taken off each entry; addresses without one, and what is no address, are kept', () => {
  assert.equal(withoutPorts('203.0.113.5:4711'), '203.0.113.5');
  assert.equal(withoutPorts('[2001:db8::1]:4711'), '2001:db8::1');
  assert.equal(withoutPorts('[2001:db8::1]'), '2001:db8::1');
  assert.equal(withoutPorts('198.51.100.7, 203.0.113.5:80'), '198.51.100.7, 203.0.113.5');
  assert.equal(withoutPorts('2001:db8::1'), '2001:db8::1', 'a bare IPv6 address is no address with a port');
  assert.equal(withoutPorts('::ffff:203.0.113.5'), '::ffff:203.0.113.5');
  assert.equal(withoutPorts('unknown, 999.1.1.1:80'), 'unknown, 999.1.1.1:80');
});

test('every IPv4 or IPv6 address with any port reads as the address', () => {
  const port = fc.integer({ min: 0, max: 65535 });
  fc.assert(fc.property(fc.ipV4(), port, (address, p) => withoutPorts(`${address}:${p}`) === address));
  fc.assert(fc.property(fc.ipV6(), port, (address, p) => withoutPorts(`[${address}]:${p}`) === address));
});
