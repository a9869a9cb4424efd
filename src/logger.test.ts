import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import fc from 'fast-check';
import { Writable } from 'node:stream';
import pino from 'pino';
import { buildTestApp } from '../test/helpers.ts';
import { enqueue } from './jobs/queue.ts';
import { Worker } from './jobs/worker.ts';
import { jsonLines, logFormatFor, secretFreeLog } from './logger.ts';
import { startReceiver } from '../test/support/webhook-receiver.ts';
import { createUndiciSender } from './modules/webhooks/webhooks.sender.ts';
import { loggerOptionsFor } from './runtime.ts';
import { redactedFieldNames } from './app.ts';

// The kinds this test makes up.
declare module './jobs/queue.ts' {
  interface JobPayloads {
    'test.fine': Record<string, never>;
    'test.broken': Record<string, never>;
  }
}

function captured() {
  const lines: Array<Record<string, any>> = [];
  const stream = new Writable({
    write(chunk, _encoding, done) {
      for (const line of String(chunk).split('\n').filter(Boolean)) lines.push(JSON.parse(line));
      done();
    },
  });
  return { lines, log: pino({ level: 'debug' }, stream) };
}

async function until(check: () => boolean, what: string) {
  const deadline = Date.now() + 20_000;
  while (!check()) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((resolve) => setTimeout(resolve, 10));
  }
}

test('jsonLines writes every line, byte for byte and in order, whatever its characters and length', () => {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'tono-lines-'));
  try {
    // Short and long lines (past the 4,096 bytes of one write), in any script, emoji included.
    const line = fc
      .oneof(
        fc.string({ unit: 'grapheme', maxLength: 400 }),
        fc.string({ unit: 'grapheme-composite', minLength: 1200, maxLength: 2000 }),
      )
      .map((text) => `${JSON.stringify({ text })}\n`);
    let run = 0;
    fc.assert(
      fc.property(fc.array(line, { maxLength: 40 }), (lines) => {
        const file = path.join(dir, `${run++}.log`);
        const stream = jsonLines(file);
        for (const text of lines) stream.write(text);
        stream.flushSync();
        assert.ok(fs.readFileSync(file).equals(Buffer.from(lines.join(''))));
      }),
      { numRuns: 60 },
    );
  } finally {
    fs.rmSync(dir, { recursive: true, force: true });
  }
});

test('pretty only when stdout is a terminal, unless LOG_FORMAT says otherwise', () => {
  assert.equal(logFormatFor(true), 'pretty');
  assert.equal(logFormatFor(false), 'json');
  assert.equal(logFormatFor(true, 'json'), 'json');
  assert.equal(logFormatFor(false, 'pretty'), 'pretty');
  assert.equal(logFormatFor(true, null), 'pretty');
});

test('every field named in docs/security.md is redacted at the top level of a line and one and two levels down', () => {
  const written: string[] = [];
  const log = pino(loggerOptionsFor({ logLevel: 'info' }), { write: (line: string) => written.push(line) });
  for (const name of redactedFieldNames) {
    const value = `SECRET-${name}`;
    log.info({ [name]: value }, 'top level');
    log.info({ call: { [name]: value } }, 'one level down');
    log.info({ err: { body: { [name]: value } } }, 'two levels down');
    log.info({ req: { headers: { authorization: `Bearer ${value}`, cookie: `s=${value}` } } }, 'headers');
    log.info({ headers: { authorization: `Bearer ${value}`, cookie: `s=${value}` } }, 'headers');
  }
  assert.equal(written.length, redactedFieldNames.length * 5);
  for (const line of written) assert.doesNotMatch(line, /SECRET-/, line);
  assert.match(written[0]!, /"token":"\[redacted\]"/);

  // The list is the one the security page gives.
  const logs = fs.readFileSync(new URL('../docs/security.md', import.meta.url), 'utf8').split('## Logs')[1]!;
  const named = /any field\s+named ([^)]*?),?\s+at the top level/.exec(logs)?.[1];
  assert.ok(named, 'docs/security.md names the redacted fields');
  const documented = [...named.matchAll(/`([a-z_]+)`/g)].map((match) => match[1]);
  assert.deepEqual(documented.toSorted(), redactedFieldNames.toSorted());
});

test('a process whose stdout is a pipe logs JSON lines; LOG_FORMAT=pretty gives readable lines', () => {
  const script =
    "import { loadConfig } from './src/config.ts'; import { makeLogger } from './src/runtime.ts'; makeLogger(loadConfig()).info({ job_id: 'job_1' }, 'hello there');";
  const run = (env: Record<string, string>) =>
    spawnSync(process.execPath, ['--input-type=module', '-e', script], {
      encoding: 'utf8',
      env: { PATH: process.env.PATH, ...env },
    });
  const json = run({});
  assert.equal(json.status, 0, json.stderr);
  const line = JSON.parse(json.stdout.trim());
  assert.deepEqual([line.msg, line.job_id, line.level], ['hello there', 'job_1', 30]);

  const pretty = run({ LOG_FORMAT: 'pretty' });
  assert.equal(pretty.status, 0, pretty.stderr);
  assert.match(pretty.stdout, /INFO.*hello there/);
  assert.match(pretty.stdout, /job_id: "job_1"/);
  assert.throws(() => JSON.parse(pretty.stdout.trim()));
});

test('a job run logs a debug line, a failed attempt a warning, and one that gives up an error', async (t) => {
  const app = await buildTestApp(t);
  const { lines, log } = captured();
  const worker = new Worker({
    db: app.deps.db,
    log,
    pollMs: 20,
    kinds: new Map([
      ['test.fine', { handler: async () => {} }],
      [
        'test.broken',
        {
          handler: async () => {
            throw new Error('the bank is down');
          },
          maxAttempts: 2,
          backoff: { baseMs: 50, maxMs: 50, jitter: false },
        },
      ],
    ]),
  });
  const now = Date.now();
  await enqueue(app.deps.db, { kind: 'test.fine', runAt: now, payload: {} }, now);
  await enqueue(app.deps.db, { kind: 'test.broken', runAt: now, payload: {} }, now);
  worker.start();
  t.after(() => worker.stop());
  // the broken job is retried once, then gives up
  await until(() => lines.some((l) => l.msg === 'job failed' && l.gave_up === true), 'the broken job to give up');
  const ran = lines.filter((l) => l.msg === 'job ran');
  assert.deepEqual(
    ran.map((l) => [l.level, l.job_kind, l.outcome]),
    [[20, 'test.fine', 'done']],
  );
  const failed = lines.filter((l) => l.msg === 'job failed');
  assert.deepEqual(
    failed.map((l) => [l.level, l.job_kind, l.attempts, l.gave_up, l.err.message]),
    [
      [40, 'test.broken', 1, false, 'the bank is down'],
      [50, 'test.broken', 2, true, 'the bank is down'],
    ],
  );
});

test('each webhook attempt logs a debug line with the event, attempt, origin and reply, never the path or body', async (t) => {
  const receiver = await startReceiver((_request, index) => ({ status: index === 0 ? 503 : 204 }));
  t.after(() => receiver.close());
  const { lines, log } = captured();
  const sender = createUndiciSender({ reach: { live: 'any', test: 'any' }, connectionsPerOrigin: 2, log });
  t.after(() => sender.close());
  const url = `${receiver.url}/secret-path-token`;
  for (const attempt of [1, 2]) {
    await sender.send(
      { url, live: false },
      '{"id":"event_1"}',
      { 'x-service-event-id': 'event_1', 'x-service-delivery-attempt': String(attempt) },
      5_000,
    );
  }
  const attempts = lines.filter((l) => l.msg === 'webhook attempt');
  assert.deepEqual(
    attempts.map((l) => [l.level, l.event_id, l.attempt, l.origin, l.status_code, l.error]),
    [
      [20, 'event_1', 1, new URL(receiver.url).origin, 503, null],
      [20, 'event_1', 2, new URL(receiver.url).origin, 204, null],
    ],
  );
  assert.equal(JSON.stringify(lines).includes('secret-path-token'), false);
});

// The lines of a turn go out in one synchronous write of at most PIPE_BUF bytes (jsonLines), so
// they cannot interleave or reorder, and the last turn's are written at exit. pino's asynchronous
// destination, tried for speed, reordered lines here when the pipe was full; without the PIPE_BUF
// cap, two processes' batches interleaved (docs/performance.md, Logging at info).
test('JSON lines of two processes sharing a pipe arrive whole, all and in order, also when each exits straight after its last line', () => {
  const perProcess = 3_000;
  const writer = (name: string) =>
    `node --input-type=module -e "import { createLogger } from './src/logger.ts'; const log = createLogger({ level: 'info' }, 'json'); for (let i = 0; i < ${perProcess}; i++) { log.info({ writer: '${name}', i, padding: 'x'.repeat(300) }, 'line'); if (i % 100 === 0) await new Promise((r) => setImmediate(r)); } process.exit(0);"`;
  const run = spawnSync('sh', ['-c', `${writer('a')} & ${writer('b')} & wait`], {
    encoding: 'utf8',
    maxBuffer: 64 * 1024 * 1024,
    env: { PATH: `${path.dirname(process.execPath)}:${process.env.PATH}` },
  });
  assert.equal(run.status, 0, run.stderr);
  const lines = run.stdout
    .split('\n')
    .filter(Boolean)
    .map((line) => JSON.parse(line) as { writer: string; i: number });
  for (const name of ['a', 'b']) {
    assert.deepEqual(
      lines.filter((line) => line.writer === name).map((line) => line.i),
      Array.from({ length: perProcess }, (_, i) => i),
      `every line of ${name}, in order`,
    );
  }
});

test('secretFreeLog writes the info lines its logger writes, byte for byte but the time; warnings keep the redaction', () => {
  const options = { level: 'info', redact: { paths: ['*.token'], censor: '[redacted]' } };
  const value = fc.oneof(fc.string({ unit: 'binary' }), fc.integer(), fc.boolean(), fc.constant(null));
  fc.assert(
    fc.property(
      fc.dictionary(
        fc.string({ unit: 'binary' }).filter((key) => key !== 'msg' && key !== '__proto__'),
        value,
      ),
      fc.string({ unit: 'binary' }),
      (fields, msg) => {
        const fast: string[] = [];
        const slow: string[] = [];
        secretFreeLog(pino(options, { write: (line: string) => fast.push(line) }).child({ component: 'banks' })).info(
          fields,
          msg,
        );
        pino(options, { write: (line: string) => slow.push(line) })
          .child({ component: 'banks' })
          .info(fields, msg);
        assert.equal(fast.length, 1);
        assert.equal(fast[0]!.replace(/"time":\d+,/, ''), slow[0]!.replace(/"time":\d+,/, ''));
      },
    ),
    { numRuns: 500 },
  );
  const lines: string[] = [];
  const log = secretFreeLog(pino(options, { write: (line: string) => lines.push(line) }));
  log.warn({ call: { token: 'tok_secret' } }, 'bank call failed');
  assert.equal(JSON.parse(lines[0]!).call.token, '[redacted]');
  const quiet = secretFreeLog(pino({ ...options, level: 'warn' }, { write: (line: string) => lines.push(line) }));
  quiet.info({ a: 1 }, 'not written');
  assert.equal(lines.length, 1);
});
