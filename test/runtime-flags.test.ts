import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { envOfStart, runtimeFlagsOfStart, serviceNodeFlags } from '../bench/process.ts';

// The service and the sandbox bank run without V8's allocation-site pretenuring (docs/performance.md,
// "Pretenuring"), and the bench measures them, and its baselines, with the same flags.

const root = path.resolve(import.meta.dirname, '..');
const FLAG = '--no-allocation-site-pretenuring';

test('npm start, the sandbox bank and the bench run Node without allocation-site pretenuring, and this Node accepts the flag', () => {
  const scripts = JSON.parse(fs.readFileSync(path.join(root, 'package.json'), 'utf8')).scripts as Record<
    string,
    string
  >;
  assert.match(scripts.start!, / node --no-allocation-site-pretenuring src\/main\.ts$/);
  assert.match(scripts['sandbox-bank']!, / node --no-allocation-site-pretenuring src\/sandbox-bank\/main\.ts$/);
  assert.match(scripts.bench!, /^node --no-allocation-site-pretenuring bench\/run\.ts$/);
  assert.ok(serviceNodeFlags().includes(FLAG), 'the bench starts the service as npm start does');
  assert.deepEqual(
    runtimeFlagsOfStart(),
    [FLAG],
    "the baselines' servers get the same V8 flag, not the service's heap caps",
  );
  // A Node that no longer knows the flag would refuse to start at all (exit 9).
  const ran = spawnSync(process.execPath, [FLAG, '-e', 'process.stdout.write("ok")'], { encoding: 'utf8' });
  assert.equal(ran.status, 0, ran.stderr);
  assert.equal(ran.stdout, 'ok');
});

test('npm start caps glibc at two malloc arenas unless MALLOC_ARENA_MAX says otherwise, and the bench starts its servers the same way', () => {
  const scripts = JSON.parse(fs.readFileSync(path.join(root, 'package.json'), 'utf8')).scripts as Record<
    string,
    string
  >;
  // The script's own environment prefix, run by sh as npm runs it, in front of a node that prints what it got.
  const prefix = scripts.start!.slice(0, scripts.start!.indexOf(' node '));
  const arenasOf = (env: NodeJS.ProcessEnv) => {
    const ran = spawnSync(
      'sh',
      ['-c', `${prefix} node -e 'process.stdout.write(String(process.env.MALLOC_ARENA_MAX))'`],
      { cwd: root, encoding: 'utf8', env },
    );
    assert.equal(ran.status, 0, ran.stderr);
    return ran.stdout;
  };
  const { MALLOC_ARENA_MAX: _unset, ...withoutArenas } = process.env;
  assert.equal(arenasOf(withoutArenas), '2');
  assert.equal(arenasOf({ ...withoutArenas, MALLOC_ARENA_MAX: '8' }), '8');
  if (process.env.MALLOC_ARENA_MAX === undefined) assert.equal(envOfStart().MALLOC_ARENA_MAX, '2');
  assert.equal(
    envOfStart().NODE_COMPILE_CACHE,
    process.env.NODE_COMPILE_CACHE ?? path.join(root, 'node_modules/.cache/tono-compile'),
  );
});
