import { test } from 'node:test';
import assert from 'node:assert/strict';
import fc from 'fast-check';
import pino, { type Logger } from 'pino';
import { loggerRedactPaths } from '../app.ts';
import { lazyRequestLogger } from './request-logger.ts';

type Op =
  | {
      kind: 'line';
      level: 'fatal' | 'error' | 'warn' | 'info' | 'debug' | 'trace';
      fields: Record<string, string> | null;
      msg: string;
    }
  | { kind: 'bind'; fields: Record<string, string> }
  | { kind: 'child'; fields: Record<string, string>; msg: string };

const key = fc.constantFrom('merchant_id', 'mode', 'token', 'route', 'reqId');
const fields = fc.dictionary(key, fc.string({ maxLength: 8 }), { maxKeys: 3, noNullPrototype: true });
const op: fc.Arbitrary<Op> = fc.oneof(
  fc.record({
    kind: fc.constant('line' as const),
    level: fc.constantFrom('fatal', 'error', 'warn', 'info', 'debug', 'trace'),
    fields: fc.option(fields),
    msg: fc.string({ maxLength: 8 }),
  }),
  fc.record({ kind: fc.constant('bind' as const), fields }),
  fc.record({ kind: fc.constant('child' as const), fields, msg: fc.string({ maxLength: 8 }) }),
);

/** The service's logger at `level` with its redaction, writing into `lines` without their time. */
function serviceLogger(level: string, lines: string[]): Logger {
  return pino(
    { level, timestamp: false, redact: { paths: loggerRedactPaths, censor: '[redacted]' } },
    { write: (line: string) => lines.push(line) },
  );
}

function play(log: Logger, ops: Op[]): void {
  for (const step of ops) {
    if (step.kind === 'bind') log.setBindings(step.fields);
    else if (step.kind === 'child') log.child(step.fields).info(step.msg);
    else if (step.fields) log[step.level](step.fields, step.msg);
    else log[step.level](step.msg);
  }
}

test("a call's lazily made logger writes the lines an eager child writes, bindings and redaction included", () => {
  fc.assert(
    fc.property(fc.constantFrom('trace', 'info', 'error', 'silent'), fc.array(op, { maxLength: 8 }), (level, ops) => {
      const eager: string[] = [];
      const lazy: string[] = [];
      const bindings = { reqId: 'req-1' };
      play(serviceLogger(level, eager).child(bindings), ops);
      const parent = serviceLogger(level, lazy);
      play(lazyRequestLogger.call(null as never, parent, bindings, {}, null as never) as unknown as Logger, ops);
      assert.deepEqual(lazy, eager);
    }),
    { numRuns: 500 },
  );
});

test("a call's logger answers for its level and bindings before its first line", () => {
  const lines: string[] = [];
  const log = lazyRequestLogger.call(
    null as never,
    serviceLogger('info', lines),
    { reqId: 'r' },
    {},
    null as never,
  ) as unknown as Logger;
  log.setBindings({ merchant_id: 'm' });
  assert.equal(log.level, 'info');
  assert.deepEqual([log.isLevelEnabled('info'), log.isLevelEnabled('debug')], [true, false]);
  assert.deepEqual(log.bindings(), { reqId: 'r', merchant_id: 'm' });
  log.debug('not written');
  assert.deepEqual(lines, []);
  log.level = 'debug';
  log.debug('written');
  assert.equal(lines.length, 1);
  assert.deepEqual(JSON.parse(lines[0]!), {
    level: 20,
    pid: process.pid,
    hostname: JSON.parse(lines[0]!).hostname,
    reqId: 'r',
    merchant_id: 'm',
    msg: 'written',
  });
});

test('a route with its own log level gets an eager child at that level', () => {
  const lines: string[] = [];
  const log = lazyRequestLogger.call(
    null as never,
    serviceLogger('info', lines),
    { reqId: 'r' },
    { level: 'warn' },
    null as never,
  ) as unknown as Logger;
  log.info('below the route level');
  log.warn('at it');
  assert.deepEqual(
    lines.map((line) => JSON.parse(line).msg),
    ['at it'],
  );
});
