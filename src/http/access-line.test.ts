import { test } from 'node:test';
import assert from 'node:assert/strict';
import fc from 'fast-check';
import pino from 'pino';
import { loggerOptionsFor } from '../runtime.ts';
import { accessLineWriter, type AccessFields } from './access-line.ts';

const withoutTime = (line: string) => line.replace(/"time":\d+,/, '');

function serviceLogger(level: 'info' | 'warn' | 'debug', lines: string[]) {
  return pino(loggerOptionsFor({ logLevel: level }), { write: (line: string) => lines.push(line) });
}

const fields: fc.Arbitrary<AccessFields> = fc.record({
  reqId: fc.string(),
  merchant_id: fc.option(fc.string({ unit: 'grapheme' }), { nil: undefined }),
  mode: fc.option(fc.constantFrom('test', 'live'), { nil: undefined }),
  // Whatever a client puts in the request line, quotes, control characters and lone surrogates included.
  req: fc.record({
    method: fc.constantFrom('GET', 'POST', 'DELETE'),
    url: fc.string({ unit: 'binary' }),
    remoteAddress: fc.constantFrom('127.0.0.1', '::1', '2001:db8::7'),
  }),
  res: fc.record({ statusCode: fc.integer({ min: 100, max: 599 }) }),
  responseTime: fc.double({ min: 0, max: 60_000, noNaN: true }),
  msg: fc.constant('request completed'),
});

test("an access line is the line the service's logger writes for its fields at info, byte for byte but the time", () => {
  fc.assert(
    fc.property(fields, (line) => {
      const written: string[] = [];
      const expected: string[] = [];
      accessLineWriter(serviceLogger('info', written))!(line);
      const { msg, ...rest } = line;
      // pino with the service's options, minus the redaction the access line goes without.
      pino({ level: 'info' }, { write: (text: string) => expected.push(text) }).info(rest, msg);
      assert.equal(written.length, 1);
      assert.equal(withoutTime(written[0]!), withoutTime(expected[0]!));
      assert.ok(Math.abs(JSON.parse(written[0]!).time - Date.now()) < 5_000);
    }),
    { numRuns: 1_000 },
  );
});

test('no access lines below info; at debug they are written', () => {
  assert.equal(accessLineWriter(serviceLogger('warn', [])), null);
  const lines: string[] = [];
  accessLineWriter(serviceLogger('debug', lines))!({
    reqId: 'r',
    req: { method: 'GET', url: '/healthz', remoteAddress: '::1' },
    res: { statusCode: 200 },
    responseTime: 0.5,
    msg: 'request completed',
  });
  assert.equal(JSON.parse(lines[0]!).level, 30);
});
